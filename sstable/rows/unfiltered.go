package rows

import (
	"math"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// Sentinels of the row model, matching Cassandra's LivenessInfo and Cell constants.
const (
	// NoTimestamp marks a row without primary key liveness (LivenessInfo.NO_TIMESTAMP).
	NoTimestamp int64 = math.MinInt64
	// NoTTL marks a non-expiring row or cell.
	NoTTL int32 = 0
	// NoDeletionTime marks a cell or liveness that neither expires nor is a tombstone
	// (Cell.NO_DELETION_TIME in Cassandra 5.0).
	NoDeletionTime int64 = math.MaxInt64
)

// DeletionTime is a tombstone's (markedForDeleteAt, localDeletionTime).
//
// Inside rows, deletion times are delta-encoded against the SerializationHeader and are kept
// exactly as Cassandra's arithmetic yields them (minimum + 32-bit delta for the local
// deletion time), so that re-serializing reproduces the bytes. A row's complex-deletion slot
// written for a column without a deletion reads back with MarkedForDeleteAt == math.MinInt64
// and a writer-dependent local deletion time; IsLive reports it live either way.
type DeletionTime = encoding.DeletionTime

// Live is DeletionTime.LIVE: deletes nothing.
var Live = encoding.Live

// Liveness is a row's primary key liveness info.
type Liveness struct {
	Timestamp int64 // NoTimestamp when the row has none
	TTL       int32 // NoTTL unless expiring
	// LocalExpirationTime is when an expiring row expires; NoDeletionTime unless TTL != NoTTL.
	LocalExpirationTime int64
}

// EmptyLiveness is LivenessInfo.EMPTY.
var EmptyLiveness = Liveness{Timestamp: NoTimestamp, TTL: NoTTL, LocalExpirationTime: NoDeletionTime}

// IsEmpty reports a row without primary key liveness.
func (l Liveness) IsEmpty() bool { return l.Timestamp == NoTimestamp }

// Cell is one cell: the value of a simple column, or one element of a complex column.
type Cell struct {
	Timestamp int64
	// LocalDeletionTime is when a tombstone was created or an expiring cell expires;
	// NoDeletionTime for live non-expiring cells.
	LocalDeletionTime int64
	TTL               int32 // NoTTL unless expiring
	Tombstone         bool
	// Path is the CellPath of a complex column's cell (a list timeuuid, set element, map key
	// or UDT field index); nil for simple columns.
	Path []byte
	// Value is empty for tombstones and empty values. For counters it is the counter context.
	Value []byte
}

// ColumnData is one column present in a row.
type ColumnData struct {
	// Column indexes schema.Table.Static (static rows) or schema.Table.Regular.
	Column int
	// Deletion is a complex column's deletion; Live when it has none (and for simple columns).
	Deletion DeletionTime
	// Cells holds exactly one cell for a simple column, and any number for a complex one.
	Cells []Cell
}

// Row is a static or regular row.
type Row struct {
	Static bool
	// Clustering holds one value per clustering column (none for the static row). A nil
	// value is null; an empty non-nil value is an empty value.
	Clustering [][]byte
	Liveness   Liveness
	Deletion   DeletionTime // Live unless the row is deleted
	// Shadowable marks a shadowable row deletion (materialized views, deprecated).
	Shadowable bool
	// Columns are the columns present, in header order.
	Columns []ColumnData
}

// IsEmpty reports whether r holds nothing: no liveness, no deletion, no column (what
// Cassandra writes as the static row of a partition without one).
func (r *Row) IsEmpty() bool {
	return r.Liveness.IsEmpty() && r.Deletion.IsLive() && len(r.Columns) == 0
}

// BoundKind is a range tombstone marker's ClusteringPrefix.Kind (its ordinal on disk).
type BoundKind uint8

const (
	ExclEndBound             BoundKind = 0
	InclStartBound           BoundKind = 1
	ExclEndInclStartBoundary BoundKind = 2
	InclEndExclStartBoundary BoundKind = 5
	InclEndBound             BoundKind = 6
	ExclStartBound           BoundKind = 7
	staticClusteringKind               = 3
	clusteringKind                     = 4
	maxBoundKind                       = 7
)

// IsBoundary reports a boundary (closing one range and opening the next) rather than a bound.
func (k BoundKind) IsBoundary() bool {
	return k == ExclEndInclStartBoundary || k == InclEndExclStartBoundary
}

func (k BoundKind) valid() bool {
	return k <= maxBoundKind && k != staticClusteringKind && k != clusteringKind
}

// Marker is a range tombstone marker.
type Marker struct {
	Kind BoundKind
	// Values is the bound's clustering prefix (at most one value per clustering column).
	Values [][]byte
	// Deletion is a bound's deletion time, or for a boundary the deletion of the range it
	// closes (Cassandra's endDeletionTime).
	Deletion DeletionTime
	// Start is, for a boundary only, the deletion of the range it opens.
	Start DeletionTime
}

// Kind is the kind of unfiltered a Cursor is positioned on.
type Kind uint8

const (
	KindRow Kind = iota + 1
	KindMarker
)

// Unfiltered flags (UnfilteredSerializer).
const (
	flagEndOfPartition     = 0x01
	flagIsMarker           = 0x02
	flagHasTimestamp       = 0x04
	flagHasTTL             = 0x08
	flagHasDeletion        = 0x10
	flagHasAllColumns      = 0x20
	flagHasComplexDeletion = 0x40
	flagExtension          = 0x80

	extIsStatic              = 0x01
	extHasShadowableDeletion = 0x02
)

// Cell flags (Cell.Serializer).
const (
	cellIsDeleted       = 0x01
	cellIsExpiring      = 0x02
	cellHasEmptyValue   = 0x04
	cellUseRowTimestamp = 0x08
	cellUseRowTTL       = 0x10
)
