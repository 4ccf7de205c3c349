package stats

import (
	"math"

	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// NoCompressionRatio is MetadataCollector.NO_COMPRESSION_RATIO, the ratio of an uncompressed
// sstable.
const NoCompressionRatio = -1.0

// NewStats returns the STATS component of an sstable of version v into which nothing has been
// written, with the values Cassandra's MetadataCollector starts from: partition sizes in 150
// (md..nb, Cassandra 3.11/4.x) or 155 (nc, oa, da, Cassandra 5.0) buckets plus overflow, cells
// per partition in 118 plus overflow, commit log bounds CommitLogPosition.NONE and no
// intervals, timestamps [MinInt64, MaxInt64], no deletion times, TTLs 0, no compression
// (-1.0), an empty tombstone histogram, level 0, unrepaired, not pending repair, not
// transient, no host id, Slice.ALL with no clustering types, empty first/last keys and an
// unknown (NaN) token space coverage.
func NewStats(v version.Version) *Stats {
	partitionBuckets := PartitionSizeBuckets4
	if v.HasImprovedMinMax() {
		partitionBuckets = PartitionSizeBuckets5
	}
	return &Stats{
		EstimatedPartitionSize:         NewEstimatedHistogram(partitionBuckets),
		EstimatedCellPerPartitionCount: NewEstimatedHistogram(CellsPerPartitionCount),
		CommitLogUpperBound:            NoPosition,
		CommitLogLowerBound:            NoPosition,
		MinTimestamp:                   math.MinInt64,
		MaxTimestamp:                   math.MaxInt64,
		MinLocalDeletionTime:           NoDeletionTime,
		MaxLocalDeletionTime:           NoDeletionTime,
		CompressionRatio:               NoCompressionRatio,
		TombstonePadding:               v.HasUIntDeletionTime(),
		CoveredClustering:              AllSlice(),
		FirstKey:                       []byte{},
		LastKey:                        []byte{},
		TokenSpaceCoverage:             NaN,
	}
}

// NewStatistics returns a complete Statistics.db for a new sstable of version v: the given
// partitioner class name and bloom filter false-positive chance, the cardinality of an empty
// key set, NewStats(v) and the given serialization header (which the caller owns).
func NewStatistics(v version.Version, partitioner string, bloomFilterFPChance float64, header *schema.Header) *Statistics {
	return &Statistics{
		Validation: &Validation{Partitioner: partitioner, BloomFilterFPChance: bloomFilterFPChance},
		Compaction: &Compaction{Cardinality: NewCardinality().Bytes()},
		Stats:      NewStats(v),
		Header:     header,
	}
}

// Collector accumulates the per-partition and per-cell facts a writer reports, computing
// what Cassandra 5.0's MetadataCollector computes for the STATS component. It is not safe for
// concurrent use.
//
// Per partition, a writer calls AddKey, then PartitionDeletion, then for each row Liveness
// (when the row has primary-key liveness info), Deletion (row deletion, or a range tombstone
// marker's deletion times), Cell for every cell and Row once, and finally EndPartition with the
// partition's serialized size in the uncompressed Data.db.
type Collector struct {
	v                          version.Version
	partitionSize, cellCount   EstimatedHistogram
	timestamps, deletionTimes  minMax
	ttls                       minMax
	tombstones                 *tombstoneBuilder
	cardinality                *Cardinality
	cells                      int64
	totalColumnsSet, totalRows int64
	hasPartitionLevelDeletions bool
	firstKey, lastKey          []byte
}

type minMax struct {
	set      bool
	min, max int64
}

func (m *minMax) update(v int64) {
	if !m.set {
		m.set, m.min, m.max = true, v, v
		return
	}
	m.min, m.max = min(m.min, v), max(m.max, v)
}

func (m *minMax) get(defMin, defMax int64) (int64, int64) {
	if !m.set {
		return defMin, defMax
	}
	return m.min, m.max
}

// NewCollector returns a Collector for an sstable of version v.
func NewCollector(v version.Version) *Collector {
	s := NewStats(v)
	return &Collector{
		v:             v,
		partitionSize: s.EstimatedPartitionSize,
		cellCount:     s.EstimatedCellPerPartitionCount,
		tombstones:    newTombstoneBuilder(),
		cardinality:   NewCardinality(),
	}
}

// AddKey starts a partition: it records the first and last key and feeds the key to the
// cardinality estimator (MetadataCollector.addKey). The key is copied.
func (c *Collector) AddKey(key []byte) {
	if c.firstKey == nil {
		c.firstKey = append([]byte{}, key...)
	}
	c.lastKey = append(c.lastKey[:0], key...)
	c.cardinality.Add(key)
}

// PartitionDeletion reports the partition's deletion time (updatePartitionDeletion). A live
// deletion time (markedForDeleteAt MinInt64, local deletion time NoDeletionTime) is ignored.
func (c *Collector) PartitionDeletion(markedForDeleteAt, localDeletionTime int64) {
	if !isLive(markedForDeleteAt, localDeletionTime) {
		c.hasPartitionLevelDeletions = true
	}
	c.Deletion(markedForDeleteAt, localDeletionTime)
}

// Deletion reports a row deletion or range tombstone deletion time (update(DeletionTime)).
func (c *Collector) Deletion(markedForDeleteAt, localDeletionTime int64) {
	if isLive(markedForDeleteAt, localDeletionTime) {
		return
	}
	c.timestamps.update(markedForDeleteAt)
	c.updateLocalDeletionTime(localDeletionTime)
}

// Liveness reports a row's non-empty primary-key liveness info (update(LivenessInfo)): its
// timestamp, TTL (0 if none) and local expiration time (NoDeletionTime if not expiring).
func (c *Collector) Liveness(timestamp int64, ttl int32, localExpirationTime int64) {
	c.timestamps.update(timestamp)
	c.ttls.update(int64(ttl))
	c.updateLocalDeletionTime(localExpirationTime)
}

// Cell reports one cell (update(Cell)): its timestamp, TTL (0 if none) and local deletion
// time (NoDeletionTime for a live, non-expiring cell).
func (c *Collector) Cell(timestamp int64, ttl int32, localDeletionTime int64) {
	c.cells++
	c.timestamps.update(timestamp)
	c.ttls.update(int64(ttl))
	c.updateLocalDeletionTime(localDeletionTime)
}

// Row reports a row with columnsSet columns present (updateColumnSetPerRow).
func (c *Collector) Row(columnsSet int64) {
	c.totalColumnsSet += columnsSet
	c.totalRows++
}

// EndPartition closes a partition whose serialized size in the uncompressed Data.db is size
// bytes (addPartitionSizeInBytes, addCellPerPartitionCount).
func (c *Collector) EndPartition(size int64) {
	c.partitionSize.Add(size)
	c.cellCount.Add(c.cells)
	c.cells = 0
}

func (c *Collector) updateLocalDeletionTime(t int64) {
	c.deletionTimes.update(t)
	if t != NoDeletionTime {
		c.tombstones.update(t)
	}
}

func isLive(markedForDeleteAt, localDeletionTime int64) bool {
	return markedForDeleteAt == math.MinInt64 && localDeletionTime == NoDeletionTime
}

// HasTimestamps, HasDeletionTimes and HasTTLs say whether any timestamp, local deletion time
// or TTL was collected (Stats then holds their bounds, else the defaults).
func (c *Collector) HasTimestamps() bool    { return c.timestamps.set }
func (c *Collector) HasDeletionTimes() bool { return c.deletionTimes.set }
func (c *Collector) HasTTLs() bool          { return c.ttls.set }

// Cardinality returns the cardinality estimator fed by AddKey; its Bytes are the COMPACTION
// component.
func (c *Collector) Cardinality() *Cardinality { return c.cardinality }

// Stats returns NewStats(v) with every collected field filled in. Fields the writer knows
// better (compression ratio, commit log bounds, repair state, host id, clustering bounds,
// token space coverage) keep their defaults for the caller to set. The Collector may keep
// collecting afterwards; the returned Stats does not share memory with it.
func (c *Collector) Stats() *Stats {
	s := NewStats(c.v)
	s.EstimatedPartitionSize = cloneHistogram(c.partitionSize)
	s.EstimatedCellPerPartitionCount = cloneHistogram(c.cellCount)
	s.MinTimestamp, s.MaxTimestamp = c.timestamps.get(math.MinInt64, math.MaxInt64)
	s.MinLocalDeletionTime, s.MaxLocalDeletionTime = c.deletionTimes.get(NoDeletionTime, NoDeletionTime)
	minTTL, maxTTL := c.ttls.get(0, 0)
	s.MinTTL, s.MaxTTL = int32(minTTL), int32(maxTTL)
	s.TombstoneDropTimes = c.tombstones.build()
	s.TotalColumnsSet, s.TotalRows = c.totalColumnsSet, c.totalRows
	s.HasPartitionLevelDeletions = c.hasPartitionLevelDeletions
	if c.firstKey != nil {
		s.FirstKey = append([]byte{}, c.firstKey...)
		s.LastKey = append([]byte{}, c.lastKey...)
	}
	return s
}

func cloneHistogram(h EstimatedHistogram) EstimatedHistogram {
	return EstimatedHistogram{Offsets: append([]int64{}, h.Offsets...), Counts: append([]int64{}, h.Counts...)}
}
