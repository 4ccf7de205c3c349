package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"os"
	"strings"

	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/bloom"
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// Problem is one verification failure: the component file it was found in, the byte offset
// within that file (-1 when the problem is not at one place), and what was wrong.
type Problem struct {
	File    string `json:"file"`
	Offset  int64  `json:"offset"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Offset < 0 {
		return p.File + ": " + p.Message
	}
	return fmt.Sprintf("%s: offset %d: %s", p.File, p.Offset, p.Message)
}

// VerifyOptions selects how deep Verify goes.
type VerifyOptions struct {
	// Extended also reads every row of every partition with the row cursor.
	Extended bool
	// MinIndexInterval is the table's min_index_interval that Summary.db must have been
	// sampled with (0 means Cassandra's default, 128). Cassandra discards and rebuilds a
	// summary whose interval differs from the table's.
	MinIndexInterval int
	// Ranges, when set, are the token ranges every partition must lie in: a streaming
	// receiver checks an entire sstable against the ranges its session asked for. The first
	// partition outside them is a problem.
	Ranges token.RangeSet
	// Strict holds the file to Cassandra's own sequential rules, which its compaction scanner,
	// getScanner(range), sstableverify -e and scrub follow: the first partition at position 0
	// and every byte of the data inside a partition the index addresses (no dead region). A
	// file that breaks them is a problem, not a note.
	Strict bool
}

// Report is what Verify found. OK means no problem at all.
type Report struct {
	Path       string    `json:"path"`
	OK         bool      `json:"ok"`
	Problems   []Problem `json:"problems"`
	Partitions int64     `json:"partitions"`
	Chunks     int       `json:"chunks"`
	Rows       int64     `json:"rows,omitempty"`
	Extended   bool      `json:"extended"`
	// FirstPosition is the Data.db position of the first partition; non-zero only for children
	// of a zero-copy split, whose first chunk starts with bytes of a neighbouring range.
	FirstPosition int64 `json:"first_position"`
	// DeadBytes counts uncompressed Data.db bytes no partition occupies, in DeadRegions
	// regions: before the first partition, between a partition's end and the next index
	// position (a multi-run sstable's interior dead regions) and after the last partition's end.
	// Verify skips them: readers enter Data.db only at index positions.
	DeadBytes   int64 `json:"dead_bytes"`
	DeadRegions int64 `json:"dead_regions"`
	// HeadFilled: the bytes before the first partition parse as empty partitions keyed before
	// it, which sluice writes there for Cassandra 5.0's sequential readers.
	HeadFilled bool `json:"head_filled"`
	// Scannable: a reader that walks Data.db from position 0 without the index (Cassandra
	// 5.0's compaction, sstabledump) reads exactly the indexed partitions, plus empty ones it
	// drops: no dead region, or only a filled head, and nothing else wrong.
	Scannable bool `json:"scannable"`
	// Fillers counts the partitions that hold nothing (no deletion, static row, row or marker),
	// among Partitions: the filler partitions sluice puts where a zero-copy sstable's runs
	// leave gaps (Cassandra never writes an empty partition). Counted when the rows are read
	// (the serialization header compiles).
	Fillers int64 `json:"filler_partitions"`
}

// maxProblems bounds a report on a badly damaged file: past it, further findings are dropped
// and one line says so.
const maxProblems = 1000

type verifier struct {
	t      *Table
	opts   VerifyOptions
	report *Report

	// partitionEnds: every partition was read to its end, so DeadRegions counts the dead
	// regions between partitions too (the serialization header drives the row reader).
	partitionEnds bool
	ciOffsetsAt   int64    // file offset of the chunk offsets in CompressionInfo.db
	badChunks     int      // chunks that failed their CRC or decompression
	indexBroken   bool     // the index pass stopped early or found no entry: Summary.db is not compared with it
	digestWrong   *Problem // a Digest.crc32 mismatch, reported only if no bad chunk explains it
	dataIntact    bool     // Data.db matches Digest.crc32
	btiRows       []byte   // Rows.db, for BTI
}

func (v *verifier) add(file string, off int64, format string, args ...any) {
	r := v.report
	if len(r.Problems) == maxProblems {
		r.Problems = append(r.Problems, Problem{File: file, Offset: -1, Message: "too many problems; the rest are not listed"})
	}
	if len(r.Problems) > maxProblems {
		return
	}
	r.Problems = append(r.Problems, Problem{File: file, Offset: off, Message: fmt.Sprintf(format, args...)})
}

// addErr records err against the component it names (encoding.OffsetError), else file, at
// the offset it carries.
func (v *verifier) addErr(file string, err error) {
	f, off := encoding.Place(err)
	if f != "" {
		file = f
	}
	v.add(file, off, "%s", detail(err))
}

// reported says whether a problem names file already.
func (v *verifier) reported(file string) bool {
	for _, p := range v.report.Problems {
		if p.File == file {
			return true
		}
	}
	return false
}

// detail is err's text without the place a Problem already shows.
func detail(err error) string {
	s := err.Error()
	f, off := encoding.Place(err)
	if f != "" {
		s = strings.Replace(s, f+": ", "", 1)
	}
	if off >= 0 {
		s = strings.Replace(s, fmt.Sprintf("at offset %d: ", off), "", 1)
	}
	return s
}

// Verify checks an sstable the way `sluice sstable verify` reports it: Digest.crc32 against
// Data.db, every chunk's CRC (or CRC.db) and decompression, the key at every index position,
// index order, Summary against Index, every key in Filter, Statistics CRCs and parse-to-end,
// first/last keys and the partition count, and with Extended every row. Problems are returned
// in the Report; the error is reserved for a path that names no sstable at all.
func Verify(path string, opts VerifyOptions) (*Report, error) {
	d, _, err := descriptor.Parse(path)
	if err != nil {
		return nil, err
	}
	rep := &Report{Path: d.Prefix(), Extended: opts.Extended, Problems: []Problem{}}
	v := &verifier{opts: opts, report: rep}
	v.run(d)
	if opts.Strict {
		dataPath := d.Path(descriptor.Data)
		switch {
		case !v.partitionEnds:
			v.add(dataPath, -1, "strict: the partitions' ends cannot be checked (the serialization header does not compile)")
		case rep.FirstPosition > 0:
			v.add(dataPath, -1, "strict: the first partition is at uncompressed position %d, not 0 (Cassandra's verifier: First row position from index != 0)", rep.FirstPosition)
		}
		if rep.DeadBytes > 0 {
			v.add(dataPath, -1, "strict: %d uncompressed bytes in %d regions belong to no partition the index addresses: Cassandra's sequential readers would parse them", rep.DeadBytes, rep.DeadRegions)
		}
	}
	rep.OK = len(rep.Problems) == 0
	rep.Scannable = rep.OK && v.partitionEnds && (rep.DeadRegions == 0 || (rep.DeadRegions == 1 && rep.HeadFilled))
	return rep, nil
}

func (v *verifier) run(d descriptor.Descriptor) {
	// A damaged chunk also changes the CRC32 of Data.db: one damage, one line.
	defer func() {
		if p := v.digestWrong; p != nil && v.badChunks == 0 {
			v.add(p.File, p.Offset, "%s", p.Message)
		}
	}()
	ver := d.Version
	v.checkTOC(d)

	// Statistics first: without it there is no partitioner, so nothing key-related can be checked.
	statsPath := d.Path(descriptor.Statistics)
	if raw, err := os.ReadFile(statsPath); err != nil {
		v.add(statsPath, -1, "cannot read: %v", err)
	} else {
		for _, e := range stats.Check(raw, ver) {
			v.add(statsPath, e.Offset, "%s", detail(e))
		}
	}

	v.checkDigest(d)

	t, err := Open(d.Prefix())
	if err != nil {
		// Open fails only on components already reported above or on chunk metadata.
		// Once per component: a Statistics.db that stats.Check reported fails Open too.
		f, off := encoding.Place(err)
		if len(v.report.Problems) == 0 || (off >= 0 && !v.reported(f)) {
			v.addErr(d.Path(descriptor.Data), err)
		}
		return
	}
	defer t.Close()
	v.t = t
	v.report.Chunks = t.Data.ChunkCount()
	v.checkChunkLayout()
	v.checkIndexAndData()
	if ver.Format == version.Big && !v.indexBroken {
		v.checkSummary()
	}
}

func (v *verifier) checkTOC(d descriptor.Descriptor) {
	tocPath := d.Path(descriptor.TOC)
	raw, err := os.ReadFile(tocPath)
	if err != nil {
		v.add(tocPath, -1, "cannot read: %v", err)
		return
	}
	cs, err := descriptor.ParseTOC(raw)
	if err != nil {
		v.add(tocPath, -1, "%v", err)
		return
	}
	if raw[len(raw)-1] != '\n' {
		v.add(tocPath, int64(len(raw)), "last line is not newline-terminated (truncated?)")
	}
	listed := map[descriptor.Component]bool{}
	for _, c := range cs {
		listed[c] = true
		if _, err := os.Stat(d.Path(c)); err != nil {
			v.add(tocPath, int64(bytes.Index(raw, []byte(c))), "lists %s, which is missing: %v", c, err)
		}
	}
	required := []descriptor.Component{descriptor.Data, descriptor.Statistics}
	if d.Version.Format == version.BTI {
		required = append(required, descriptor.Partitions, descriptor.Rows)
	} else {
		required = append(required, descriptor.Index)
	}
	for _, c := range required {
		if !listed[c] {
			v.add(tocPath, -1, "does not list required component %s", c)
		}
	}
}

func (v *verifier) checkDigest(d descriptor.Descriptor) {
	digestPath := d.Path(descriptor.Digest)
	raw, err := os.ReadFile(digestPath)
	if errors.Is(err, os.ErrNotExist) {
		return // Digest.crc32 is optional; the TOC check reports it when listed
	}
	if err != nil {
		v.add(digestPath, -1, "cannot read: %v", err)
		return
	}
	want, err := compress.ParseDigest(raw)
	if err != nil {
		v.add(digestPath, 0, "%v", err)
		return
	}
	dataPath := d.Path(descriptor.Data)
	f, err := os.Open(dataPath)
	if err != nil {
		v.add(dataPath, -1, "cannot read: %v", err)
		return
	}
	defer f.Close()
	h := crc32.NewIEEE()
	size := int64(4 << 20)
	if fi, err := f.Stat(); err == nil && fi.Size() < size {
		size = 64 << 10 // a small Data.db: no 4 MiB to clear for it
	}
	if _, err := io.CopyBuffer(h, f, make([]byte, size)); err != nil {
		v.add(dataPath, -1, "reading for the digest: %v", err)
		return
	}
	if got := h.Sum32(); got != want {
		v.digestWrong = &Problem{File: digestPath, Offset: 0, Message: fmt.Sprintf("Digest.crc32 is %d but the CRC32 of Data.db is %d", want, got)}
		return
	}
	v.dataIntact = true
}

// checkIndexAndData walks the partition index and Data.db together in one sequential pass: every
// chunk is checked once, the key at every index position is compared with the indexed key, the
// index order and positions are checked, and every key is looked up in the filter.
func (v *verifier) checkIndexAndData() {
	t := v.t
	indexPath := t.Path(descriptor.Index)
	if t.Version().Format == version.BTI {
		indexPath = t.Path(descriptor.Partitions)
	}
	filter := v.loadFilter()
	var rebuilt *bloom.Filter // the filter Cassandra would have written for these keys
	if filter != nil {
		rebuilt = bloom.NewSized(filter.HashCount, len(filter.Words))
	}
	var badChunks []badChunk
	cur := newDataCursor(t.Data, func(chunk int, err error) {
		badChunks = append(badChunks, badChunk{chunk, err})
		v.badChunks++
	})
	sizes := v.newSizeHistogram()
	var rowIndex rowIndexChecker

	var (
		prevKey  []byte
		prevTok  token.Token
		prevPos  int64 = -1
		firstKey []byte
		lastKey  []byte
		count    int64
		comp     []byte
		extended = newRowChecker(v)
		dataLen  = t.DataLength()
		pending  pendingPartition // the partition whose end the next index entry gives
		rowsPath = t.Path(descriptor.Rows)
		// keysUnknown: some key could not be read or was wrong (reported once, where it came
		// from), so the checks of all keys together (filter bitset, first/last keys) would only
		// repeat it. positionsBad: likewise for positions and the size histogram.
		keysUnknown, positionsBad bool
		prevKnown                 bool
		filterMisses              int
		firstMiss                 string
		badRun                    int // consecutive index entries with problems
		card                      = stats.NewCardinality()
		within                    *token.Within
	)
	if len(v.opts.Ranges) > 0 {
		within = v.opts.Ranges.Within()
	}
	visit := func(p *Partition, be *bti.PartitionEntry) error {
		// trieWhy: this row-indexed key disagrees with the trie entry leading to it. Normally
		// checkPartition settles who is wrong; an entry that never gets there (its position out
		// of order or past the end) is blamed on Rows.db here.
		trieWhy := ""
		defer func() {
			if trieWhy != "" && p.IndexPos >= 0 && !(pending.valid && pending.ordinal == p.Ordinal) {
				v.add(rowsPath, p.IndexPos, "row index entry of partition %d: key %x does not belong to the Partitions.db entry that leads to it: %s", p.Ordinal, p.Key, trieWhy)
			}
		}()
		// at locates the entry in the partition index; keyFile and keyAt the component the
		// key and position came from (a BTI partition with a row index has them in Rows.db).
		at := p.IndexPos
		if be != nil {
			at = be.PayloadPos
		}
		keyFile, keyAt := indexPath, at
		if be != nil && p.IndexPos >= 0 {
			keyFile, keyAt = rowsPath, p.IndexPos
		}
		keyOK := p.Key != nil
		if be != nil && keyOK {
			// The key must lead to this entry through the trie.
			comp = bti.AppendDecoratedKey(comp[:0], p.Token, p.Key)
			why := ""
			if !bytes.HasPrefix(comp, be.Prefix) {
				why = fmt.Sprintf("its trie path %x is not a prefix of the key's comparable form %x", be.Prefix, comp)
			} else if _, h1 := token.Hash3x64_128(p.Key, 0); be.HasHash && be.HashByte != byte(h1) {
				why = fmt.Sprintf("its hash byte %02x does not match the key's (%02x)", be.HashByte, byte(h1))
			}
			if why != "" && p.IndexPos < 0 {
				v.add(indexPath, at, "partition %d: Data.db position %d holds key %x, which does not belong to this entry: %s", p.Ordinal, p.Position, p.Key, why)
			}
			// With a row index, Rows.db or Partitions.db is wrong: the key in Data.db decides
			// which, once the partition is read (checkPartition).
			trieWhy = why
			keyOK = why == ""
		}
		if !keyOK {
			keysUnknown = true
		}
		if keyOK && within != nil && !within.Holds(p.Token) {
			v.add(keyFile, keyAt, "partition %d (key %x, token %s) is outside the ranges %s", p.Ordinal, p.Key, p.Token, v.opts.Ranges)
			within = nil // one is enough: the rest would each cost a look at every range
		}
		if count == 0 {
			firstKey = append(firstKey[:0], p.Key...)
			v.report.FirstPosition = p.Position
			if p.Position > 0 {
				v.report.DeadBytes += p.Position
				v.report.DeadRegions++
				if extended.table != nil && keyOK && p.Position <= math.MaxInt32 {
					if b, err := cur.bytesAt(0, int(p.Position)); err == nil {
						v.report.HeadFilled = filledHead(b, extended.table, t.Version(), t.Partitioner, p.Token, p.Key)
					}
				}
			}
		} else {
			if keyOK && prevKnown && token.CompareKeys(prevTok, prevKey, p.Token, p.Key) >= 0 {
				v.add(keyFile, keyAt, "partition %d (key %x) is not after the previous key %x", p.Ordinal, p.Key, prevKey)
			}
			if p.Position <= prevPos {
				v.add(keyFile, keyAt, "partition %d position %d is not after the previous position %d", p.Ordinal, p.Position, prevPos)
				positionsBad = true
			}
		}
		if p.Position >= dataLen {
			v.add(keyFile, keyAt, "partition %d position %d is past the end of Data.db's %d uncompressed bytes", p.Ordinal, p.Position, dataLen)
			positionsBad = true
		} else if p.Position > prevPos {
			// The previous partition is complete now that its end is known.
			var next []byte
			if keyOK {
				next = p.Key
			}
			if pending.valid && v.checkPartition(cur, extended, &pending, p.Position, next) {
				positionsBad = true
			}
			pending.set(p, be != nil, keyOK || (trieWhy != "" && p.IndexPos >= 0), keyFile, keyAt)
			pending.trieWhy, pending.trieAt = "", -1
			if p.IndexPos >= 0 {
				pending.trieWhy, pending.trieAt = trieWhy, at
			}
		}
		if keyOK {
			card.Add(p.Key)
		}
		if filter != nil && keyOK {
			if !filter.MayContain(p.Key) {
				if filterMisses == 0 {
					firstMiss = fmt.Sprintf("partition %d key %x", p.Ordinal, p.Key)
				}
				filterMisses++
			}
			rebuilt.Add(p.Key)
		}
		if count > 0 && p.Position > prevPos {
			sizes.Add(p.Position - prevPos)
		}
		if be != nil && p.IndexPos >= 0 {
			rowIndex.check(v, p, be)
		}
		if p.Promoted != nil {
			if _, err := bigindex.CheckPromoted(p.Promoted, t.Version()); err != nil {
				v.add(indexPath, at, "promoted index of partition %d: %v", p.Ordinal, err)
			}
		}
		prevKnown = keyOK
		if keyOK {
			prevKey = append(prevKey[:0], p.Key...)
			prevTok = p.Token
			if prevTok.Kind == token.KindBytes {
				prevTok.Bytes = prevKey
			}
		}
		prevPos = p.Position
		lastKey = append(lastKey[:0], p.Key...)
		count++
		return nil
	}

	// An index whose entries stop making sense one after another has lost its framing (a
	// damaged length): what follows is noise, not more damage. Stop at the third entry in a row
	// with a problem and say so, once.
	guarded := func(p *Partition, be *bti.PartitionEntry) error {
		before := len(v.report.Problems)
		if err := visit(p, be); err != nil {
			return err
		}
		indexProblem := false
		for _, pr := range v.report.Problems[before:] {
			indexProblem = indexProblem || pr.File == indexPath || pr.File == rowsPath
		}
		if !indexProblem {
			badRun = 0
			return nil
		}
		if badRun++; badRun < 3 {
			return nil
		}
		keysUnknown, positionsBad = true, true
		at := p.IndexPos
		if be != nil {
			at = be.PayloadPos
		}
		return &encoding.OffsetError{File: indexPath, Offset: at, What: "index entries",
			Err: fmt.Errorf("%w: three entries in a row up to partition %d are inconsistent; the index is not read further", ErrCorrupt, p.Ordinal)}
	}
	var err error
	var pi *bti.PartitionIndex
	if t.Version().Format == version.BTI {
		var rows []byte
		var release func()
		pi, rows, release, err = t.readBTIIndex()
		v.btiRows = rows
		if err == nil {
			defer release()
			err = t.walkBTI(pi, rows, func(p *Partition, e bti.PartitionEntry) error { return guarded(p, &e) },
				func(p *Partition, err error) error {
					if isChunkErr(err) {
						keysUnknown = true // the data pass reports the chunk, once
						return nil
					}
					return err
				})
		}
	} else {
		err = t.ScanPartitions(func(p *Partition) error { return guarded(p, nil) })
	}
	if err != nil {
		v.addErr(indexPath, err)
	}
	if err == nil && count > 0 && prevPos < dataLen {
		if pending.valid {
			v.checkPartition(cur, extended, &pending, dataLen, nil)
		}
		sizes.Add(dataLen - prevPos)
	}
	cur.drain()
	v.blameChunkOffsets(badChunks)
	if count == 0 && dataLen > 0 && err == nil { // a failed walk said why already
		v.add(indexPath, -1, "the partition index is empty but Data.db holds %d bytes", dataLen)
		v.indexBroken = true
	}
	if err != nil {
		v.indexBroken = true
	}
	if v.indexBroken || v.badChunks > 0 {
		// Keys or positions were not all seen: the whole-table checks would repeat that.
		keysUnknown, positionsBad = true, true
	}
	if filter != nil {
		v.checkFilter(filter, rebuilt, count, filterMisses, firstMiss, keysUnknown)
	}
	if !positionsBad {
		v.checkSizeHistogram(sizes, count)
	}
	v.report.Partitions = count
	v.report.Rows = extended.rows
	v.partitionEnds = extended.table != nil
	if !keysUnknown && !positionsBad {
		extended.checkStats()
	}
	if !keysUnknown {
		v.checkKeyRange(count, firstKey, lastKey, pi)
		v.checkCardinality(card)
	}
}

// checkCardinality compares the key-cardinality estimator in Statistics.db (COMPACTION) with
// the one the indexed keys give: it depends only on the set of keys, and Cassandra's bytes are
// reproduced exactly (stats.Cardinality), so any difference is damage. Statistics.db of md
// and me has no checksum of its own; this covers most of its bytes.
func (v *verifier) checkCardinality(card *stats.Cardinality) {
	c := v.t.Statistics.Compaction
	if c == nil || len(c.Cardinality) == 0 {
		return
	}
	want := card.Bytes()
	if bytes.Equal(want, c.Cardinality) {
		return
	}
	path := v.t.Path(descriptor.Statistics)
	off := int64(-1)
	if raw, err := os.ReadFile(path); err == nil {
		if at := bytes.Index(raw, c.Cardinality); at >= 0 {
			i := 0
			for i < len(want) && i < len(c.Cardinality) && want[i] == c.Cardinality[i] {
				i++
			}
			off = int64(at + i)
		}
	}
	v.add(path, off, "key cardinality estimator (%d bytes) differs from the one the %d indexed keys give (%d bytes)", len(c.Cardinality), v.report.Partitions, len(want))
}

// checkFilter compares Filter.db with the filter rebuilt from the indexed keys: one line for
// the damage, at the first byte whose bits differ. Keys not in the filter are counted into it.
// When not every key was read, only keys found missing are reported.
func (v *verifier) checkFilter(filter, rebuilt *bloom.Filter, count int64, misses int, firstMiss string, keysUnknown bool) {
	path := v.t.Path(descriptor.Filter)
	missing := ""
	if misses > 0 {
		missing = fmt.Sprintf("; %d indexed keys are not in it (first: %s)", misses, firstMiss)
	}
	if keysUnknown {
		if misses > 0 {
			v.add(path, -1, "%d indexed keys are not in the bloom filter (first: %s)", misses, firstMiss)
		}
		return
	}
	if filter.Equal(rebuilt) {
		return
	}
	if filter.HashCount != rebuilt.HashCount {
		v.add(path, 0, "hash count %d, but the filter of the %d indexed keys has %d%s", filter.HashCount, count, rebuilt.HashCount, missing)
		return
	}
	for i, w := range filter.Words {
		if x := w ^ rebuilt.Words[i]; x != 0 {
			b := bits.TrailingZeros64(x) / 8
			if v.t.Version().HasOldBfFormat() {
				b = 7 - b
			}
			v.add(path, int64(8+8*i+b), "bitset differs from the filter of the %d indexed keys (hash count %d, %d words) in word %d%s", count, filter.HashCount, len(filter.Words), i, missing)
			return
		}
	}
}

// pendingPartition is a copy of the index entry of a partition not yet checked against Data.db.
type pendingPartition struct {
	valid       bool
	ordinal     int64
	position    int64
	key         []byte
	promoted    []byte
	hasPromoted bool
	rowIndexAt  int64 // Rows.db position of the partition's row index entry (BTI), else -1
	keyKnown    bool  // the key is trusted (read, and consistent with the index)
	keyFile     string
	keyAt       int64 // where the key and position came from: the component and offset to blame
	// trieWhy says how the key in Rows.db disagrees with the Partitions.db entry at trieAt
	// that leads to it; checkPartition blames one of them by the key in Data.db.
	trieWhy string
	trieAt  int64
}

func (pp *pendingPartition) set(p *Partition, bti, keyKnown bool, keyFile string, keyAt int64) {
	pp.valid, pp.ordinal, pp.position = true, p.Ordinal, p.Position
	pp.keyKnown, pp.keyFile, pp.keyAt = keyKnown, keyFile, keyAt
	pp.rowIndexAt = -1
	if bti && p.IndexPos >= 0 {
		pp.rowIndexAt = p.IndexPos
	}
	pp.key = append(pp.key[:0], p.Key...)
	// An index entry without a promoted index has an empty, non-nil Promoted slice.
	pp.promoted, pp.hasPromoted = append(pp.promoted[:0], p.Promoted...), len(p.Promoted) > 0
}

// checkPartition checks the partition occupying uncompressed Data.db bytes [pp.position, end):
// the key stored in its header against the index, and with Extended every row. Reads go through
// the data cursor in position order, so each chunk is decoded once.
//
// next is the key of the partition the index puts at end, when known. With Extended it is
// looked at first: if it is not there, the boundary between the two partitions is unknown and
// the rows of this one are not checked (the next partition's check reports the bad position,
// once). It returns whether next was missing.
//
// Data.db bytes handed out by the cursor passed their chunk checksum (CRC.db or inline): when a
// key is not where the index says, the index is wrong, and it is blamed.
func (v *verifier) checkPartition(cur *dataCursor, rc *rowChecker, pp *pendingPartition, end int64, next []byte) (nextMissing bool) {
	dataPath := v.t.Path(descriptor.Data)
	if end <= pp.position {
		return false // positions out of order were reported by the index pass
	}
	// Without the row reader only the key is needed; with it, the whole span to the next index
	// position, which the partition must end within.
	n := int64(2 + len(pp.key))
	if rc.table != nil {
		n = end - pp.position
	}
	n = min(n, end-pp.position)
	look := rc.table != nil && next != nil && end+2+int64(len(next)) <= v.t.DataLength()
	if look {
		n = end + 2 + int64(len(next)) - pp.position
	}
	b, err := cur.bytesAt(pp.position, int(n))
	if err != nil {
		if !isChunkErr(err) { // a bad chunk was reported once already
			v.add(dataPath, v.dataOffset(pp.position), "partition %d at uncompressed position %d: %v", pp.ordinal, pp.position, err)
		}
		return false
	}
	if look {
		tail := b[end-pp.position:]
		nextMissing = !bytes.Equal(headerKey(tail), next)
		b = b[:end-pp.position]
	}
	if pp.trieWhy != "" {
		if key := headerKey(b); v.dataChecksummed() && bytes.Equal(key, pp.key) {
			v.add(v.t.Path(descriptor.Partitions), pp.trieAt, "partition %d (key %x, as Rows.db and Data.db agree): %s", pp.ordinal, pp.key, pp.trieWhy)
		} else {
			v.add(v.t.Path(descriptor.Rows), pp.keyAt, "row index entry of partition %d: key %x does not belong to the Partitions.db entry that leads to it: %s", pp.ordinal, pp.key, pp.trieWhy)
		}
		return nextMissing
	}
	if key := headerKey(b); !pp.keyKnown || key == nil || !bytes.Equal(key, pp.key) {
		if !pp.keyKnown {
			return nextMissing // the index entry was reported already
		}
		if v.dataChecksummed() {
			v.add(pp.keyFile, pp.keyAt, "partition %d: Data.db position %d holds key %x, not the indexed key %x (Data.db passed its checksums: the index is wrong)", pp.ordinal, pp.position, key, pp.key)
		} else {
			v.add(dataPath, v.dataOffset(pp.position), "partition %d at uncompressed position %d does not hold the indexed key %x", pp.ordinal, pp.position, pp.key)
		}
		return nextMissing
	}
	if rc.table != nil && !nextMissing {
		var promoted []byte
		if pp.hasPromoted {
			promoted = pp.promoted
		}
		span := int64(len(b))
		if size := rc.partition(b, pp.position, promoted, pp.key, pp.rowIndexAt, pp.keyAt); size < span {
			v.report.DeadBytes += span - size
			v.report.DeadRegions++
		}
	}
	return nextMissing
}

// headerKey is the key of the partition header at the start of b, or nil when b is too short.
func headerKey(b []byte) []byte {
	if len(b) < 2 {
		return nil
	}
	kl := int(b[0])<<8 | int(b[1])
	if 2+kl > len(b) {
		return nil
	}
	return b[2 : 2+kl]
}

// dataChecksummed says whether every Data.db byte the cursor hands out passed a checksum.
func (v *verifier) dataChecksummed() bool { return v.t.Compression != nil || v.t.CRC != nil }

// dataOffset is the Data.db file offset to report for uncompressed position pos: pos itself in
// an uncompressed file, else the file offset of the chunk holding it.
func (v *verifier) dataOffset(pos int64) int64 {
	c := v.t.Compression
	if c == nil {
		return pos
	}
	if k := pos / int64(c.ChunkLength); pos >= 0 && k < int64(len(c.Offsets)) {
		return c.Offsets[k]
	}
	return -1
}

func isChunkErr(err error) bool {
	var ce *compress.ChunkError
	return errors.As(err, &ce)
}

func (v *verifier) loadFilter() *bloom.Filter {
	t := v.t
	path := t.Path(descriptor.Filter)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // generated on load; the TOC check reports it when listed
	}
	if err != nil {
		v.add(path, -1, "cannot read: %v", err)
		return nil
	}
	f, err := bloom.Parse(raw, t.Version().HasOldBfFormat())
	if err != nil {
		v.addErr(path, err)
		return nil
	}
	return f
}

// checkKeyRange compares what the index holds with what Statistics.db (and the BTI footer) say.
func (v *verifier) checkKeyRange(count int64, first, last []byte, pi *bti.PartitionIndex) {
	t := v.t
	statsPath := t.Path(descriptor.Statistics)
	if s := t.Statistics.Stats; s != nil {
		if t.Version().HasKeyRange() && count > 0 {
			if !bytes.Equal(s.FirstKey, first) {
				v.add(statsPath, -1, "first key %x, the index starts with %x", s.FirstKey, first)
			}
			if !bytes.Equal(s.LastKey, last) {
				v.add(statsPath, -1, "last key %x, the index ends with %x", s.LastKey, last)
			}
		}
	}
	if pi != nil {
		ppath := t.Path(descriptor.Partitions)
		if pi.KeyCount != count {
			v.add(ppath, -1, "footer counts %d keys, the trie holds %d", pi.KeyCount, count)
		}
		if count > 0 && (!bytes.Equal(pi.FirstKey, first) || !bytes.Equal(pi.LastKey, last)) {
			v.add(ppath, pi.FirstKeyPos, "first/last keys %x/%x differ from the trie's %x/%x", pi.FirstKey, pi.LastKey, first, last)
		}
	}
}

// checkSummary compares Summary.db with a fresh pass over Index.db.
func (v *verifier) checkSummary() {
	t := v.t
	path := t.Path(descriptor.Summary)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return // generated on load
	}
	if err != nil {
		v.add(path, -1, "cannot read: %v", err)
		return
	}
	s, err := bigindex.ParseSummary(raw)
	if err != nil {
		v.addErr(path, err)
		return
	}
	want := v.opts.MinIndexInterval
	if want <= 0 {
		want = bigindex.DefaultMinIndexInterval
	}
	if int(s.MinIndexInterval) != want {
		v.add(path, 0, "min_index_interval %d differs from the table's %d (Cassandra would discard and rebuild this summary)", s.MinIndexInterval, want)
	}
	f, err := os.Open(t.Path(descriptor.Index))
	if err != nil {
		return // reported by the index pass
	}
	defer f.Close()
	mism, err := bigindex.VerifySummary(s, bigindex.NewScanner(f, indexBuffer(f)))
	if err != nil {
		return // index damage is reported by the index pass
	}
	// One damage (a shifted sample offset, a wrong key) usually makes several samples disagree:
	// one line, at the first sample's offset entry, and how many more.
	if len(mism) > 0 {
		m := mism[0]
		off := int64(-1)
		if m.Sample >= 0 {
			off = 24 + 4*int64(m.Sample) // after the 24-byte header, one i32 offset per sample
		}
		more := ""
		if len(mism) > 1 {
			more = fmt.Sprintf(" (and %d more disagreements)", len(mism)-1)
		}
		v.add(path, off, "sample %d (Index.db offset %d): %s%s", m.Sample, m.IndexOffset, m.What, more)
	}
}
