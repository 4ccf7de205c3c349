package sstable

import (
	"errors"

	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
)

// rowChecker is the extended part of Verify: it decodes every unfiltered of every partition
// with the row cursor, which checks row sizes, previous-row sizes, flags and cell layouts, and
// that each partition ends with the end-of-partition marker exactly at the next partition.
//
// Without Extended it still walks each partition to its end-of-partition flag, which is how a
// multi-run sstable's dead regions are found: a partition may end before the next index
// position (or the end of the data), and the bytes between belong to no partition.
type rowChecker struct {
	v        *verifier
	table    *schema.Table
	extended bool
	cur      rows.Cursor
	rows     int64
	spans    []unfilteredSpan
}

func newRowChecker(v *verifier) *rowChecker {
	table, err := schema.Compile(v.t.Statistics.Header)
	if err != nil {
		if v.opts.Extended {
			v.add(v.t.Path(descriptor.Statistics), -1, "serialization header cannot drive the row reader: %v", err)
		}
		return &rowChecker{}
	}
	return &rowChecker{v: v, table: table, extended: v.opts.Extended}
}

// partition checks the partition at the head of b, which starts at uncompressed Data.db
// position start and runs at most to the end of b (the next index position), and its BIG
// promoted index when it has one. It returns the partition's length; what follows it in b is
// a dead region.
func (rc *rowChecker) partition(b []byte, start int64, promoted []byte) int64 {
	dataPath := rc.v.t.Path(descriptor.Data)
	err := rc.cur.ResetTrailing(rc.table, rc.v.t.Version(), b)
	if st := rc.cur.Static(); err == nil && st != nil && len(st.Columns) > 0 && rc.extended {
		rc.rows++ // compact tables without clustering keep their values in the static row
	}
	rc.spans = rc.spans[:0]
	for err == nil && rc.cur.Next() {
		if !rc.extended {
			continue
		}
		rc.rows++
		if promoted != nil {
			s, _ := rc.cur.Span()
			var cl [][]byte
			if rc.cur.Kind() == rows.KindRow {
				cl = rc.cur.Row().Clustering
			} else {
				cl = rc.cur.Marker().Values
			}
			rc.spans = append(rc.spans, unfilteredSpan{start: int64(s), clustering: append([][]byte(nil), cl...)})
		}
	}
	if err == nil {
		err = rc.cur.Err()
	}
	if err == nil && !rc.cur.Done() {
		err = errors.New("partition ends without its end-of-partition marker")
	}
	size := int64(len(b))
	if err == nil {
		size = int64(rc.cur.End())
	}
	end := start + size
	if err == nil && promoted != nil && rc.extended {
		if perr := rc.checkPromoted(promoted, rc.spans, rc.cur.HeaderSize(), end-start); perr != nil {
			rc.v.add(rc.v.t.Path(descriptor.Index), -1, "promoted index of the partition at uncompressed position %d: %v", start, perr)
		}
	}
	if err != nil {
		var ce *rows.CorruptError
		if errors.As(err, &ce) {
			rc.v.add(dataPath, -1, "partition at uncompressed position %d: %v (uncompressed position %d)", start, err, start+int64(ce.Offset))
			return size
		}
		rc.v.add(dataPath, -1, "partition at uncompressed position %d: %v", start, err)
	}
	return size
}
