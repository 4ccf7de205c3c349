// Package stats owns Statistics.db: its table of contents and CRCs (MetadataSerializer), the
// VALIDATION, COMPACTION, STATS and HEADER components, and what a writer needs to produce a
// new one (default metadata, a Collector mirroring MetadataCollector, the HyperLogLogPlus
// cardinality estimator and Cassandra's histograms).
//
// Parse is strict so that Parse followed by Append is byte-identical for every input it
// accepts; Check reports every CRC and extent problem with its component and offset.
//
// Layout (all integers big-endian; [..] only for na+ and BTI):
//
//	i32 count (1..4)
//	[u32 CRC32(count)]
//	count × { i32 type (VALIDATION=0 COMPACTION=1 STATS=2 HEADER=3), i32 offset }  sorted by type
//	[u32 CRC32(count ‖ table)]                             one running CRC, not reset
//	per component, in type order: body [u32 CRC32(body)]   offsets tile the file exactly
//
//	VALIDATION  writeUTF partitioner · f64 bloomFilterFPChance
//	COMPACTION  i32 n · n bytes HyperLogLogPlus(13,25).getBytes()
//	STATS       EstimatedHistogram partitionSize · EstimatedHistogram cellsPerPartition
//	            · CommitLogPosition upperBound (i64 segment, i32 position)
//	            · i64 minTimestamp · i64 maxTimestamp
//	            · min/max localDeletionTime (2×i32, MAX_VALUE = none; oa+: 2×u32, 0xFFFFFFFF = none)
//	            · i32 minTTL · i32 maxTTL · f64 compressionRatio
//	            · tombstone histogram (i32 maxBin, i32 n, n×(f64,i64); oa+: n×(i64,i32))
//	            · i32 sstableLevel · i64 repairedAt
//	            · m*/n*: 2 × (i32 n, n × short-length value)   oa+/BTI: improved min/max
//	            · bool hasLegacyCounterShards · i64 totalColumnsSet · i64 totalRows
//	            · mb+: CommitLogPosition lowerBound · mc+: i32 n, n × (start, end) positions
//	            · na+: u8 pendingRepair? [16 B] · bool isTransient
//	            · me+/nb+: u8 originatingHostId? [16 B]
//	            · nc+: bool hasPartitionLevelDeletions · nc: improved min/max
//	            · nc+: vint-length firstKey, lastKey · oa+: f64 tokenSpaceCoverage
//	            · oa+: 4 zero bytes per tombstone bin (Cassandra 5.0 size quirk, see Stats)
//	  improved min/max = uvint n, n × vint-length type · Slice (2 × ClusteringBound)
//	  EstimatedHistogram = i32 n, n × (i64 offset, i64 count), offset[0] written twice
//	HEADER      uvint (minTimestamp-TIMESTAMP_EPOCH) · uvint (minLDT-DELETION_TIME_EPOCH)
//	            · uvint minTTL · vint-length keyType · uvint n, n × vint-length clusteringType
//	            · static then regular columns: uvint n, n × (vint-length name, vint-length type)
//
// It is pure code and imports only the standard library and the sstable/encoding, version,
// schema and token packages. It must not import any I/O or writer package.
package stats
