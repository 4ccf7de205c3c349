package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/stats"
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
	// collect recomputes Statistics.db's row-derived fields; incomplete says a partition
	// could not be read whole, so they cannot be compared.
	collect    *stats.Collector
	bounds     clusteringBounds
	incomplete bool
	walker     bti.RowIndexWalker
}

func newRowChecker(v *verifier) *rowChecker {
	table, err := schema.Compile(v.t.Statistics.Header)
	if err != nil {
		if v.opts.Extended {
			v.add(v.t.Path(descriptor.Statistics), -1, "serialization header cannot drive the row reader: %v", err)
		}
		return &rowChecker{}
	}
	return &rowChecker{v: v, table: table, extended: v.opts.Extended, collect: stats.NewCollector(v.t.Version()),
		bounds: newClusteringBounds(v.t.Statistics.Header.ClusteringTypes)}
}

// partition checks the partition at the head of b, which starts at uncompressed Data.db
// position start and runs at most to the end of b (the next index position), and, extended,
// its rows, its BIG promoted index (from the Index.db entry at indexAt) or BTI row index entry
// (rowIndexAt >= 0) when it has one. It returns the partition's length; what follows it in b
// is a dead region.
func (rc *rowChecker) partition(b []byte, start int64, promoted []byte, key []byte, rowIndexAt, indexAt int64) int64 {
	if n, ok := fillerSize(rc.table, rc.v.t.Version(), b); ok {
		// A filler partition holds nothing: counted apart, and no part of the statistics,
		// which describe the data.
		rc.v.report.Fillers++
		return int64(n)
	}
	dataPath := rc.v.t.Path(descriptor.Data)
	err := rc.cur.ResetTrailing(rc.table, rc.v.t.Version(), b)
	c := rc.collect
	if err == nil && rc.extended {
		d := rc.cur.Deletion()
		c.AddKey(key)
		c.PartitionDeletion(d.MarkedForDeleteAt, d.LocalDeletionTime)
	}
	st := rc.cur.Static()
	if err == nil && st != nil && rc.extended {
		collectRow(c, st)
		if len(st.Columns) > 0 {
			rc.rows++ // compact tables without clustering keep their values in the static row
		}
	}
	regular := int64(0)
	rc.spans = rc.spans[:0]
	open := rows.Live
	for err == nil && rc.cur.Next() {
		if !rc.extended {
			continue
		}
		rc.rows++
		if rc.cur.Kind() == rows.KindRow {
			collectRow(c, rc.cur.Row())
			rc.bounds.add(rc.cur.Row().Clustering)
			regular++
		} else {
			collectMarker(c, rc.cur.Marker())
		}
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
	size := int64(len(b))
	if err == nil {
		size = int64(rc.cur.End())
	}
	end := start + size
	if rc.extended {
		rc.extendedChecks(err, st, regular, size, start, end, promoted, key, rowIndexAt, indexAt)
	}
	if err != nil {
		var ce *rows.CorruptError
		if errors.As(err, &ce) {
			at := start + int64(ce.Offset)
			rc.v.add(dataPath, rc.v.dataOffset(at), "partition at uncompressed position %d: %v (uncompressed position %d)", start, err, at)
			return size
		}
		rc.v.add(dataPath, rc.v.dataOffset(start), "partition at uncompressed position %d: %v", start, err)
	}
	return size
}

// extendedChecks finishes the extended checks of a partition of size bytes read with err:
// its statistics, its BTI row index entry and its BIG promoted index.
func (rc *rowChecker) extendedChecks(err error, st *rows.Row, regular, size, start, end int64, promoted, key []byte, rowIndexAt, indexAt int64) {
	if err != nil {
		rc.incomplete = true
		return
	}
	if st != nil && len(st.Columns) > 0 && regular == 0 {
		// Cassandra counts the static row of a compact table without clustering (the
		// partition's only row) in the row statistics.
		rc.collect.Row(int64(len(st.Columns)))
	}
	rc.collect.EndPartition(size)
	if rowIndexAt >= 0 {
		rc.checkRowIndex(key, start, rowIndexAt, rc.spans, size-1, rc.cur.Deletion())
	}
	if promoted != nil {
		if perr := rc.checkPromoted(promoted, rc.spans, rc.cur.HeaderSize(), end-start); perr != nil {
			rc.v.add(rc.v.t.Path(descriptor.Index), indexAt, "promoted index of the partition at uncompressed position %d: %v", start, perr)
		}
	}
}

// checkStats checks the row-derived fields of Statistics.db against what the rows give, once
// every partition was read whole (extended verify). A zero-copy child keeps its parent's
// bounds (timestamps, deletion times, TTLs, clustering values), which still hold for a subset,
// and apportions its parent's row counts, so only what holds for every valid sstable is
// required: each stored bound must cover the rows' (a bound narrower than the rows is damage),
// and a table with rows cannot claim none. Statistics.db of md and me has no checksum; this,
// the cardinality estimator and the partition-size histogram cover what can be recomputed.
func (rc *rowChecker) checkStats() {
	if rc.table == nil || !rc.extended || rc.incomplete || rc.v.t.Statistics.Stats == nil {
		return
	}
	s := rc.v.t.Statistics.Stats
	got := rc.collect.Stats()
	path := rc.v.t.Path(descriptor.Statistics)
	var diffs []string
	bound := func(name string, storedMin, storedMax, rowsMin, rowsMax int64, set bool) {
		if set && (storedMin > rowsMin || storedMax < rowsMax) {
			diffs = append(diffs, fmt.Sprintf("%s [%d, %d] does not cover the rows' [%d, %d]", name, storedMin, storedMax, rowsMin, rowsMax))
		}
	}
	bound("timestamps", s.MinTimestamp, s.MaxTimestamp, got.MinTimestamp, got.MaxTimestamp, rc.collect.HasTimestamps())
	bound("local deletion times", s.MinLocalDeletionTime, s.MaxLocalDeletionTime, got.MinLocalDeletionTime, got.MaxLocalDeletionTime, rc.collect.HasDeletionTimes())
	bound("TTLs", int64(s.MinTTL), int64(s.MaxTTL), int64(got.MinTTL), int64(got.MaxTTL), rc.collect.HasTTLs())
	if got.TotalRows > 0 && s.TotalRows == 0 {
		diffs = append(diffs, fmt.Sprintf("total rows 0, the rows number %d", got.TotalRows))
	}
	if v := rc.v.t.Version(); v.HasLegacyMinMax() && rc.bounds.ok && rc.bounds.seen && len(s.LegacyMinClusteringValues) > 0 {
		for i := range rc.bounds.compMin {
			if i < len(s.LegacyMinClusteringValues) && bytes.Compare(s.LegacyMinClusteringValues[i], rc.bounds.compMin[i]) > 0 {
				diffs = append(diffs, fmt.Sprintf("min clustering value %d %x is above the rows' %x", i, s.LegacyMinClusteringValues[i], rc.bounds.compMin[i]))
			}
			if i < len(s.LegacyMaxClusteringValues) && bytes.Compare(s.LegacyMaxClusteringValues[i], rc.bounds.compMax[i]) < 0 {
				diffs = append(diffs, fmt.Sprintf("max clustering value %d %x is below the rows' %x", i, s.LegacyMaxClusteringValues[i], rc.bounds.compMax[i]))
			}
		}
	}
	if len(diffs) > 0 {
		rc.v.add(path, -1, "row statistics do not hold for the rows: %s", strings.Join(diffs, "; "))
	}
}
