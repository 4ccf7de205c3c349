package rows

import (
	"fmt"
	"sync"
	"testing"

	"github.com/pierrec/lz4/v4"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// Test-only readers for the two components the row codec needs from a fixture: the
// uncompressed Data.db bytes and the SerializationHeader. They are deliberately small and
// independent of sstable/compress and sstable/stats.

// fixture is one sstable prepared for row tests.
type fixture struct {
	fixtures.SSTable
	v      version.Version
	header *schema.Header
	table  *schema.Table
	data   []byte // uncompressed Data.db
	// partitions holds each partition's [start, end) in data, in file order.
	partitions [][2]int
	keys       []fixtures.Key
}

func loadFixture(t testing.TB, s fixtures.SSTable) *fixture {
	t.Helper()
	f, err := version.ParseFormat(s.Format)
	if err != nil {
		t.Fatal(err)
	}
	v, err := version.Parse(f, s.Version)
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{SSTable: s, v: v}
	fx.header, err = parseStatisticsHeader(s.Read(t, "Statistics.db"), v)
	if err != nil {
		t.Fatalf("%s: Statistics.db header: %v", s.Name, err)
	}
	fx.table, err = schema.Compile(fx.header)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	raw := s.Read(t, "Data.db")
	if s.Has("CompressionInfo.db") {
		fx.data, err = decompressData(s.Read(t, "CompressionInfo.db"), raw, v)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
	} else {
		fx.data = raw
	}
	fx.keys = s.Keys(t)
	for i, k := range fx.keys {
		end := int64(len(fx.data))
		if i+1 < len(fx.keys) {
			end = fx.keys[i+1].DataPos
		}
		if k.DataPos < 0 || k.DataPos > end || end > int64(len(fx.data)) {
			t.Fatalf("%s: key %d: bad partition span [%d, %d)", s.Name, i, k.DataPos, end)
		}
		fx.partitions = append(fx.partitions, [2]int{int(k.DataPos), int(end)})
	}
	return fx
}

var (
	loadOnce sync.Once
	loaded   []*fixture
)

// loadAll loads every fixture once per test binary; tests must not modify them.
func loadAll(t testing.TB) []*fixture {
	t.Helper()
	loadOnce.Do(func() {
		for _, s := range fixtures.All(t) {
			loaded = append(loaded, loadFixture(t, s))
		}
	})
	if len(loaded) == 0 {
		t.Fatal("fixtures failed to load")
	}
	return loaded
}

func (fx *fixture) partition(i int) []byte {
	p := fx.partitions[i]
	return fx.data[p[0]:p[1]]
}

// decompressData parses CompressionInfo.db (FORMAT §2.1) and LZ4-decompresses every chunk.
func decompressData(info, data []byte, v version.Version) ([]byte, error) {
	r := encoding.NewReader(info)
	name := r.UTF()
	if n := r.Count("options", 4); n > 0 {
		for i := 0; i < n; i++ {
			r.UTF()
			r.UTF()
		}
	}
	r.I32() // chunk length
	maxCompressed := int64(1<<31 - 1)
	if v.HasMaxCompressedLength() {
		maxCompressed = int64(r.I32())
	}
	dataLength := r.I64()
	chunks := r.Count("chunks", 8)
	offsets := make([]int64, 0, max(chunks, 0))
	for i := 0; i < chunks; i++ {
		offsets = append(offsets, r.I64())
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if name != "LZ4Compressor" {
		return nil, fmt.Errorf("compressor %q not supported by the test helper", name)
	}
	out := make([]byte, 0, dataLength)
	for i, off := range offsets {
		end := int64(len(data))
		if i+1 < len(offsets) {
			end = offsets[i+1]
		}
		length := end - off - 4
		if off < 0 || length < 0 || end > int64(len(data)) {
			return nil, fmt.Errorf("chunk %d: bad span", i)
		}
		chunk := data[off : off+length]
		if length >= maxCompressed {
			out = append(out, chunk...)
			continue
		}
		if len(chunk) < 4 {
			return nil, fmt.Errorf("chunk %d: %d bytes", i, len(chunk))
		}
		n := int(uint32(chunk[0]) | uint32(chunk[1])<<8 | uint32(chunk[2])<<16 | uint32(chunk[3])<<24)
		buf := make([]byte, n)
		got, err := lz4.UncompressBlock(chunk[4:], buf)
		if err != nil || got != n {
			return nil, fmt.Errorf("chunk %d: lz4: %d of %d bytes: %v", i, got, n, err)
		}
		out = append(out, buf...)
	}
	if int64(len(out)) < dataLength {
		return nil, fmt.Errorf("decompressed %d bytes, dataLength %d", len(out), dataLength)
	}
	return out[:dataLength], nil
}

// EncodingStats epochs (db/rows/EncodingStats.java): 2015-09-22T00:00:00Z.
const (
	timestampEpoch    = 1442880000000000
	deletionTimeEpoch = 1442880000
)

// parseStatisticsHeader finds the HEADER component (type 3) through the Statistics.db table
// of contents (FORMAT §2.9) and decodes the SerializationHeader body.
func parseStatisticsHeader(b []byte, v version.Version) (*schema.Header, error) {
	r := encoding.NewReader(b)
	n := r.Count("components", 8)
	if v.HasMetadataChecksum() {
		r.U32()
	}
	offset := -1
	for i := 0; i < n; i++ {
		typ, off := r.I32(), r.I32()
		if typ == 3 {
			offset = int(off)
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if offset < 0 || offset > len(b) {
		return nil, fmt.Errorf("no HEADER component")
	}
	r = encoding.NewReaderAt(b[offset:], int64(offset))
	h := &schema.Header{
		MinTimestamp:         int64(r.UVint()) + timestampEpoch,
		MinLocalDeletionTime: int64(int32(r.UVint())) + deletionTimeEpoch,
		MinTTL:               int64(int32(r.UVint())),
	}
	h.KeyType = string(r.VintBytes())
	nc := r.UVintCount("clustering types", 1)
	for i := 0; i < nc; i++ {
		h.ClusteringTypes = append(h.ClusteringTypes, string(r.VintBytes()))
	}
	for _, dst := range []*[]schema.Column{&h.StaticColumns, &h.RegularColumns} {
		n := r.UVintCount("columns", 2)
		for i := 0; i < n; i++ {
			name := r.VintBytes()
			typ := r.VintBytes()
			*dst = append(*dst, schema.Column{Name: name, Type: string(typ)})
		}
	}
	return h, r.Err()
}
