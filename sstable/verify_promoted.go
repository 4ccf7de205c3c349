package sstable

import (
	"bytes"
	"fmt"

	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
)

// indexInfo is one block of a BIG promoted index.
type indexInfo struct {
	firstKind, lastKind uint8
	first, last         [][]byte
	offset, width       int64
}

// parsePromoted decodes every IndexInfo of a promoted index with the table's clustering types.
func parsePromoted(promoted []byte, t *schema.Table, h bigindex.PromotedHeader, v *verifier) ([]indexInfo, error) {
	blocks := make([]indexInfo, h.BlockCount)
	for i := range blocks {
		at := h.BlockOffset(promoted, i)
		if at < 0 || at > len(promoted) {
			return nil, fmt.Errorf("IndexInfo %d offset %d outside the promoted index", i, at)
		}
		b := promoted[at:]
		var err error
		var n int
		bl := &blocks[i]
		if bl.firstKind, bl.first, n, err = rows.ReadClusteringPrefix(b, t, nil); err != nil {
			return nil, fmt.Errorf("IndexInfo %d first clustering: %w", i, err)
		}
		b = b[n:]
		if bl.lastKind, bl.last, n, err = rows.ReadClusteringPrefix(b, t, nil); err != nil {
			return nil, fmt.Errorf("IndexInfo %d last clustering: %w", i, err)
		}
		r := encoding.NewReader(b[n:])
		bl.offset = int64(r.UVint())
		bl.width = r.Vint() + 64<<10
		if r.Bool() {
			bigindex.ReadDeletionTime(r, v.t.Version())
		}
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("IndexInfo %d: %w", i, err)
		}
	}
	return blocks, nil
}

// checkPromoted compares a partition's promoted index with the unfiltereds the row cursor
// found: each block starts at an unfiltered, names the clusterings of its first and last
// unfiltered, blocks tile the partition from the first unfiltered to its end (the last block
// takes in the end-of-partition flag, as BigFormatPartitionWriter.finish closes it after
// writing the flag), and the header length is where the first unfiltered starts.
func (rc *rowChecker) checkPromoted(promoted []byte, spans []unfilteredSpan, headerSize int, size int64) error {
	h, err := bigindex.CheckPromoted(promoted, rc.v.t.Version())
	if err != nil {
		return err
	}
	if int64(h.HeaderLength) != int64(headerSize) {
		return fmt.Errorf("promoted index header length %d, the partition's rows start at %d", h.HeaderLength, headerSize)
	}
	blocks, err := parsePromoted(promoted, rc.table, h, rc.v)
	if err != nil {
		return err
	}
	next := int64(headerSize)
	j := 0
	for i, bl := range blocks {
		if bl.offset != next {
			return fmt.Errorf("block %d starts at %d, want %d", i, bl.offset, next)
		}
		for j < len(spans) && spans[j].start < bl.offset {
			j++
		}
		if j == len(spans) || spans[j].start != bl.offset {
			return fmt.Errorf("block %d offset %d is not the start of a row or marker", i, bl.offset)
		}
		if !sameClustering(bl.first, spans[j].clustering) {
			return fmt.Errorf("block %d first clustering differs from the row at offset %d", i, bl.offset)
		}
		end := bl.offset + bl.width
		k := j
		for k+1 < len(spans) && spans[k+1].start < end {
			k++
		}
		if !sameClustering(bl.last, spans[k].clustering) {
			return fmt.Errorf("block %d last clustering differs from the row at offset %d", i, spans[k].start)
		}
		next = end
	}
	if next != size {
		return fmt.Errorf("blocks end at %d, the partition at %d", next, size)
	}
	return nil
}

func sameClustering(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) || (a[i] == nil) != (b[i] == nil) {
			return false
		}
	}
	return true
}

// unfilteredSpan records where an unfiltered starts and ends in its partition, its
// clustering and kind (ClusteringPrefix.Kind), and the range tombstone open before it.
type unfilteredSpan struct {
	start, end int64
	kind       uint8
	clustering [][]byte
	open       rows.DeletionTime
}
