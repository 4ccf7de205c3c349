package rows

import "math"

// Facts is what unfiltereds contribute to sstable metadata, fed the way Cassandra's
// MetadataCollector is (Rows.collectStats and MetadataCollector.update): a non-empty row
// liveness adds its timestamp, TTL and local expiration time; every cell adds its timestamp,
// TTL (NoTTL included) and local deletion time (NoDeletionTime included); every non-live
// deletion (partition, row, complex column, marker) adds its markedForDeleteAt and local
// deletion time.
//
// The Writer fills one Facts per call; readers can fill their own with the Add methods.
// Nothing allocates once DropTimes has grown.
type Facts struct {
	// Timestamp bounds; MinTimestamp > MaxTimestamp when nothing carried a timestamp.
	MinTimestamp, MaxTimestamp int64
	// Local deletion time bounds, over the same values as DropTimes plus NoDeletionTime for
	// live cells and non-expiring liveness.
	MinLocalDeletionTime, MaxLocalDeletionTime int64
	// TTL bounds; MinTTL > MaxTTL when nothing carried a TTL.
	MinTTL, MaxTTL int32
	// DropTimes lists every local deletion time other than NoDeletionTime, in order: the
	// input of the tombstone drop-time histogram.
	DropTimes []int64
	// Rows counts regular rows (0 or 1 for a Writer call), Cells the cells (each element of
	// a complex column is one), Columns the columns present in rows.
	Rows, Cells, Columns int
	// Size is the number of bytes the Writer call appended.
	Size int64
}

// Reset empties f, keeping DropTimes' storage.
func (f *Facts) Reset() {
	*f = Facts{
		MinTimestamp: math.MaxInt64, MaxTimestamp: math.MinInt64,
		MinLocalDeletionTime: math.MaxInt64, MaxLocalDeletionTime: math.MinInt64,
		MinTTL: math.MaxInt32, MaxTTL: math.MinInt32,
		DropTimes: f.DropTimes[:0],
	}
}

func (f *Facts) timestamp(ts int64) {
	f.MinTimestamp = min(f.MinTimestamp, ts)
	f.MaxTimestamp = max(f.MaxTimestamp, ts)
}

func (f *Facts) ttl(ttl int32) {
	f.MinTTL = min(f.MinTTL, ttl)
	f.MaxTTL = max(f.MaxTTL, ttl)
}

func (f *Facts) ldt(ldt int64) {
	f.MinLocalDeletionTime = min(f.MinLocalDeletionTime, ldt)
	f.MaxLocalDeletionTime = max(f.MaxLocalDeletionTime, ldt)
	if ldt != NoDeletionTime {
		f.DropTimes = append(f.DropTimes, ldt)
	}
}

// AddDeletion adds a deletion time unless it is live.
func (f *Facts) AddDeletion(d DeletionTime) {
	if d.IsLive() {
		return
	}
	f.timestamp(d.MarkedForDeleteAt)
	f.ldt(d.LocalDeletionTime)
}

// AddLiveness adds a row's primary key liveness unless it is empty.
func (f *Facts) AddLiveness(l Liveness) {
	if l.IsEmpty() {
		return
	}
	f.timestamp(l.Timestamp)
	f.ttl(l.TTL)
	if l.TTL == NoTTL {
		f.ldt(NoDeletionTime)
	} else {
		f.ldt(l.LocalExpirationTime)
	}
}

// AddCell adds one cell.
func (f *Facts) AddCell(c *Cell) {
	f.timestamp(c.Timestamp)
	f.ttl(c.TTL)
	f.ldt(c.LocalDeletionTime)
	f.Cells++
}

// AddRow adds a static or regular row and everything in it.
func (f *Facts) AddRow(r *Row) {
	if !r.Static {
		f.Rows++
	}
	f.AddLiveness(r.Liveness)
	f.AddDeletion(r.Deletion)
	for i := range r.Columns {
		cd := &r.Columns[i]
		f.AddDeletion(cd.Deletion)
		for j := range cd.Cells {
			f.AddCell(&cd.Cells[j])
		}
	}
	f.Columns += len(r.Columns)
}

// AddMarker adds a range tombstone marker's deletion time(s).
func (f *Facts) AddMarker(m *Marker) {
	f.AddDeletion(m.Deletion)
	if m.Kind.IsBoundary() {
		f.AddDeletion(m.Start)
	}
}
