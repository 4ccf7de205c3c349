package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

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
}

// maxProblems bounds a report on a badly damaged file: past it, further findings are dropped
// and one line says so.
const maxProblems = 1000

type verifier struct {
	t      *Table
	opts   VerifyOptions
	report *Report

	ciOffsetsAt int64  // file offset of the chunk offsets in CompressionInfo.db
	dataIntact  bool   // Data.db matches Digest.crc32
	btiRows     []byte // Rows.db, for BTI
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

// addErr records err against file, taking the offset from the error when it carries one.
func (v *verifier) addErr(file string, err error) {
	v.add(file, errOffset(err), "%v", stripFile(err))
}

func stripFile(err error) error {
	var fe *FileError
	if errors.As(err, &fe) {
		return fe.Err
	}
	return err
}

// errOffset extracts the byte offset of a failure from the codecs' error types (-1 if none).
func errOffset(err error) int64 {
	var ce *compress.ChunkError
	if errors.As(err, &ce) {
		return ce.FileOffset
	}
	var se *stats.Error
	if errors.As(err, &se) {
		return se.Offset
	}
	var ee *bigindex.EntryError
	if errors.As(err, &ee) {
		return ee.Entry
	}
	var oe *encoding.OffsetError
	if errors.As(err, &oe) {
		return oe.Offset
	}
	return -1
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
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}

func (v *verifier) run(d descriptor.Descriptor) {
	ver := d.Version
	v.checkTOC(d)

	// Statistics first: without it there is no partitioner, so nothing key-related can be checked.
	statsPath := d.Path(descriptor.Statistics)
	if raw, err := os.ReadFile(statsPath); err != nil {
		v.add(statsPath, -1, "cannot read: %v", err)
	} else {
		for _, e := range stats.Check(raw, ver) {
			v.add(statsPath, e.Offset, "%s", e.Error())
		}
	}

	v.checkDigest(d)

	t, err := Open(d.Prefix())
	if err != nil {
		// Open fails only on components already reported above or on chunk metadata.
		if len(v.report.Problems) == 0 || errOffset(err) >= 0 {
			var fe *FileError
			file := d.Path(descriptor.Data)
			if errors.As(err, &fe) {
				file = fe.File
			}
			v.addErr(file, err)
		}
		return
	}
	defer t.Close()
	v.t = t
	v.report.Chunks = t.Data.ChunkCount()
	v.checkChunkLayout()
	v.checkIndexAndData()
	if ver.Format == version.Big {
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
			v.add(tocPath, -1, "lists %s, which is missing: %v", c, err)
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
	buf := make([]byte, 4<<20)
	if _, err := io.CopyBuffer(h, f, buf); err != nil {
		v.add(dataPath, -1, "reading for the digest: %v", err)
		return
	}
	if got := h.Sum32(); got != want {
		v.add(digestPath, 0, "Digest.crc32 is %d but the CRC32 of Data.db is %d", want, got)
		return
	}
	v.dataIntact = true
}

// checkIndexAndData walks the partition index and Data.db together in one sequential pass: every
// chunk is checked once, the key at every index position is compared with the indexed key, the
// index order and positions are checked, and every key is looked up in the filter.
func (v *verifier) checkIndexAndData() {
	t := v.t
	dataPath := t.Path(descriptor.Data)
	indexPath := t.Path(descriptor.Index)
	if t.Version().Format == version.BTI {
		indexPath = t.Path(descriptor.Partitions)
	}
	filter := v.loadFilter()
	var rebuilt *bloom.Filter // the filter Cassandra would have written for these keys
	if filter != nil {
		rebuilt = bloom.NewSized(filter.HashCount, len(filter.Words))
	}
	var badChunks []int
	cur := newDataCursor(t.Data, func(chunk int, err error) {
		v.addErr(dataPath, err)
		badChunks = append(badChunks, chunk)
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
	)
	visit := func(p *Partition, be *bti.PartitionEntry) error {
		at := p.IndexPos
		if at < 0 {
			at = -1
		}
		if count == 0 {
			firstKey = append(firstKey[:0], p.Key...)
			v.report.FirstPosition = p.Position
		} else {
			if c := token.CompareKeys(prevTok, prevKey, p.Token, p.Key); c >= 0 {
				v.add(indexPath, at, "partition %d (key %x) is not after the previous key %x", p.Ordinal, p.Key, prevKey)
			}
			if p.Position <= prevPos {
				v.add(indexPath, at, "partition %d position %d is not after the previous position %d", p.Ordinal, p.Position, prevPos)
			}
		}
		if p.Position >= dataLen {
			v.add(indexPath, at, "partition %d position %d is past the end of Data.db's %d uncompressed bytes", p.Ordinal, p.Position, dataLen)
		} else if p.Position > prevPos {
			// The previous partition is complete now that its end is known.
			if pending.valid {
				v.checkPartition(cur, extended, &pending, p.Position)
			}
			pending.set(p)
		}
		if filter != nil {
			if !filter.MayContain(p.Key) {
				v.add(t.Path(descriptor.Filter), -1, "partition %d key %x is not in the bloom filter", p.Ordinal, p.Key)
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
		if be != nil {
			comp = bti.AppendDecoratedKey(comp[:0], p.Token, p.Key)
			if !bytes.HasPrefix(comp, be.Prefix) {
				v.add(indexPath, -1, "trie path %x of partition %d is not a prefix of its key's comparable form %x", be.Prefix, p.Ordinal, comp)
			}
			if be.HasHash {
				_, h1 := token.Hash3x64_128(p.Key, 0)
				if be.HashByte != byte(h1) {
					v.add(indexPath, -1, "hash byte %02x of partition %d does not match its key (%02x)", be.HashByte, p.Ordinal, byte(h1))
				}
			}
		}
		prevKey = append(prevKey[:0], p.Key...)
		prevTok = p.Token
		if prevTok.Kind == token.KindBytes {
			prevTok.Bytes = prevKey
		}
		prevPos = p.Position
		lastKey = append(lastKey[:0], p.Key...)
		count++
		return nil
	}

	var err error
	var pi *bti.PartitionIndex
	if t.Version().Format == version.BTI {
		var rows []byte
		pi, rows, err = t.readBTIIndex()
		v.btiRows = rows
		if err == nil {
			err = t.walkBTI(pi, rows, func(p *Partition, e bti.PartitionEntry) error { return visit(p, &e) })
		}
	} else {
		err = t.ScanPartitions(func(p *Partition) error { return visit(p, nil) })
	}
	if err != nil {
		var fe *FileError
		file := indexPath
		if errors.As(err, &fe) {
			file = fe.File
		}
		v.addErr(file, err)
	}
	if count > 0 && prevPos < dataLen {
		if pending.valid {
			v.checkPartition(cur, extended, &pending, dataLen)
		}
		sizes.Add(dataLen - prevPos)
	}
	cur.drain()
	v.blameChunkOffsets(badChunks)
	if filter != nil && !filter.Equal(rebuilt) {
		v.add(t.Path(descriptor.Filter), -1, "bitset differs from the filter of the %d indexed keys (hash count %d, %d words): bits set that no key sets, or a damaged header", count, filter.HashCount, len(filter.Words))
	}
	v.checkSizeHistogram(sizes, count)
	if count == 0 && dataLen > 0 {
		v.add(indexPath, -1, "the partition index is empty but Data.db holds %d bytes", dataLen)
	}
	v.report.Partitions = count
	v.report.Rows = extended.rows
	v.checkKeyRange(count, firstKey, lastKey, pi)
}

// pendingPartition is a copy of the index entry of a partition not yet checked against Data.db.
type pendingPartition struct {
	valid       bool
	ordinal     int64
	position    int64
	key         []byte
	promoted    []byte
	hasPromoted bool
}

func (pp *pendingPartition) set(p *Partition) {
	pp.valid, pp.ordinal, pp.position = true, p.Ordinal, p.Position
	pp.key = append(pp.key[:0], p.Key...)
	// An index entry without a promoted index has an empty, non-nil Promoted slice.
	pp.promoted, pp.hasPromoted = append(pp.promoted[:0], p.Promoted...), len(p.Promoted) > 0
}

// checkPartition checks the partition occupying uncompressed Data.db bytes [pp.position, end):
// the key stored in its header against the index, and with Extended every row. Reads go through
// the data cursor in position order, so each chunk is decoded once.
func (v *verifier) checkPartition(cur *dataCursor, rc *rowChecker, pp *pendingPartition, end int64) {
	dataPath := v.t.Path(descriptor.Data)
	// Without the row pass only the key is needed; with it, the whole partition.
	n := int64(2 + len(pp.key))
	if rc.table != nil {
		n = end - pp.position
	}
	n = min(n, end-pp.position)
	b, err := cur.bytesAt(pp.position, int(n))
	if err != nil {
		if !isChunkErr(err) { // a bad chunk was reported once already
			v.add(dataPath, -1, "partition %d at uncompressed position %d: %v", pp.ordinal, pp.position, err)
		}
		return
	}
	var key []byte
	if len(b) >= 2 {
		kl := int(b[0])<<8 | int(b[1])
		key = b[2:min(len(b), 2+kl)]
		if 2+kl > len(b) {
			key = nil
		}
	}
	if !bytes.Equal(key, pp.key) || key == nil {
		v.add(dataPath, -1, "partition %d at uncompressed position %d does not hold the indexed key %x", pp.ordinal, pp.position, pp.key)
		return
	}
	if rc.table != nil {
		var promoted []byte
		if pp.hasPromoted {
			promoted = pp.promoted
		}
		rc.partition(b, pp.position, promoted)
	}
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
	mism, err := bigindex.VerifySummary(s, bigindex.NewScanner(f, indexBufferSize))
	if err != nil {
		return // index damage is reported by the index pass
	}
	for _, m := range mism {
		v.add(path, -1, "sample %d (Index.db offset %d): %s", m.Sample, m.IndexOffset, m.What)
	}
}
