package sstable

import (
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// IsFiller reports whether b, the Data.db bytes of one partition (more may follow it), is an
// empty partition: no partition deletion, no static row content, no row and no marker. Cassandra
// never writes one (an empty partition is dropped before it reaches a writer); sluice writes
// them as fillers where a zero-copy child's runs leave a gap, so that every byte of its data
// belongs to a partition its index addresses. They are counted apart from real partitions.
func IsFiller(t *schema.Table, v version.Version, b []byte) bool {
	var cur rows.Cursor
	if cur.ResetTrailing(t, v, b) != nil || cur.Next() || cur.Err() != nil || !cur.Done() {
		return false
	}
	if !cur.Deletion().IsLive() {
		return false
	}
	s := cur.Static()
	return s == nil || s.IsEmpty()
}

// ScanPartitionsMarked is ScanPartitions that also says of each partition whether it is a
// filler (IsFiller). A partition is held back until the next one's position gives its size,
// and only one of exactly a filler's size (an empty partition with its key) is read.
func (t *Table) ScanPartitionsMarked(fn func(p *Partition, filler bool) error) error {
	table, err := schema.Compile(t.Statistics.Header)
	if err != nil {
		return err
	}
	w := rows.NewWriter(table, t.Version())
	empty, err := w.BeginPartition(nil, nil, rows.Live)
	if err == nil {
		empty, err = w.EndPartition(empty)
	}
	if err != nil {
		return err
	}
	over := int64(len(empty)) // an empty partition less its key
	var held Partition
	var key, promoted []byte
	have := false
	flush := func(end int64) error {
		filler := false
		if size := end - held.Position; size == over+int64(len(held.Key)) {
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
