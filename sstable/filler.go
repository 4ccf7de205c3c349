package sstable

import (
	"math"

	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// A filler partition is what sluice writes where a zero-copy sstable's runs leave a gap, so that
// every byte of its data belongs to a partition its index addresses: a partition that holds
// nothing after purging. Either it is empty (no partition deletion, no static row content, no
// row, no marker: Cassandra never writes one, as an empty partition is dropped before it
// reaches a writer), or each of its rows (or its static row) holds nothing but cells that
// expired long ago (FillerDeletionTime) and were written at FillerTimestamp, below any real
// write: such a cell shadows nothing, reads return nothing for it, and compaction and repair
// validation purge it and the partition with it. Fillers are counted apart from real
// partitions everywhere.

// FillerTimestamp is the write time of a filler's cells: below every real timestamp, so that
// such a cell never wins against a real one, whatever partition it meets.
const FillerTimestamp int64 = math.MinInt64 + 1

// FillerDeletionTime is when a filler's cells expired (seconds since the epoch, 1970-01-12).
const FillerDeletionTime int64 = 1_000_000

// IsFiller reports whether b, the Data.db bytes of one partition (more may follow it), is a
// filler partition.
func IsFiller(t *schema.Table, v version.Version, b []byte) bool {
	_, ok := fillerSize(t, v, b)
	return ok
}

// fillerSize is the size of the filler partition at the start of b, or false when it is none.
func fillerSize(t *schema.Table, v version.Version, b []byte) (int, bool) {
	var cur rows.Cursor
	if cur.ResetTrailing(t, v, b) != nil || !cur.Deletion().IsLive() {
		return 0, false
	}
	if s := cur.Static(); s != nil && !s.IsEmpty() && !FillerRow(s) {
		return 0, false
	}
	for cur.Next() {
		if cur.Kind() != rows.KindRow || !FillerRow(cur.Row()) {
			return 0, false
		}
	}
	if cur.Err() != nil || !cur.Done() {
		return 0, false
	}
	return cur.End(), true
}

// FillerRow reports whether r holds nothing but a filler's expired cells.
func FillerRow(r *rows.Row) bool {
	if !r.Liveness.IsEmpty() || !r.Deletion.IsLive() || len(r.Columns) == 0 {
		return false
	}
	for _, c := range r.Columns {
		if !c.Deletion.IsLive() {
			return false
		}
		for _, cell := range c.Cells {
			if cell.Timestamp != FillerTimestamp || cell.TTL <= 0 || cell.Tombstone || cell.LocalDeletionTime != FillerDeletionTime {
				return false
			}
		}
	}
	return true
}

// ScanPartitionsMarked is ScanPartitions that also says of each partition whether it is a
// filler (IsFiller). A partition is held back until the next one's position gives its size,
// and only one of exactly a filler's size (an empty partition with its key) is read.
func (t *Table) ScanPartitionsMarked(fn func(p *Partition, filler bool) error) error {
	table, err := schema.Compile(t.Statistics.Header)
	if err != nil {
		return err
	}
	over, err := EmptyOverhead(table, t.Version()) // an empty partition less its key
	if err != nil {
		return err
	}
	// A key of a type that takes any length sizes an empty filler; other fillers hold one
	// expired cell whose value sized them, and are at most a few chunks long.
	var maxCell int64
	if !anyLengthKey(table.Key) && t.Compression != nil {
		maxCell = 3*int64(t.Compression.ChunkLength) + 64<<10
	}
	var held Partition
	var key, promoted []byte
	have := false
	flush := func(end int64) error {
		filler := false
		if size := end - held.Position; size == over+int64(len(held.Key)) || size <= maxCell {
			b := make([]byte, size)
			if _, err := t.Data.ReadAt(b, held.Position); err != nil {
				return err
			}
			filler = IsFiller(table, t.Version(), b)
		}
		return fn(&held, filler)
	}
	err = t.ScanPartitions(func(p *Partition) error {
		if have {
			if err := flush(p.Position); err != nil {
				return err
			}
		}
		key, promoted = append(key[:0], p.Key...), append(promoted[:0], p.Promoted...)
		held = *p
		held.Key = key
		if p.Promoted == nil {
			held.Promoted = nil
		} else {
			held.Promoted = promoted
		}
		if held.Token.Bytes != nil {
			held.Token.Bytes = key
		}
		have = true
		return nil
	})
	if err == nil && have {
		err = flush(t.DataLength())
	}
	return err
}

// ScanDataPartitions is ScanPartitions without filler partitions: the partitions that hold data.
func (t *Table) ScanDataPartitions(fn func(p *Partition) error) error {
	return t.ScanPartitionsMarked(func(p *Partition, filler bool) error {
		if filler {
			return nil
		}
		return fn(p)
	})
}

// anyLengthKey reports a partition key type whose values take any length (text, ascii, blob):
// its fillers are empty partitions sized by their keys.
func anyLengthKey(k *schema.Type) bool {
	if k == nil || k.Kind != schema.KindScalar {
		return false
	}
	switch k.ShortName() {
	case "UTF8Type", "AsciiType", "BytesType":
		return true
	}
	return false
}

// EmptyPartition appends a partition with key and nothing in it: the key, the LIVE deletion,
// the empty static row where the table has statics, the end-of-partition flag.
func EmptyPartition(w *rows.Writer, dst, key []byte) ([]byte, error) {
	dst, err := w.BeginPartition(dst, key, rows.Live)
	if err == nil {
		dst, err = w.EndPartition(dst)
	}
	return dst, err
}

// EmptyOverhead is the size of an empty partition of table t in version v, less its key.
func EmptyOverhead(t *schema.Table, v version.Version) (int64, error) {
	b, err := EmptyPartition(rows.NewWriter(t, v), nil, nil)
	return int64(len(b)), err
}
