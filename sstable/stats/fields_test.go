package stats

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/encoding"
)

func fixtureNamed(t *testing.T, suffix string) fixtures.SSTable {
	t.Helper()
	for _, f := range fixtures.All(t) {
		if strings.HasSuffix(f.Name, suffix) {
			return f
		}
	}
	t.Fatalf("no fixture %s", suffix)
	return fixtures.SSTable{}
}

func parseFixture(t *testing.T, f fixtures.SSTable) ([]byte, *Statistics) {
	t.Helper()
	b := f.Read(t, "Statistics.db")
	s, err := Parse(b, fixtureVersion(t, f))
	if err != nil {
		t.Fatal(err)
	}
	return b, s
}

func TestFixtureFieldValues(t *testing.T) {
	tests := []struct {
		fixture           string
		partitioner       string
		partitions, rows  int64
		firstKey, lastKey string // hex; "" when the version has no key range
		partitionBuckets  int
		coverageIsJavaNaN bool
		hasHostID         bool
		clusteringTypes   int
		legacyMinValues   int
	}{
		{"oa-13-big", "org.apache.cassandra.dht.Murmur3Partitioner", 10000, 10000, "\x00\x00\x10\xdd", "\x00\x00\x1b\x13", 156, true, true, 0, 0},
		{"nb/spark_test.test3/nb-1-big", "org.apache.cassandra.dht.Murmur3Partitioner", 1, 1, "", "", 151, false, true, 0, 0},
		{"legacy_oa_simple/oa-1-big", "org.apache.cassandra.dht.ByteOrderedPartitioner", 5, 5, "0", "4", 156, true, true, 0, 0},
		{"legacy_oa_clust/oa-1-big", "org.apache.cassandra.dht.ByteOrderedPartitioner", 5, 250, "0", "4", 156, true, true, 1, 0},
		{"legacy_nb_clust/nb-1-big", "org.apache.cassandra.dht.ByteOrderedPartitioner", 5, 250, "", "", 151, false, true, 0, 1},
		{"legacy_md_simple/md-1-big", "org.apache.cassandra.dht.ByteOrderedPartitioner", 5, 5, "", "", 151, false, false, 0, 0},
		{"legacy_da_clust/da-1-bti", "org.apache.cassandra.dht.ByteOrderedPartitioner", 5, 250, "0", "4", 156, false, true, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			_, s := parseFixture(t, fixtureNamed(t, tt.fixture))
			st := s.Stats
			if s.Validation.Partitioner != tt.partitioner || s.Validation.BloomFilterFPChance != 0.01 {
				t.Errorf("validation = %+v", *s.Validation)
			}
			if got := st.EstimatedPartitionSize.Total(); got != tt.partitions {
				t.Errorf("partitions in histogram = %d, want %d", got, tt.partitions)
			}
			if len(st.EstimatedPartitionSize.Counts) != tt.partitionBuckets || len(st.EstimatedCellPerPartitionCount.Counts) != CellsPerPartitionCount+1 {
				t.Errorf("bucket counts %d/%d", len(st.EstimatedPartitionSize.Counts), len(st.EstimatedCellPerPartitionCount.Counts))
			}
			if st.TotalRows != tt.rows {
				t.Errorf("totalRows = %d, want %d", st.TotalRows, tt.rows)
			}
			if string(st.FirstKey) != tt.firstKey || string(st.LastKey) != tt.lastKey {
				t.Errorf("keys %x..%x, want %x..%x", st.FirstKey, st.LastKey, tt.firstKey, tt.lastKey)
			}
			if got := math.Float64bits(st.TokenSpaceCoverage) == 0x7ff8000000000000; got != tt.coverageIsJavaNaN {
				t.Errorf("tokenSpaceCoverage bits %x", math.Float64bits(st.TokenSpaceCoverage))
			}
			if (st.OriginatingHostID != nil) != tt.hasHostID {
				t.Errorf("host id %v", st.OriginatingHostID)
			}
			if len(st.ClusteringTypes) != tt.clusteringTypes || len(st.LegacyMinClusteringValues) != tt.legacyMinValues {
				t.Errorf("clustering types %v, legacy min values %d", st.ClusteringTypes, len(st.LegacyMinClusteringValues))
			}
			if st.MinLocalDeletionTime != NoDeletionTime || st.MaxLocalDeletionTime != NoDeletionTime || st.MinTimestamp > st.MaxTimestamp {
				t.Errorf("ldt %d..%d ts %d..%d", st.MinLocalDeletionTime, st.MaxLocalDeletionTime, st.MinTimestamp, st.MaxTimestamp)
			}
		})
	}
}

// FORMAT.md §2.9: `00000004 26291b05 | 0 0x2c | 1 0x69 | 2 0x8c | 3 0x1270 | crc …`.
func TestLegacyOASimpleTableOfContents(t *testing.T) {
	b, _ := parseFixture(t, fixtureNamed(t, "legacy_oa_simple/oa-1-big"))
	want := []uint32{4, 0x26291b05, 0, 0x2c, 1, 0x69, 2, 0x8c, 3, 0x1270}
	for i, w := range want {
		if got := binary.BigEndian.Uint32(b[4*i:]); got != w {
			t.Errorf("word %d = %#x, want %#x", i, got, w)
		}
	}
}

// A clustered oa table's covered slice holds the smallest and largest clustering value.
func TestCoveredClusteringOfClusteredTable(t *testing.T) {
	_, s := parseFixture(t, fixtureNamed(t, "legacy_oa_clust/oa-1-big"))
	cc := s.Stats.CoveredClustering
	if cc.Start.Kind != InclStartBound || cc.End.Kind != InclEndBound || len(cc.Start.Values) != 1 || len(cc.End.Values) != 1 {
		t.Fatalf("covered clustering %v/%d .. %v/%d", cc.Start.Kind, len(cc.Start.Values), cc.End.Kind, len(cc.End.Values))
	}
	if !bytes.HasPrefix(cc.Start.Values[0], []byte("0")) || !bytes.HasPrefix(cc.End.Values[0], []byte("9")) {
		t.Errorf("bounds %.8q .. %.8q", cc.Start.Values[0], cc.End.Values[0])
	}
}

func TestNewEstimatedHistogramOffsets(t *testing.T) {
	h := NewEstimatedHistogram(PartitionSizeBuckets5)
	head := []int64{1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 17, 20, 24, 29, 35}
	for i, w := range head {
		if h.Offsets[i] != w {
			t.Fatalf("offset %d = %d, want %d", i, h.Offsets[i], w)
		}
	}
	// The maxima MetadataCollector's comments give for 155 and 118 offsets. Its 4.x comment for
	// 150 ("1697806495183") is one offset too far: that is round(1414838745986*1.2).
	for _, tt := range []struct {
		n    int
		last int64
	}{{PartitionSizeBuckets5, 3520571548412}, {PartitionSizeBuckets4, 1414838745986}, {CellsPerPartitionCount, 4139110981}} {
		h := NewEstimatedHistogram(tt.n)
		if got := h.Offsets[tt.n-1]; got != tt.last || len(h.Counts) != tt.n+1 {
			t.Errorf("EstimatedHistogram(%d): last offset %d, want %d", tt.n, got, tt.last)
		}
	}
	h.Add(0)
	h.Add(1)
	h.Add(9)
	h.Add(10)
	h.Add(1 << 62)
	if h.Counts[0] != 2 || h.Counts[8] != 2 || h.Counts[len(h.Counts)-1] != 1 {
		t.Errorf("Add placed values wrongly: %v", h.Counts[:10])
	}
}

// Every fixture's offsets are the default offsets for its bucket count.
func TestFixtureHistogramOffsetsAreDefaults(t *testing.T) {
	for _, f := range fixtures.All(t) {
		_, s := parseFixture(t, f)
		for _, h := range []EstimatedHistogram{s.Stats.EstimatedPartitionSize, s.Stats.EstimatedCellPerPartitionCount} {
			want := NewEstimatedHistogram(len(h.Offsets))
			for i := range h.Offsets {
				if h.Offsets[i] != want.Offsets[i] {
					t.Fatalf("%s: offset %d = %d, want %d", f.Name, i, h.Offsets[i], want.Offsets[i])
				}
			}
		}
	}
}

// dataLength is the uncompressed Data.db length: CompressionInfo.db's i64 before the chunk
// count, or the Data.db size of an uncompressed sstable.
func dataLength(t *testing.T, f fixtures.SSTable) int64 {
	if !f.Has("CompressionInfo.db") {
		return int64(len(f.Read(t, "Data.db")))
	}
	r := encoding.NewReader(f.Read(t, "CompressionInfo.db"))
	r.UTF()
	for n := r.I32(); n > 0; n-- {
		r.UTF()
		r.UTF()
	}
	r.I32()
	if v := fixtureVersion(t, f); v.HasMaxCompressedLength() {
		r.I32()
	}
	n := r.I64()
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return n
}

// The child rule "recompute estimatedPartitionSize exactly": sizes are the deltas between
// consecutive partitions' Data.db positions, the last one closed by the data length.
func TestPartitionSizeHistogramRecomputedFromIndex(t *testing.T) {
	for _, f := range fixtures.All(t) {
		t.Run(f.Name, func(t *testing.T) {
			_, s := parseFixture(t, f)
			keys := f.Keys(t)
			end := dataLength(t, f)
			c := NewCollector(fixtureVersion(t, f))
			h := NewEstimatedHistogram(len(s.Stats.EstimatedPartitionSize.Offsets))
			for i, k := range keys {
				next := end
				if i+1 < len(keys) {
					next = keys[i+1].DataPos
				}
				h.Add(next - k.DataPos)
				c.AddKey(k.Key)
				c.EndPartition(next - k.DataPos)
			}
			want := s.Stats.EstimatedPartitionSize.Counts
			for i := range want {
				if h.Counts[i] != want[i] {
					t.Fatalf("bucket %d = %d, want %d", i, h.Counts[i], want[i])
				}
			}
			got := c.Stats()
			if len(got.EstimatedPartitionSize.Counts) == len(want) {
				for i := range want {
					if got.EstimatedPartitionSize.Counts[i] != want[i] {
						t.Fatalf("collector bucket %d = %d, want %d", i, got.EstimatedPartitionSize.Counts[i], want[i])
					}
				}
			}
			if !bytes.Equal(c.Cardinality().Bytes(), s.Compaction.Cardinality) {
				t.Error("collector cardinality differs")
			}
			if v := fixtureVersion(t, f); v.HasKeyRange() && (!bytes.Equal(got.FirstKey, s.Stats.FirstKey) || !bytes.Equal(got.LastKey, s.Stats.LastKey)) {
				t.Errorf("collector keys %x..%x, want %x..%x", got.FirstKey, got.LastKey, s.Stats.FirstKey, s.Stats.LastKey)
			}
		})
	}
}
