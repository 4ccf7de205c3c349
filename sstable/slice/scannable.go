package slice

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"sort"

	"github.com/sluicedb/sluice/internal/crcx"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// A zero-copy child of a compressed parent starts with whole parent chunks, so unless its
// first partition starts on a chunk boundary the head of its first chunk holds the tail of a
// partition it does not own: its dead head. Every index-driven reader steps over it, but
// Cassandra 5.0 reads a whole sstable without its index for compaction, sstabledump and
// `getScanner()` (SSTableSimpleScanner over [0, dataLength)), and would parse the dead head as
// partitions: a CorruptSSTableException at best, partitions that do not exist at worst.
//
// So the first chunk is rewritten with its dead head replaced by empty partitions (a key, the
// LIVE deletion, the empty static row where the table has statics, end of partition) of
// exactly the same size, with keys sorting before the child's first partition: a sequential
// reader sees a few partitions with no content, which compaction drops (an empty partition is
// never written) and which no index entry addresses, so reads, key counts, the bloom filter
// and every rebuilt component ignore them. The uncompressed positions of every partition are
// unchanged; only the first chunk's record changes. It is placed so that it ends where the
// old record ended (its offset moves into the head pad, which Cassandra never reads), so the
// rest of the file, and its clone-shared blocks, stay as they are.

// keySearchBudget bounds the candidates tried for one filler key (each costs one Murmur3
// block and its finalisation, ~10 ns): enough while more than about one key in 2^20 of the
// ring sorts below the child's first partition.
const keySearchBudget = 1 << 22

// errHeadTooSmall: a dead head shorter than the smallest empty partition cannot be filled.
var errHeadTooSmall = errors.New("dead head smaller than an empty partition")

// headFiller returns exactly size bytes of empty partitions in key order whose keys all sort
// before the decorated key (firstTok, first).
func headFiller(t *schema.Table, v version.Version, p token.Partitioner, size int, firstTok token.Token, first []byte) ([]byte, error) {
	w := rows.NewWriter(t, v)
	empty, err := emptyPartition(w, nil, nil)
	if err != nil {
		return nil, err
	}
	o := len(empty)
	if size < o {
		return nil, fmt.Errorf("%w: %d bytes, an empty partition takes %d", errHeadTooSmall, size, o)
	}
	// As few partitions as keys of at most 65535 bytes allow, their key bytes spread evenly.
	n := (size + o + math.MaxUint16 - 1) / (o + math.MaxUint16)
	keyBytes := size - n*o
	keys := make([][]byte, n)
	var from uint64
	for i := range keys {
		length := keyBytes / n
		if i < keyBytes%n {
			length++
		}
		keys[i], from, err = token.KeyBelow(p, length, firstTok, first, from, keySearchBudget)
		if err != nil {
			return nil, fmt.Errorf("filler key %d of %d bytes below token %s: %w", i, length, firstTok, err)
		}
	}
	toks := make([]token.Token, n)
	for i, k := range keys {
		toks[i] = p.Token(k)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		return token.CompareKeys(toks[order[a]], keys[order[a]], toks[order[b]], keys[order[b]]) < 0
	})
	out := make([]byte, 0, size)
	for _, i := range order {
		if out, err = emptyPartition(w, out, keys[i]); err != nil {
			return nil, err
		}
	}
	if len(out) != size {
		return nil, fmt.Errorf("slice: head filler of %d bytes for a %d-byte head", len(out), size)
	}
	return out, nil
}

// headFill is where fillHead leaves a child's first chunk.
type headFill struct {
	Offset int64  // chunk 0's new offset in Data.db
	Head   []byte // Data.db bytes [0, end of chunk 0's record): the pad and the new record
	OldCRC uint32 // the CRC32 of the bytes Head replaced
}

// fillHead rewrites chunk 0 of a compressed child's Data.db (f, fileLength bytes, described by
// info) so that its first dead bytes parse as empty partitions sorting before the child's first
// partition (first, firstTok). The chunk is read back and checked against its CRC first, so a
// damaged parent chunk fails here rather than being re-encoded under a fresh CRC.
func fillHead(f *os.File, fileLength int64, info *compress.Info, dead int64, t *schema.Table, v version.Version, p token.Partitioner, firstTok token.Token, first []byte) (headFill, error) {
	r, err := compress.NewReader(f, fileLength, info)
	if err != nil {
		return headFill{}, err
	}
	chunk, err := r.ReadChunk(0, nil)
	if err != nil {
		return headFill{}, err
	}
	if dead <= 0 || dead >= int64(len(chunk)) {
		return headFill{}, fmt.Errorf("slice: dead head of %d bytes in a first chunk of %d", dead, len(chunk))
	}
	filler, err := headFiller(t, v, p, int(dead), firstTok, first)
	if err != nil {
		return headFill{}, err
	}
	copy(chunk, filler)
	codec, err := compress.CodecFor(info.Compressor, info.Options)
	if err != nil {
		return headFill{}, err
	}
	rawAt := int(info.MaxCompressedLength)
	if rawAt <= 0 {
		rawAt = math.MaxInt32
	}
	end := fileLength
	if len(info.Offsets) > 1 {
		end = info.Offsets[1]
	}
	head := make([]byte, end)
	if _, err := f.ReadAt(head, 0); err != nil {
		return headFill{}, err
	}
	oldCRC := crc32.ChecksumIEEE(head)
	clear(head)
	rec, err := compress.AppendRecord(nil, codec, chunk, rawAt)
	if err != nil {
		return headFill{}, err
	}
	off := end - int64(len(rec))
	if off < 0 {
		return headFill{}, fmt.Errorf("slice: the filled first chunk takes %d bytes, more than the %d before chunk 1", len(rec), end)
	}
	copy(head[off:], rec)
	if _, err := f.WriteAt(head, 0); err != nil {
		return headFill{}, err
	}
	return headFill{Offset: off, Head: head, OldCRC: oldCRC}, nil
}

// FillReceivedHead fills the dead head of a partial sstable a streaming receiver has written
// (Data.db f, described by data and laid out by lay), whose first partition (firstKey) starts
// at parent position first: data's chunk 0 offset and digest are updated to the filled file.
// It returns why Cassandra 5.0's sequential readers would misread the sstable ("" when the
// layout gives them nothing to trip on); a head that cannot be filled leaves the file as it
// was. Call it once the bytes have been proven to be the parent's (the digest check), since
// the new digest is derived from the old one.
func FillReceivedHead(f *os.File, data *DataResult, spec *Spec, lay *Layout, firstKey []byte, first int64) (string, error) {
	dead, err := lay.Map(first)
	if err != nil || data.Compression == nil {
		return runGaps(lay), err
	}
	table := func() (*schema.Table, error) { return schema.Compile(spec.Statistics.Header) }
	fill, why, err := fillChildHead(f, lay, data.Compression, data.FileLength, dead, table,
		spec.Version, spec.Partitioner, spec.Partitioner.Token(firstKey), firstKey)
	if err != nil || fill.Head == nil {
		return why, err
	}
	// CRC32 is linear: the digest changes by the shifted difference of the heads' CRCs.
	rest := data.FileLength - int64(len(fill.Head))
	data.Digest ^= crcx.Combine(fill.OldCRC^crc32.ChecksumIEEE(fill.Head), 0, rest)
	return why, nil
}

// runGaps is why a sequential reader would misread a child laid out by l whatever its head:
// dead bytes between its runs; or "".
func runGaps(l *Layout) string {
	if len(l.Segments) > 1 || l.Segments[0].Runs > 1 {
		return "dead bytes between runs"
	}
	return ""
}

// fillChildHead fills the dead head (the first dead bytes) of the compressed child laid out by
// l in f, updating info's chunk 0 offset, and says why a sequential reader would still misread
// the child, or "". A head that cannot be filled is such a reason, the child left as it was; a
// damaged chunk (a *compress.ChunkError) is an error. table is asked for only when there is a
// head to fill.
func fillChildHead(f *os.File, l *Layout, info *compress.Info, fileLength, dead int64, table func() (*schema.Table, error),
	v version.Version, p token.Partitioner, firstTok token.Token, first []byte) (headFill, string, error) {
	why := runGaps(l)
	if dead == 0 {
		return headFill{}, why, nil
	}
	t, err := table()
	var fill headFill
	if err == nil {
		fill, err = fillHead(f, fileLength, info, dead, t, v, p, firstTok, first)
	}
	var ce *compress.ChunkError
	switch {
	case errors.As(err, &ce):
		return headFill{}, "", err
	case err != nil:
		return headFill{}, "dead head not filled: " + err.Error(), nil
	}
	info.Offsets[0] = fill.Offset
	return fill, why, nil
}
