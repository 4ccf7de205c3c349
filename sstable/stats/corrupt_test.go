package stats

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

func componentOffsets(b []byte, v version.Version) []int {
	n := int(binary.BigEndian.Uint32(b))
	toc := 4
	if v.HasMetadataChecksum() {
		toc = 8
	}
	offs := make([]int, n)
	for i := range offs {
		offs[i] = int(binary.BigEndian.Uint32(b[toc+8*i+4:]))
	}
	return offs
}

// Flipping one byte inside a component body of a checksummed file is reported as a CRC
// mismatch of exactly that component; flipping a table-of-contents byte as a TOC failure.
func TestCorruptByteNamesComponent(t *testing.T) {
	for _, name := range []string{"legacy_oa_clust/oa-1-big", "nb/spark_test.test3/nb-1-big", "legacy_da_simple/da-1-bti"} {
		f := fixtureNamed(t, name)
		v := fixtureVersion(t, f)
		orig := f.Read(t, "Statistics.db")
		for i, off := range componentOffsets(orig, v) {
			b := bytes.Clone(orig)
			b[off+1] ^= 0x40
			problems := Check(b, v)
			if len(problems) == 0 || problems[0].Component != Component(i) || !errors.Is(problems[0], ErrChecksum) {
				t.Errorf("%s: corrupting %s reported %v", name, Component(i), problems)
			}
			if _, err := Parse(b, v); err == nil {
				t.Errorf("%s: Parse accepted a corrupt %s", name, Component(i))
			}
		}
		b := bytes.Clone(orig)
		b[9] ^= 1 // inside the table of contents
		var e *Error
		if _, err := Parse(b, v); !errors.As(err, &e) || e.Component != ComponentTOC {
			t.Errorf("%s: corrupt TOC reported %v", name, err)
		}
	}
}

// Without checksums (md, me) a damaged value is still located: here hasLegacyCounterShards
// set to 2, which no Java boolean can be.
func TestCorruptValueWithoutChecksumIsLocated(t *testing.T) {
	f := fixtureNamed(t, "legacy_md_simple/md-1-big")
	v := fixtureVersion(t, f)
	b, s := parseFixture(t, f)
	// Re-serialise STATS to find the boolean's offset: it follows the (empty) legacy lists.
	body := s.Stats.append(nil, v)
	tail := 1 + 8 + 8 + 12 + 4 + 24*len(s.Stats.CommitLogIntervals) // md: no repair or host fields
	boolAt := componentOffsets(b, v)[2] + len(body) - tail
	if b[boolAt] != 0 {
		t.Fatalf("expected the hasLegacyCounterShards byte at %d", boolAt)
	}
	b = bytes.Clone(b)
	b[boolAt] = 2
	var e *Error
	_, err := Parse(b, v)
	if !errors.As(err, &e) || e.Component != ComponentStats || e.Offset != int64(boolAt) || !errors.Is(err, ErrNonCanonical) {
		t.Fatalf("got %v, want STATS non-canonical at %d", err, boolAt)
	}
}

// Cutting the file inside the last component is that component's failure; cutting it
// earlier leaves the table of contents pointing past the end.
func TestTruncationNamesComponent(t *testing.T) {
	for _, f := range fixtures.All(t) {
		v := fixtureVersion(t, f)
		b := f.Read(t, "Statistics.db")
		offs := componentOffsets(b, v)
		for _, cut := range []int{0, 3, offs[0] - 1, offs[1] + 2, offs[2] + 100, offs[3] + 5, len(b) - 1} {
			_, err := Parse(b[:cut], v)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%s cut at %d: %v", f.Name, cut, err)
			}
			want := ComponentTOC
			if cut > offs[3] {
				want = ComponentHeader
			}
			if e.Component != want || e.Offset > int64(cut) {
				t.Errorf("%s cut at %d: reported %v, want %s", f.Name, cut, err, want)
			}
		}
	}
}

// nc has no fixture: a Stats with every nc field set must survive Append then Parse, with
// the legacy lists, the deletion marker, the improved min/max after it and the key range.
func TestNCRoundTripAllFields(t *testing.T) {
	v, err := version.Parse(version.Big, "nc")
	if err != nil {
		t.Fatal(err)
	}
	s := NewStatistics(v, "org.apache.cassandra.dht.Murmur3Partitioner", 0.01, &schema.Header{
		MinTimestamp: 5, MinLocalDeletionTime: 2, MinTTL: 0,
		KeyType:         "org.apache.cassandra.db.marshal.Int32Type",
		ClusteringTypes: []string{"org.apache.cassandra.db.marshal.ReversedType(org.apache.cassandra.db.marshal.LongType)"},
		RegularColumns:  []schema.Column{{Name: []byte("v"), Type: "org.apache.cassandra.db.marshal.UTF8Type"}},
	})
	st := s.Stats
	host, pending := UUID{1, 2, 3}, UUID{9}
	st.OriginatingHostID, st.PendingRepair, st.IsTransient = &host, &pending, true
	st.HasPartitionLevelDeletions = true
	st.MinLocalDeletionTime, st.MaxLocalDeletionTime = 1700000000, NoDeletionTime
	st.TombstoneDropTimes = TombstoneHistogram{MaxBinSize: 1, Bins: []TombstoneBin{{Point: 1700000040, Count: 3}}}
	st.LegacyMinClusteringValues = [][]byte{{0, 0, 0, 0, 0, 0, 0, 1}}
	st.LegacyMaxClusteringValues = [][]byte{{0, 0, 0, 0, 0, 0, 0, 9}}
	st.ClusteringTypes = []string{"org.apache.cassandra.db.marshal.ReversedType(org.apache.cassandra.db.marshal.LongType)", "org.apache.cassandra.db.marshal.UTF8Type"}
	st.CoveredClustering = Slice{
		Start: ClusteringBound{Kind: InclStartBound, Values: [][]byte{{0, 0, 0, 0, 0, 0, 0, 1}, []byte("a")}},
		End:   ClusteringBound{Kind: ExclEndBound, Values: [][]byte{{0, 0, 0, 0, 0, 0, 0, 9}, {}}},
	}
	st.CommitLogIntervals = []CommitLogInterval{{Start: CommitLogPosition{7, 1}, End: CommitLogPosition{7, 99}}}
	st.FirstKey, st.LastKey = []byte{0, 0, 0, 1}, []byte{0, 0, 0, 2}
	st.CompressionRatio = math.Float64frombits(0xfff8000000000000) // x86 0.0/0.0: raw bits kept
	st.TokenSpaceCoverage = 0                                      // nc does not store it
	b := s.Append([]byte("prefix"), v)[len("prefix"):]
	got, err := Parse(b, v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Append(nil, v), b) {
		t.Fatal("second Append differs")
	}
	if math.Float64bits(got.Stats.CompressionRatio) != 0xfff8000000000000 {
		t.Errorf("NaN bits %x", math.Float64bits(got.Stats.CompressionRatio))
	}
	got.Stats.CompressionRatio, st.CompressionRatio = 0, 0
	if !reflect.DeepEqual(got, s) {
		t.Errorf("round trip changed fields:\n got %+v\nwant %+v", *got.Stats, *st)
	}
	if p := Check(b, v); len(p) != 0 {
		t.Errorf("Check: %v", p)
	}
}

// Cassandra 5.0 pads an oa STATS body with 4 zero bytes per tombstone bin; both padded and
// unpadded bodies round-trip, and NewStats pads for oa as 5.0 does.
func TestTombstonePaddingRoundTrips(t *testing.T) {
	v, _ := version.Parse(version.Big, "oa")
	for _, pad := range []bool{true, false} {
		s := NewStatistics(v, "p", 0.1, &schema.Header{})
		if !s.Stats.TombstonePadding {
			t.Fatal("NewStats(oa) should pad")
		}
		s.Stats.TombstoneDropTimes = TombstoneHistogram{MaxBinSize: 2, Bins: []TombstoneBin{{60, 1}, {120, 2}}}
		s.Stats.TombstonePadding = pad
		b := s.Append(nil, v)
		got, err := Parse(b, v)
		if err != nil {
			t.Fatal(err)
		}
		if got.Stats.TombstonePadding != pad || !bytes.Equal(got.Append(nil, v), b) {
			t.Errorf("padding %v did not round-trip", pad)
		}
	}
}

// The header's deltas are written from signed ints, so a deletion time before the epoch is a
// sign-extended 9-byte vint (what Cassandra's readUnsignedVInt32 accepts) and reads back.
func TestHeaderNegativeDeltaRoundTrips(t *testing.T) {
	h := &schema.Header{MinTimestamp: 1, MinLocalDeletionTime: 2, MinTTL: 0, KeyType: "k"}
	b := appendHeader(nil, h)
	if len(b) < 18 || b[0] != 0xFF || b[9] != 0xFF {
		t.Fatalf("deltas not sign-extended 9-byte vints: % x", b)
	}
	got := parseHeader(encoding.NewReader(b))
	if got.MinTimestamp != 1 || got.MinLocalDeletionTime != 2 || got.KeyType != "k" {
		t.Errorf("got %+v", *got)
	}
}

func TestValueWidth(t *testing.T) {
	m := marshalPrefix
	for _, tt := range []struct {
		typ  string
		want int
	}{
		{m + "Int32Type", 4}, {m + "LongType", 8}, {m + "UUIDType", 16}, {m + "TimeUUIDType", 16},
		{m + "BooleanType", 1}, {m + "DoubleType", 8}, {m + "FloatType", 4}, {m + "TimestampType", 8},
		{m + "UTF8Type", -1}, {m + "ShortType", -1}, {m + "SimpleDateType", -1}, {m + "TimeType", -1},
		{m + "ReversedType(" + m + "Int32Type)", 4}, {m + "ReversedType(" + m + "UTF8Type)", -1},
		{m + "VectorType(" + m + "FloatType,3)", 12}, {m + "VectorType(" + m + "UTF8Type,3)", -1},
		{m + "FrozenType(" + m + "ListType(" + m + "Int32Type))", -1},
	} {
		if got, err := valueWidth(tt.typ); err != nil || got != tt.want {
			t.Errorf("valueWidth(%s) = %d, %v; want %d", tt.typ, got, err, tt.want)
		}
	}
	if _, err := valueWidth(m + "VectorType(" + m + "FloatType,x)"); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("bad vector dimension: %v", err)
	}
}

func TestCollectorMirrorsMetadataCollector(t *testing.T) {
	v, _ := version.Parse(version.BTI, "da")
	c := NewCollector(v)
	c.AddKey([]byte("a"))
	c.PartitionDeletion(math.MinInt64, NoDeletionTime) // live: ignored
	c.Liveness(100, 0, NoDeletionTime)
	c.Cell(100, 0, NoDeletionTime)
	c.Cell(90, 60, 1700000001) // expiring
	c.Row(2)
	c.EndPartition(40)
	c.AddKey([]byte("b"))
	c.PartitionDeletion(80, 1700000100)
	c.EndPartition(12)
	s := c.Stats()
	if s.MinTimestamp != 80 || s.MaxTimestamp != 100 || s.MinTTL != 0 || s.MaxTTL != 60 {
		t.Errorf("timestamps %d..%d ttl %d..%d", s.MinTimestamp, s.MaxTimestamp, s.MinTTL, s.MaxTTL)
	}
	if s.MinLocalDeletionTime != 1700000001 || s.MaxLocalDeletionTime != NoDeletionTime {
		t.Errorf("ldt %d..%d", s.MinLocalDeletionTime, s.MaxLocalDeletionTime)
	}
	if !s.HasPartitionLevelDeletions || s.TotalRows != 1 || s.TotalColumnsSet != 2 {
		t.Errorf("pld %v rows %d cols %d", s.HasPartitionLevelDeletions, s.TotalRows, s.TotalColumnsSet)
	}
	// Deletion times round up to the minute: 1700000001 -> 1700000040, 1700000100 -> 1700000100.
	want := []TombstoneBin{{1700000040, 1}, {1700000100, 1}}
	if !reflect.DeepEqual(s.TombstoneDropTimes.Bins, want) || s.TombstoneDropTimes.MaxBinSize != 2 {
		t.Errorf("tombstones %+v", s.TombstoneDropTimes)
	}
	if s.EstimatedCellPerPartitionCount.Counts[1] != 1 || s.EstimatedCellPerPartitionCount.Counts[0] != 1 {
		t.Errorf("cell counts %v", s.EstimatedCellPerPartitionCount.Counts[:3])
	}
	if string(s.FirstKey) != "a" || string(s.LastKey) != "b" {
		t.Errorf("keys %q..%q", s.FirstKey, s.LastKey)
	}
	empty := NewCollector(v).Stats()
	if empty.MinTimestamp != math.MinInt64 || empty.MaxTimestamp != math.MaxInt64 || len(empty.FirstKey) != 0 {
		t.Errorf("empty collector %+v", empty)
	}
}

// Past 100 distinct minutes the builder merges the nearest bins, keeping every tombstone.
func TestTombstoneBuilderMergesNearestBins(t *testing.T) {
	b := newTombstoneBuilder()
	var total int64
	for i := int64(0); i < 500; i++ {
		b.update(1700000000 + i*i*7)
		total++
	}
	h := b.build()
	if len(h.Bins) != tombstoneMaxBins {
		t.Fatalf("%d bins", len(h.Bins))
	}
	var sum int64
	for i, bin := range h.Bins {
		sum += bin.Count
		if bin.Point%60 != 0 || (i > 0 && bin.Point <= h.Bins[i-1].Point) {
			t.Fatalf("bin %d point %d not a rounded, increasing minute", i, bin.Point)
		}
	}
	if sum != total {
		t.Errorf("bins hold %d tombstones, want %d", sum, total)
	}
}

func FuzzParse(f *testing.F) {
	versions := []version.Version{}
	for _, fx := range fixtures.All(f) {
		v := fixtureVersion(f, fx)
		idx := -1
		for i, w := range versions {
			if w == v {
				idx = i
			}
		}
		if idx < 0 {
			idx = len(versions)
			versions = append(versions, v)
		}
		f.Add(fx.Read(f, "Statistics.db"), uint8(idx))
	}
	ncIdx := len(versions)
	nc, _ := version.Parse(version.Big, "nc")
	versions = append(versions, nc)
	f.Add(NewStatistics(nc, "p", 0.1, &schema.Header{}).Append(nil, nc), uint8(ncIdx))
	f.Fuzz(func(t *testing.T, b []byte, vi uint8) {
		v := versions[int(vi)%len(versions)]
		s, err := Parse(b, v)
		problems := Check(b, v)
		if err != nil {
			if len(problems) == 0 {
				t.Fatalf("Parse failed (%v) but Check found nothing", err)
			}
			return
		}
		if len(problems) != 0 {
			t.Fatalf("Parse succeeded but Check reports %v", problems)
		}
		if got := s.Append(nil, v); !bytes.Equal(got, b) {
			t.Fatalf("round trip differs:\n got %x\nwant %x", got, b)
		}
	})
}
