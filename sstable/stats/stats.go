package stats

import (
	"math"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/version"
)

// NoDeletionTime is Cell.NO_DELETION_TIME: the local deletion time of data that is not
// deleted. On disk it is Integer.MAX_VALUE before oa and 0xFFFFFFFF (an unsigned int) from oa.
const NoDeletionTime = math.MaxInt64

// CommitLogPosition is a commit log segment id and position. NoPosition
// (CommitLogPosition.NONE) is what sstables not written from a memtable carry.
type CommitLogPosition struct {
	SegmentID int64
	Position  int32
}

// NoPosition is CommitLogPosition.NONE.
var NoPosition = CommitLogPosition{SegmentID: -1, Position: 0}

// CommitLogInterval is one [Start, End] range of an IntervalSet<CommitLogPosition>.
type CommitLogInterval struct {
	Start, End CommitLogPosition
}

// Stats is the STATS component (StatsMetadata). Fields a version does not store are ignored
// by Append and left zero by Parse; the comment on each says which versions carry it.
type Stats struct {
	EstimatedPartitionSize         EstimatedHistogram
	EstimatedCellPerPartitionCount EstimatedHistogram

	// CommitLogUpperBound is commitLogIntervals.upperBound() (all versions);
	// CommitLogLowerBound its lowerBound() (mb+); CommitLogIntervals the whole set (mc+).
	// Cassandra derives the bounds from the set; they are stored separately here so any file
	// round-trips.
	CommitLogUpperBound CommitLogPosition
	CommitLogLowerBound CommitLogPosition
	CommitLogIntervals  []CommitLogInterval

	MinTimestamp, MaxTimestamp int64

	// MinLocalDeletionTime and MaxLocalDeletionTime are seconds since the Unix epoch, or
	// NoDeletionTime. Before oa they are stored as i32 (Integer.MAX_VALUE for none, values
	// clamped to MAX_VALUE-1); from oa as u32 (0xFFFFFFFF for none).
	MinLocalDeletionTime, MaxLocalDeletionTime int64

	MinTTL, MaxTTL int32

	// CompressionRatio is compressed/uncompressed Data.db length, or -1.0 when uncompressed.
	// The exact bit pattern is kept.
	CompressionRatio float64

	TombstoneDropTimes TombstoneHistogram

	// TombstonePadding: the body ends with 4 zero bytes per tombstone-histogram bin (oa/da).
	// Cassandra 5.0's HistogramSerializer.serializedSize counts 16 bytes a bin but writes 12,
	// and MetadataSerializer writes the whole pre-sized buffer, so 5.0 files with bins carry
	// the slack inside the component (and its CRC). NewStats sets it for oa/da.
	TombstonePadding bool

	SSTableLevel int32
	RepairedAt   int64

	// LegacyMinClusteringValues and LegacyMaxClusteringValues are the old min/max clustering
	// value lists (m*, n*, including nc).
	LegacyMinClusteringValues [][]byte
	LegacyMaxClusteringValues [][]byte

	// ClusteringTypes and CoveredClustering are the improved min/max (nc+, BTI): the
	// clustering marshal types, then the covered Slice serialised with them.
	ClusteringTypes   []string
	CoveredClustering Slice

	HasLegacyCounterShards bool
	TotalColumnsSet        int64
	TotalRows              int64

	PendingRepair *UUID // na+ (nil: none)
	IsTransient   bool  // na+

	OriginatingHostID *UUID // me+ within m*, nb+, BTI (nil: none)

	HasPartitionLevelDeletions bool // nc+, BTI

	FirstKey, LastKey []byte // nc+, BTI da: raw partition keys

	TokenSpaceCoverage float64 // oa+, BTI da; NaN when unknown
}

func parseStats(r *encoding.Reader, v version.Version) *Stats {
	s := &Stats{}
	uintLDT := v.HasUIntDeletionTime()
	s.EstimatedPartitionSize = parseEstimatedHistogram(r)
	s.EstimatedCellPerPartitionCount = parseEstimatedHistogram(r)
	s.CommitLogUpperBound = parsePosition(r)
	s.MinTimestamp = r.I64()
	s.MaxTimestamp = r.I64()
	s.MinLocalDeletionTime = decodeLDT(r.U32(), uintLDT)
	s.MaxLocalDeletionTime = decodeLDT(r.U32(), uintLDT)
	s.MinTTL = r.I32()
	s.MaxTTL = r.I32()
	s.CompressionRatio = readF64(r)
	s.TombstoneDropTimes = parseTombstoneHistogram(r, uintLDT)
	s.SSTableLevel = r.I32()
	s.RepairedAt = r.I64()
	if v.HasLegacyMinMax() {
		s.LegacyMinClusteringValues = parseLegacyValues(r)
		s.LegacyMaxClusteringValues = parseLegacyValues(r)
	} else if v.HasImprovedMinMax() {
		s.ClusteringTypes, s.CoveredClustering = parseImprovedMinMax(r)
	}
	s.HasLegacyCounterShards = readBool(r)
	s.TotalColumnsSet = r.I64()
	s.TotalRows = r.I64()
	if v.HasCommitLogLowerBound() {
		s.CommitLogLowerBound = parsePosition(r)
	}
	if v.HasCommitLogIntervals() {
		if n := r.Count("commit log intervals", 24); n > 0 {
			s.CommitLogIntervals = make([]CommitLogInterval, n)
			for i := range s.CommitLogIntervals {
				s.CommitLogIntervals[i] = CommitLogInterval{Start: parsePosition(r), End: parsePosition(r)}
			}
		}
	}
	if v.HasPendingRepair() {
		s.PendingRepair = readOptionalUUID(r)
		s.IsTransient = readBool(r)
	}
	if v.HasOriginatingHostID() {
		s.OriginatingHostID = readOptionalUUID(r)
	}
	if v.HasPartitionLevelDeletionsMarker() {
		s.HasPartitionLevelDeletions = readBool(r)
	}
	if v.HasImprovedMinMax() && v.HasLegacyMinMax() {
		// nc writes both encodings; the improved one comes after the deletion marker.
		s.ClusteringTypes, s.CoveredClustering = parseImprovedMinMax(r)
	}
	if v.HasKeyRange() {
		s.FirstKey = readVintBytes(r)
		s.LastKey = readVintBytes(r)
	}
	if v.HasTokenSpaceCoverage() {
		s.TokenSpaceCoverage = readF64(r)
	}
	return s
}

func (s *Stats) append(b []byte, v version.Version) []byte {
	uintLDT := v.HasUIntDeletionTime()
	b = appendEstimatedHistogram(b, s.EstimatedPartitionSize)
	b = appendEstimatedHistogram(b, s.EstimatedCellPerPartitionCount)
	b = appendPosition(b, s.CommitLogUpperBound)
	b = encoding.AppendI64(b, s.MinTimestamp)
	b = encoding.AppendI64(b, s.MaxTimestamp)
	b = encoding.AppendU32(b, encodeLDT(s.MinLocalDeletionTime, uintLDT))
	b = encoding.AppendU32(b, encodeLDT(s.MaxLocalDeletionTime, uintLDT))
	b = encoding.AppendI32(b, s.MinTTL)
	b = encoding.AppendI32(b, s.MaxTTL)
	b = appendF64(b, s.CompressionRatio)
	b = appendTombstoneHistogram(b, s.TombstoneDropTimes, uintLDT)
	b = encoding.AppendI32(b, s.SSTableLevel)
	b = encoding.AppendI64(b, s.RepairedAt)
	if v.HasLegacyMinMax() {
		b = appendLegacyValues(b, s.LegacyMinClusteringValues)
		b = appendLegacyValues(b, s.LegacyMaxClusteringValues)
	} else if v.HasImprovedMinMax() {
		b = appendImprovedMinMax(b, s.ClusteringTypes, s.CoveredClustering)
	}
	b = encoding.AppendBool(b, s.HasLegacyCounterShards)
	b = encoding.AppendI64(b, s.TotalColumnsSet)
	b = encoding.AppendI64(b, s.TotalRows)
	if v.HasCommitLogLowerBound() {
		b = appendPosition(b, s.CommitLogLowerBound)
	}
	if v.HasCommitLogIntervals() {
		b = encoding.AppendI32(b, int32(len(s.CommitLogIntervals)))
		for _, iv := range s.CommitLogIntervals {
			b = appendPosition(b, iv.Start)
			b = appendPosition(b, iv.End)
		}
	}
	if v.HasPendingRepair() {
		b = appendOptionalUUID(b, s.PendingRepair)
		b = encoding.AppendBool(b, s.IsTransient)
	}
	if v.HasOriginatingHostID() {
		b = appendOptionalUUID(b, s.OriginatingHostID)
	}
	if v.HasPartitionLevelDeletionsMarker() {
		b = encoding.AppendBool(b, s.HasPartitionLevelDeletions)
	}
	if v.HasImprovedMinMax() && v.HasLegacyMinMax() {
		b = appendImprovedMinMax(b, s.ClusteringTypes, s.CoveredClustering)
	}
	if v.HasKeyRange() {
		b = encoding.AppendVintBytes(b, s.FirstKey)
		b = encoding.AppendVintBytes(b, s.LastKey)
	}
	if v.HasTokenSpaceCoverage() {
		b = appendF64(b, s.TokenSpaceCoverage)
	}
	if uintLDT && s.TombstonePadding {
		b = append(b, make([]byte, 4*len(s.TombstoneDropTimes.Bins))...)
	}
	return b
}

func parsePosition(r *encoding.Reader) CommitLogPosition {
	return CommitLogPosition{SegmentID: r.I64(), Position: r.I32()}
}

func appendPosition(b []byte, p CommitLogPosition) []byte {
	b = encoding.AppendI64(b, p.SegmentID)
	return encoding.AppendI32(b, p.Position)
}

func decodeLDT(u uint32, uintLDT bool) int64 {
	if uintLDT {
		if u == math.MaxUint32 {
			return NoDeletionTime
		}
		return int64(u)
	}
	if int32(u) == math.MaxInt32 {
		return NoDeletionTime
	}
	return int64(int32(u))
}

// encodeLDT mirrors StatsMetadataSerializer: Cell.deletionTimeLongToUnsignedInteger from oa,
// and before oa Integer.MAX_VALUE for none, otherwise min(v, MAX_VALUE-1) cast to int.
func encodeLDT(v int64, uintLDT bool) uint32 {
	if v == NoDeletionTime {
		if uintLDT {
			return math.MaxUint32
		}
		return math.MaxInt32
	}
	if uintLDT {
		return uint32(v)
	}
	return uint32(int32(min(v, math.MaxInt32-1)))
}

func parseLegacyValues(r *encoding.Reader) [][]byte {
	n := r.Count("legacy clustering values", 2)
	if n < 0 {
		return nil
	}
	vals := make([][]byte, n)
	for i := range vals {
		if p := r.ShortBytes(); p != nil {
			vals[i] = append([]byte{}, p...)
		}
	}
	return vals
}

func appendLegacyValues(b []byte, vals [][]byte) []byte {
	b = encoding.AppendI32(b, int32(len(vals)))
	for _, p := range vals {
		b = encoding.AppendShortBytes(b, p)
	}
	return b
}
