package encoding

import "math"

// DeletionTime is Cassandra's DeletionTime, the one value type for every place sluice meets
// one: partition headers, row and range tombstone deletions, BIG promoted indexes and BTI
// row index entries. The encodings differ (legacy i32 local deletion time before oa, the
// u32 form and the one-byte LIVE from oa, delta-encoded inside rows); each codec converts
// to and from this form, and LIVE is always Live in memory.
type DeletionTime struct {
	MarkedForDeleteAt int64
	LocalDeletionTime int64 // seconds since the Unix epoch
}

// Live is DeletionTime.LIVE: deletes nothing.
var Live = DeletionTime{MarkedForDeleteAt: math.MinInt64, LocalDeletionTime: math.MaxInt64}

// IsLive reports whether d deletes nothing: no timestamp is <= math.MinInt64 but itself, and
// Cassandra never writes a real tombstone at that timestamp. (Inside rows a complex-deletion
// slot may read back with that timestamp and a writer-dependent local deletion time; it is
// live too.)
func (d DeletionTime) IsLive() bool { return d.MarkedForDeleteAt == math.MinInt64 }
