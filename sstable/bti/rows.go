package bti

import (
	"fmt"
	"io"
	"math"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// RowIndexEntry is a Rows.db partition entry (TrieIndexEntry as BtiTableWriter.IndexWriter
// writes it): [u16 len + key][uvint dataPosition][vint rootPos-basePos][uvint blockCount]
// [DeletionTime], where basePos is the position right after the key.
type RowIndexEntry struct {
	Pos                int64  // position of the entry (its key length) in Rows.db
	Key                []byte // raw partition key, aliasing the input
	DataPosition       int64  // Data.db offset of the partition
	DataPositionOffset int64  // Rows.db offset of the dataPosition vint
	DataPositionWidth  int    // its width in bytes, which a patch must keep
	RootOffset         int64  // Rows.db position of the row-index trie root
	BlockCount         int
	Deletion           DeletionTime // partition-level deletion
	End                int64        // first byte after the entry
}

// ReadRowIndexEntry parses the entry at pos in Rows.db. The root must lie before the entry,
// as Cassandra writes the trie first.
func ReadRowIndexEntry(b []byte, pos int64) (RowIndexEntry, error) {
	if pos < 0 || pos >= int64(len(b)) {
		return RowIndexEntry{}, corruptAt(pos, "row index entry position outside Rows.db (size %d)", len(b))
	}
	r := encoding.NewReaderAt(b[pos:], pos)
	e := RowIndexEntry{Pos: pos, Key: r.ShortBytes()}
	base := r.Pos()
	e.DataPositionOffset = base
	dataPos := r.UVint()
	e.DataPositionWidth = int(r.Pos() - base)
	rootDelta := r.Vint()
	deltaPos := r.Pos()
	blocks := r.UVint()
	if err := r.Err(); err != nil {
		return RowIndexEntry{}, fmt.Errorf("row index entry at %d: %w", pos, err)
	}
	if dataPos > math.MaxInt64 {
		return RowIndexEntry{}, corruptAt(base, "data position %d overflows", dataPos)
	}
	if rootDelta < -base || rootDelta >= pos-base {
		return RowIndexEntry{}, corruptAt(deltaPos, "row index root %+d from %d is not before the entry", rootDelta, base)
	}
	if blocks > math.MaxInt32 {
		return RowIndexEntry{}, corruptAt(deltaPos, "block count %d overflows", blocks)
	}
	del, n, err := readDeletionTime(b, 0, r.Pos())
	if err != nil {
		return RowIndexEntry{}, err
	}
	e.DataPosition = int64(dataPos)
	e.RootOffset = base + rootDelta
	e.BlockCount = int(blocks)
	e.Deletion = del
	e.End = r.Pos() + int64(n)
	return e, nil
}

// PatchDataPosition rewrites e's dataPosition in rows in place, as a vint padded to the
// width it had, so nothing else in Rows.db moves (BtiZeroCopySplit does the same).
func PatchDataPosition(rows []byte, e RowIndexEntry, newPos int64) error {
	if newPos < 0 {
		return fmt.Errorf("%w: negative data position %d", ErrInvalid, newPos)
	}
	off, w := e.DataPositionOffset, e.DataPositionWidth
	if w < 1 || w > 9 || off < 0 || off+int64(w) > int64(len(rows)) {
		return corruptAt(off, "data position slot of %d bytes outside Rows.db (size %d)", w, len(rows))
	}
	if _, n := encoding.UVint(rows[off : off+int64(w)]); n != w {
		return corruptAt(off, "data position slot does not hold a %d-byte vint", w)
	}
	if encoding.UVintSize(uint64(newPos)) > w {
		return fmt.Errorf("%w: data position %d needs %d bytes, slot at %d has %d",
			ErrTooLarge, newPos, encoding.UVintSize(uint64(newPos)), off, w)
	}
	encoding.AppendUVintWidth(rows[off:off:off+int64(w)], uint64(newPos), w)
	return nil
}

// RowIndexBlock is one row-index trie entry: the separator (trie path) at which a block of
// the partition starts, the block's offset from the partition start, and the range
// tombstone open at the block start (Live when none). The last entry of a partition is the
// nudged separator after the last block; its Offset is where the partition's
// end-of-partition marker starts.
type RowIndexBlock struct {
	Separator  []byte
	Offset     int64
	OpenMarker DeletionTime
}

// rowPayload decodes a row-index payload (RowIndexReader.readPayload) from the node's bytes,
// which run to the end of the trie area or maxPayloadSize past the node.
func rowPayload(nd *node) (int64, DeletionTime, error) {
	b, pp, size := nd.b, nd.payload, nd.flags&^flagOpenMarker
	if pp+size > len(b) {
		return 0, DeletionTime{}, corruptAt(nd.pos+int64(pp), "row index payload of %d bytes runs past the trie", size)
	}
	var off int64
	if size > 0 {
		off = readSized(b[pp : pp+size])
	}
	del := Live
	if nd.flags&flagOpenMarker != 0 {
		var err error
		if del, _, err = readDeletionTime(b, nd.pos, nd.pos+int64(pp+size)); err != nil {
			return 0, DeletionTime{}, err
		}
	}
	return off, del, nil
}

// RowIndexWalker walks row-index tries in separator order, reusing its buffers.
type RowIndexWalker struct {
	walker trieWalker
}

// Walk calls fn for each entry of the row-index trie of e (BlockCount+1 entries for a
// Cassandra-written partition). Nodes must lie before the entry. b.Separator is reused.
func (w *RowIndexWalker) Walk(rows []byte, e RowIndexEntry, fn func(b RowIndexBlock) error) error {
	if e.Pos < 0 || e.Pos > int64(len(rows)) {
		return corruptAt(e.Pos, "row index entry position outside Rows.db (size %d)", len(rows))
	}
	// Rows.db is held whole: it grows with the data (only partitions of more than one index
	// block have an entry), not with the partition count.
	r := memTrie(rows[:e.Pos])
	return w.walker.walk(&r, e.RootOffset, func(nd *node, prefix []byte) error {
		off, del, err := rowPayload(nd)
		if err != nil {
			return err
		}
		return fn(RowIndexBlock{Separator: prefix, Offset: off, OpenMarker: del})
	})
}

// RowIndexWriter writes Rows.db as BtiTableWriter does: for each partition with more than
// one index block, its row-index trie (RowIndexWriter: separators of the shortest length
// with prevLast < separator <= first) and then its entry. Output goes to w in pieces of
// about 64 KiB; Flush writes the rest. A writer is not safe for concurrent use.
type RowIndexWriter struct {
	out     pagedOutput
	trie    *trieWriter
	prevMax []byte
	prevSep []byte
	sep     []byte
	blocks  int
}

// NewRowIndexWriter returns a writer whose Rows.db starts at offset 0 of w.
func NewRowIndexWriter(w io.Writer) *RowIndexWriter {
	rw := &RowIndexWriter{out: pagedOutput{w: w}}
	rw.trie = newTrieWriter(&rw.out, rowPayloads)
	return rw
}

// Position is the Rows.db size written so far (including buffered bytes).
func (w *RowIndexWriter) Position() int64 { return w.out.position() }

// AddBlock records the next index block of the current partition: the ByteComparable
// forms of its first and last clusterings (AppendClusteringComparable), its offset from the
// partition start, and the range tombstone open at its start (Live when none). Blocks come
// in clustering order; first and last are copied.
func (w *RowIndexWriter) AddBlock(first, last []byte, offset int64, openMarker DeletionTime) error {
	if offset < 0 || nonZeroSize(offset) >= 8 {
		return fmt.Errorf("%w: block offset %d", ErrTooLarge, offset)
	}
	if !openMarker.IsLive() && openMarker.MarkedForDeleteAt < 0 {
		return fmt.Errorf("%w: open marker timestamp %d is negative", ErrInvalid, openMarker.MarkedForDeleteAt)
	}
	w.sep = w.sep[:0]
	if w.blocks > 0 {
		// ByteComparable.separatorGt(prevMax, first): the common prefix, then prevMax's next
		// byte plus one (0 if prevMax ended there).
		l := commonPrefix(w.prevMax, first)
		if l == len(first) || (l < len(w.prevMax) && w.prevMax[l] > first[l]) {
			return fmt.Errorf("%w: block starts at %x, not after %x", ErrUnsorted, first, w.prevMax)
		}
		w.sep = append(w.sep, first[:l]...)
		if l < len(w.prevMax) {
			w.sep = append(w.sep, w.prevMax[l]+1)
		} else {
			w.sep = append(w.sep, 0)
		}
	}
	if err := w.trie.add(w.sep, payload{set: true, pos: offset, del: openMarker}); err != nil {
		return err
	}
	w.prevSep = append(w.prevSep[:0], w.sep...)
	w.prevMax = append(w.prevMax[:0], last...)
	w.blocks++
	return nil
}

// FinishPartition ends the current partition. With two or more blocks it adds the nudged
// end separator carrying endOffset (where the end-of-partition marker starts, relative to
// the partition), writes the rest of the trie and the entry, and returns the entry's
// position: the value for PartitionIndexBuilder.Add. With fewer blocks a row index adds no
// information, nothing is written and it returns ^dataPosition.
func (w *RowIndexWriter) FinishPartition(key []byte, dataPosition, endOffset int64, deletion DeletionTime) (int64, error) {
	blocks := w.blocks
	w.blocks = 0
	if blocks <= 1 {
		w.trie.reset()
		return ^dataPosition, nil
	}
	if dataPosition < 0 || len(key) > math.MaxUint16 {
		return 0, fmt.Errorf("%w: data position %d, key of %d bytes", ErrInvalid, dataPosition, len(key))
	}
	if !deletion.IsLive() && deletion.MarkedForDeleteAt < 0 {
		return 0, fmt.Errorf("%w: partition deletion timestamp %d is negative", ErrInvalid, deletion.MarkedForDeleteAt)
	}
	// RowIndexWriter.complete: nudge prevMax at the first byte where it leaves prevSep.
	i := commonPrefix(w.prevMax, w.prevSep)
	if i == len(w.prevMax) {
		return 0, fmt.Errorf("%w: last clustering %x does not follow separator %x", ErrUnsorted, w.prevMax, w.prevSep)
	}
	w.sep = append(w.sep[:0], w.prevMax[:i]...)
	for ; i < len(w.prevMax) && w.prevMax[i] == 0xFF; i++ {
		w.sep = append(w.sep, 0xFF)
	}
	if i < len(w.prevMax) {
		w.sep = append(w.sep, w.prevMax[i]+1)
	} else {
		w.sep = append(w.sep, 0)
	}
	if err := w.addEnd(endOffset); err != nil {
		return 0, err
	}
	root, err := w.trie.finish()
	w.trie.reset()
	if err != nil {
		return 0, err
	}
	o := &w.out
	entry := o.position()
	o.buf = encoding.AppendShortBytes(o.buf, key)
	base := o.position()
	o.buf = encoding.AppendUVint(o.buf, uint64(dataPosition))
	o.buf = encoding.AppendVint(o.buf, root-base)
	o.buf = encoding.AppendUVint(o.buf, uint64(blocks))
	o.buf = appendDeletion(o.buf, deletion)
	o.maybeFlush()
	return entry, o.err
}

// addEnd adds the end separator prepared in w.sep.
func (w *RowIndexWriter) addEnd(endOffset int64) error {
	if endOffset < 0 || nonZeroSize(endOffset) >= 8 {
		return fmt.Errorf("%w: end offset %d", ErrTooLarge, endOffset)
	}
	return w.trie.add(w.sep, payload{set: true, pos: endOffset, del: Live})
}

// Flush writes buffered bytes to the underlying writer.
func (w *RowIndexWriter) Flush() error { return w.out.flush() }
