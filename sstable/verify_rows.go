package sstable

import (
	"errors"

	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
)

// rowChecker is the extended part of Verify: it decodes every unfiltered of every partition
// with the row cursor, which checks row sizes, previous-row sizes, flags and cell layouts, and
// that each partition ends with the end-of-partition marker exactly at the next partition.
type rowChecker struct {
	v      *verifier
	table  *schema.Table
	cur    rows.Cursor
	rows   int64
	spans  []unfilteredSpan
	walker bti.RowIndexWalker
}

func newRowChecker(v *verifier) *rowChecker {
	if !v.opts.Extended {
		return &rowChecker{}
	}
	table, err := schema.Compile(v.t.Statistics.Header)
	if err != nil {
		v.add(v.t.Path(descriptor.Statistics), -1, "serialization header cannot drive the row reader: %v", err)
		return &rowChecker{}
	}
	return &rowChecker{v: v, table: table}
}

// partition checks the partition b, which starts at uncompressed Data.db position start, and
// its BIG promoted index or BTI row index entry (rowIndexAt >= 0) when it has one.
func (rc *rowChecker) partition(b []byte, start int64, promoted []byte, key []byte, rowIndexAt int64) {
	dataPath := rc.v.t.Path(descriptor.Data)
	end := start + int64(len(b))
	err := rc.cur.Reset(rc.table, rc.v.t.Version(), b)
	if st := rc.cur.Static(); err == nil && st != nil && len(st.Columns) > 0 {
		rc.rows++ // compact tables without clustering keep their values in the static row
	}
	rc.spans = rc.spans[:0]
	open := rows.Live
	for err == nil && rc.cur.Next() {
		rc.rows++
		if promoted != nil || rowIndexAt >= 0 {
			s, e := rc.cur.Span()
			sp := unfilteredSpan{start: int64(s), end: int64(e), kind: clusteringKind, open: open}
			if rc.cur.Kind() == rows.KindRow {
				sp.clustering = append([][]byte(nil), rc.cur.Row().Clustering...)
			} else {
				m := rc.cur.Marker()
				sp.kind, sp.clustering = uint8(m.Kind), append([][]byte(nil), m.Values...)
				open = openAfter(m)
			}
			rc.spans = append(rc.spans, sp)
		}
	}
	if err == nil {
		err = rc.cur.Err()
	}
	if err == nil && !rc.cur.Done() {
		err = errors.New("partition ends without its end-of-partition marker")
	}
	if err == nil && rowIndexAt >= 0 {
		rc.checkRowIndex(key, start, rowIndexAt, rc.spans, int64(len(b))-1, rc.cur.Deletion())
	}
	if err == nil && promoted != nil {
		if perr := rc.checkPromoted(promoted, rc.spans, rc.cur.HeaderSize(), end-start); perr != nil {
			rc.v.add(rc.v.t.Path(descriptor.Index), -1, "promoted index of the partition at uncompressed position %d: %v", start, perr)
		}
	}
	if err != nil {
		var ce *rows.CorruptError
		if errors.As(err, &ce) {
			at := start + int64(ce.Offset)
			rc.v.add(dataPath, rc.v.dataOffset(at), "partition at uncompressed position %d: %v (uncompressed position %d)", start, err, at)
			return
		}
		rc.v.add(dataPath, rc.v.dataOffset(start), "partition at uncompressed position %d: %v", start, err)
	}
}
