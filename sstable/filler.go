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
