package sstable

import (
	"bytes"
	"fmt"

	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/rows"
)

// checkRowIndex checks the BTI row index entry of a partition against its rows (extended
// verify): Rows.db is derived from Data.db, so what it says can be derived again. The stored
// block offsets must fall where unfiltereds start, the blocks must be cut by one block size
// as the writer cuts them (a block closes at the first unfiltered that brings it to the
// size), and the entry rebuilt from the rows with those blocks (RowIndexWriter: separators,
// offsets, open range tombstones, data position, block count, partition deletion) must read
// back the same as the stored one. spans are the partition's unfiltereds, endOffset where its
// end-of-partition flag starts.
func (rc *rowChecker) checkRowIndex(key []byte, position, at int64, spans []unfilteredSpan, endOffset int64, deletion rows.DeletionTime) {
	path := rc.v.t.Path(descriptor.Rows)
	rowsDB := rc.v.btiRows
	stored, err := readRowIndex(rowsDB, at, &rc.walker)
	if err != nil {
		return // reported by the index pass
	}
	fail := func(format string, args ...any) {
		rc.v.add(path, at, "row index of the partition at Data.db position %d: %s", position, fmt.Sprintf(format, args...))
	}
	if !bytes.Equal(stored.entry.Key, key) {
		fail("entry key %x, the partition's key is %x", stored.entry.Key, key)
		return
	}
	if len(stored.blocks) != stored.entry.BlockCount+1 || stored.entry.BlockCount < 2 {
		return // reported by the index pass
	}
	// The first unfiltered of each block.
	first := make([]int, stored.entry.BlockCount+1)
	j := 0
	for i := 0; i < stored.entry.BlockCount; i++ {
		off := stored.blocks[i].Offset
		for j < len(spans) && spans[j].start < off {
			j++
		}
		if j == len(spans) || spans[j].start != off || (i == 0 && j != 0) {
			fail("block %d starts at partition offset %d, where no unfiltered starts", i, off)
			return
		}
		first[i] = j
	}
	first[stored.entry.BlockCount] = len(spans)
	// One block size S explains every cut: each block but the last reaches S with its last
	// unfiltered and no block reaches it earlier.
	var below, reach int64 = 0, 1 << 62
	for i := 0; i < stored.entry.BlockCount; i++ {
		a, z := first[i], first[i+1]-1
		if z < a {
			fail("block %d holds no unfiltered", i)
			return
		}
		start := spans[a].start
		if z > a {
			below = max(below, spans[z-1].end-start)
		}
		if i < stored.entry.BlockCount-1 {
			reach = min(reach, spans[z].end-start)
		}
	}
	if below >= reach {
		fail("blocks are not cut by one block size (a block reached %d bytes before closing, another closed at %d)", below, reach)
		return
	}
	// Rebuild the entry from the rows with the stored cuts and compare what it reads back.
	types := rc.v.t.Statistics.Header.ClusteringTypes
	var buf bytes.Buffer
	w := bti.NewRowIndexWriter(&buf)
	for i := 0; i < stored.entry.BlockCount; i++ {
		a, z := spans[first[i]], spans[first[i+1]-1]
		f, err1 := bti.AppendClusteringComparable(nil, types, a.clustering, bti.ClusteringKind(a.kind))
		l, err2 := bti.AppendClusteringComparable(nil, types, z.clustering, bti.ClusteringKind(z.kind))
		if err1 != nil || err2 != nil {
			return // a clustering type sluice cannot order byte-comparably: nothing to rebuild with
		}
		if err := w.AddBlock(f, l, a.start, indexDeletion(a.open)); err != nil {
			fail("block %d: %v", i, err)
			return
		}
	}
	pos, err := w.FinishPartition(key, position, endOffset, indexDeletion(deletion))
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fail("rebuilding it: %v", err)
		return
	}
	var rw bti.RowIndexWalker
	want, err := readRowIndex(buf.Bytes(), pos, &rw)
	if err != nil {
		fail("reading the rebuilt entry: %v", err)
		return
	}
	se, we := stored.entry, want.entry
	switch {
	case se.DataPosition != we.DataPosition:
		fail("data position %d, the partition is at %d", se.DataPosition, we.DataPosition)
	case se.Deletion != we.Deletion:
		fail("partition deletion %v, the partition header has %v", se.Deletion, we.Deletion)
	default:
		for i := range want.blocks {
			s, w := stored.blocks[i], want.blocks[i]
			if !bytes.Equal(s.Separator, w.Separator) || s.Offset != w.Offset || s.OpenMarker != w.OpenMarker {
				fail("separator %d is (%x, offset %d, open %v); the rows give (%x, offset %d, open %v)",
					i, s.Separator, s.Offset, s.OpenMarker, w.Separator, w.Offset, w.OpenMarker)
				return
			}
		}
	}
}

type rowIndex struct {
	entry  bti.RowIndexEntry
	blocks []bti.RowIndexBlock
}

// readRowIndex reads the entry at pos of a Rows.db image and every block of its trie.
func readRowIndex(b []byte, pos int64, w *bti.RowIndexWalker) (rowIndex, error) {
	e, err := bti.ReadRowIndexEntry(b, pos)
	if err != nil {
		return rowIndex{}, err
	}
	ri := rowIndex{entry: e}
	err = w.Walk(b, e, func(bl bti.RowIndexBlock) error {
		bl.Separator = append([]byte(nil), bl.Separator...)
		ri.blocks = append(ri.blocks, bl)
		return nil
	})
	return ri, err
}
