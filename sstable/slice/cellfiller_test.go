package slice

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/sstabletest"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

const marshal = "org.apache.cassandra.db.marshal."

// fixedKeyTable writes an sstable of n partitions whose keys are values of a fixed shape (keyOf),
// each holding the rows rowsOf makes, LZ4 in 4 KiB chunks.
func fixedKeyTable(t *testing.T, v string, h *schema.Header, n int, keyOf func(i int) []byte, rowsOf func(rng *rand.Rand) []*rows.Row) string {
	t.Helper()
	ver, err := version.ParseWritable(v)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = keyOf(i)
	}
	sort.Slice(keys, func(a, b int) bool {
		return token.CompareKeys(token.Murmur3.Token(keys[a]), keys[a], token.Murmur3.Token(keys[b]), keys[b]) < 0
	})
	w, err := sstable.NewWriter(t.TempDir(), sstable.WriterOptions{Version: ver, Partitioner: token.Murmur3, Header: h,
		Compressor: "LZ4Compressor", ChunkLength: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, uint64(n)))
	for _, k := range keys {
		if err := w.BeginPartition(k, rows.Live); err != nil {
			t.Fatal(err)
		}
		for _, r := range rowsOf(rng) {
			if err := w.AppendRow(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.EndPartition(); err != nil {
			t.Fatal(err)
		}
	}
	d, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return d.Prefix()
}

// liveRow is a row of clustering ck whose only column (0) holds value, written at ts.
func liveRow(ck [][]byte, value []byte, ts int64) *rows.Row {
	return &rows.Row{Clustering: ck, Liveness: rows.Liveness{Timestamp: ts, TTL: rows.NoTTL, LocalExpirationTime: rows.NoDeletionTime},
		Deletion: rows.Live, Columns: []rows.ColumnData{{Column: 0, Deletion: rows.Live, Cells: []rows.Cell{{
			Timestamp: ts, LocalDeletionTime: rows.NoDeletionTime, TTL: rows.NoTTL, Value: value}}}}}
}

// textRows makes 1 to 4 rows of clustering ck(j) and a 50 to 350 letter value.
func textRows(ck func(j int) [][]byte) func(rng *rand.Rand) []*rows.Row {
	return func(rng *rand.Rand) []*rows.Row {
		var out []*rows.Row
		for j := 0; j < 1+rng.IntN(4); j++ {
			val := make([]byte, 50+rng.IntN(300))
			for i := range val {
				val[i] = 'a' + byte(rng.IntN(26))
			}
			out = append(out, liveRow(ck(j), val, 1_700_000_000_000_000+int64(j)))
		}
		return out
	}
}

func be32(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i)) }

// Keys of a fixed shape (an int, a time UUID clustering; a compound key of an int and a text)
// cannot be sized by their length: the gaps between a slice's runs are filled with one
// partition each whose only row holds one expired cell of the padding column, sized to the byte,
// its key searched among values of the key type for a token in the gap. Every slice is then
// what its index says to a sequential reader, verifies, holds exactly the parent's partitions in
// the ranges, and zero-copy keeps the whole chunks of its runs.
func TestSliceFillsFixedShapeKeysWithExpiredCells(t *testing.T) {
	timeuuid := func(j int) [][]byte {
		b := make([]byte, 16)
		b[3], b[6], b[8] = byte(j), 0x10, 0x80
		return [][]byte{b}
	}
	compound := func(i int) []byte {
		var k []byte
		k = binary.BigEndian.AppendUint16(k, 4)
		k = append(append(k, be32(i)...), 0)
		s := []byte(fmt.Sprintf("user-%d", i))
		k = binary.BigEndian.AppendUint16(k, uint16(len(s)))
		return append(append(k, s...), 0)
	}
	cases := []struct {
		name  string
		h     *schema.Header
		key   func(int) []byte
		ck    func(int) [][]byte
		versn string
	}{
		{"int key, int clustering, oa", &schema.Header{MinTimestamp: 1_700_000_000_000_000, KeyType: marshal + "Int32Type",
			ClusteringTypes: []string{marshal + "Int32Type"}, RegularColumns: []schema.Column{{Name: []byte("v"), Type: marshal + "UTF8Type"}}},
			be32, func(j int) [][]byte { return [][]byte{be32(j)} }, "oa"},
		{"int key, timeuuid clustering, oa", &schema.Header{MinTimestamp: 1_700_000_000_000_000, KeyType: marshal + "Int32Type",
			ClusteringTypes: []string{marshal + "TimeUUIDType"}, RegularColumns: []schema.Column{{Name: []byte("v"), Type: marshal + "BytesType"}}},
			be32, timeuuid, "oa"},
		{"bigint key, int clustering, da", &schema.Header{MinTimestamp: 1_700_000_000_000_000, KeyType: marshal + "LongType",
			ClusteringTypes: []string{marshal + "Int32Type"}, RegularColumns: []schema.Column{{Name: []byte("v"), Type: marshal + "BytesType"}}},
			func(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)*7919) }, func(j int) [][]byte { return [][]byte{be32(j)} }, "da"},
		{"compound key, nb", &schema.Header{MinTimestamp: 1_700_000_000_000_000, KeyType: marshal + "CompositeType(" + marshal + "Int32Type," + marshal + "UTF8Type)",
			ClusteringTypes: []string{marshal + "Int32Type"}, RegularColumns: []schema.Column{{Name: []byte("v"), Type: marshal + "UTF8Type"}}},
			compound, func(j int) [][]byte { return [][]byte{be32(j)} }, "nb"},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prefix := fixedKeyTable(t, c.versn, c.h, 3000, c.key, textRows(c.ck))
			parts := readAll(t, prefix)
			for _, n := range []int{1, 8, 33} {
				ranges := manyRanges(rng, parts, n)
				for _, m := range []Mode{ModeCopy, ModeAuto} {
					res := checkSlice(t, prefix, ranges, m, Options{Bounds: Bounds{MaxDeadRatio: -1}})
					for _, ch := range res.Children {
						if ch.Reencoded != "" {
							t.Errorf("%d ranges, %s: %s", n, m, ch.Reencoded)
						}
						if n > 1 && ch.FillerPartitions == 0 {
							t.Errorf("%d ranges, %s: no filler partition: the test proves nothing", n, m)
						}
						if err := sstabletest.CheckScannable(ch.Desc.Prefix(), sstabletest.Keys(readAll(t, ch.Desc.Prefix()))); err != nil {
							t.Error(err)
						}
						rep, err := sstable.Verify(ch.Desc.Prefix(), sstable.VerifyOptions{Extended: true})
						if err != nil {
							t.Fatal(err)
						}
						if rep.Fillers != ch.FillerPartitions {
							t.Errorf("verify counts %d fillers, the slice made %d", rep.Fillers, ch.FillerPartitions)
						}
					}
				}
			}
		})
	}
}

// A slice of a fixed-shape-key table without a text or blob column to pad with: its runs are
// re-encoded (no filler), and it is still exactly what its index says.
func TestSliceReencodesWhatCannotBeFilled(t *testing.T) {
	h := &schema.Header{MinTimestamp: 1_700_000_000_000_000, KeyType: marshal + "Int32Type",
		ClusteringTypes: []string{marshal + "Int32Type"}, RegularColumns: []schema.Column{{Name: []byte("v"), Type: marshal + "Int32Type"}}}
	prefix := fixedKeyTable(t, "oa", h, 2000, be32, func(*rand.Rand) []*rows.Row {
		out := make([]*rows.Row, 20)
		for j := range out {
			out[j] = liveRow([][]byte{be32(j)}, be32(j), 1_700_000_000_000_000)
		}
		return out
	})
	parts := readAll(t, prefix)
	ranges := manyRanges(rand.New(rand.NewPCG(1, 2)), parts, 8)
	res := checkSlice(t, prefix, ranges, ModeCopy, Options{Bounds: Bounds{MaxDeadRatio: -1}})
	if len(res.Children) != 1 || res.Children[0].FillerPartitions != 0 || res.Children[0].Reencoded == "" {
		t.Fatalf("%+v", res.Children)
	}
	if err := sstabletest.CheckScannable(res.Children[0].Desc.Prefix(), sstabletest.Keys(readAll(t, res.Children[0].Desc.Prefix()))); err != nil {
		t.Error(err)
	}
	if _, err := Slice(context.Background(), openTable(t, prefix), ranges, t.TempDir(), Options{Mode: ModeCopy}); err != nil {
		t.Fatal(err)
	}
}
