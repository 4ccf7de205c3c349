package rows

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

const m = schema.MarshalPackage

var (
	vNB = version.Version{Format: version.Big, Name: "nb"}
	vOA = version.Version{Format: version.Big, Name: "oa"}
	vDA = version.Version{Format: version.BTI, Name: "da"}
	vMD = version.Version{Format: version.Big, Name: "md"}
)

// richHeader exercises every row feature: fixed and variable clustering values, static and
// regular simple and complex columns (set, map, list, non-frozen UDT), and counters.
func richHeader() *schema.Header {
	return &schema.Header{
		MinTimestamp:         1_600_000_000_000_000,
		MinLocalDeletionTime: 1_600_000_000,
		MinTTL:               60,
		KeyType:              m + "UTF8Type",
		ClusteringTypes:      []string{m + "Int32Type", m + "ReversedType(" + m + "UTF8Type)"},
		StaticColumns: []schema.Column{
			{Name: []byte("s_int"), Type: m + "Int32Type"},
			{Name: []byte("s_set"), Type: m + "SetType(" + m + "UTF8Type)"},
		},
		RegularColumns: []schema.Column{
			{Name: []byte("a"), Type: m + "Int32Type"},
			{Name: []byte("b"), Type: m + "UTF8Type"},
			{Name: []byte("c"), Type: m + "CounterColumnType"},
			{Name: []byte("l"), Type: m + "ListType(" + m + "Int32Type)"},
			{Name: []byte("mp"), Type: m + "MapType(" + m + "UTF8Type," + m + "Int32Type)"},
			{Name: []byte("u"), Type: m + "UserType(ks,61646472,737472656574:" + m + "UTF8Type,7a6970:" + m + "Int32Type)"},
		},
	}
}

func compile(t testing.TB, h *schema.Header) *schema.Table {
	t.Helper()
	tb, err := schema.Compile(h)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func i32(v int32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }

const ts0 = 1_600_000_000_000_000

func live(ts int64, v []byte) Cell {
	return Cell{Timestamp: ts, LocalDeletionTime: NoDeletionTime, Value: v}
}

// partition is a partition to write and the expected decoding.
type partition struct {
	key      []byte
	deletion DeletionTime
	static   *Row
	items    []any // *Row or *Marker
}

func richPartitions() []partition {
	expiringRow := Liveness{Timestamp: ts0 + 10, TTL: 3600, LocalExpirationTime: 1_700_000_000}
	return []partition{{
		key:      []byte("k1"),
		deletion: DeletionTime{MarkedForDeleteAt: ts0 - 5, LocalDeletionTime: 1_650_000_000},
		static: &Row{Static: true, Liveness: EmptyLiveness, Deletion: Live, Columns: []ColumnData{
			{Column: 0, Deletion: Live, Cells: []Cell{live(ts0+1, i32(7))}},
			{Column: 1, Deletion: DeletionTime{MarkedForDeleteAt: ts0, LocalDeletionTime: 1_650_000_001}, Cells: []Cell{
				{Timestamp: ts0 + 1, LocalDeletionTime: NoDeletionTime, Path: []byte("x")},
				{Timestamp: ts0 + 1, LocalDeletionTime: NoDeletionTime, Path: []byte("y")},
			}},
		}},
		items: []any{
			&Marker{Kind: InclStartBound, Values: [][]byte{i32(1)}, Deletion: DeletionTime{MarkedForDeleteAt: ts0 + 3, LocalDeletionTime: 1_650_000_002}, Start: Live},
			// All columns, an expiring row with cells using the row's TTL, one with its own.
			&Row{Clustering: [][]byte{i32(1), []byte("r1")}, Liveness: expiringRow, Deletion: Live, Columns: []ColumnData{
				{Column: 0, Deletion: Live, Cells: []Cell{{Timestamp: ts0 + 10, TTL: 3600, LocalDeletionTime: 1_700_000_000, Value: i32(1)}}},
				{Column: 1, Deletion: Live, Cells: []Cell{{Timestamp: ts0 + 11, TTL: 120, LocalDeletionTime: 1_650_000_120, Value: []byte("bee")}}},
				{Column: 2, Deletion: Live, Cells: []Cell{live(ts0+12, []byte{0, 1, 0x80, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1})}},
				{Column: 3, Deletion: Live, Cells: []Cell{
					{Timestamp: ts0 + 10, LocalDeletionTime: NoDeletionTime, Path: bytes.Repeat([]byte{1}, 16), Value: i32(3)},
				}},
				{Column: 4, Deletion: Live, Cells: []Cell{
					{Timestamp: ts0 + 13, LocalDeletionTime: 1_650_000_003, Tombstone: true, Path: []byte("gone")},
					{Timestamp: ts0 + 13, LocalDeletionTime: NoDeletionTime, Path: []byte("kept"), Value: i32(4)},
				}},
				{Column: 5, Deletion: Live, Cells: []Cell{
					{Timestamp: ts0 + 13, LocalDeletionTime: NoDeletionTime, Path: []byte{0, 1}, Value: i32(94110)},
				}},
			}},
			// A subset of columns, a complex deletion on one complex column and the live
			// complex-deletion slot that forces on the others, a shadowable row deletion.
			&Row{Clustering: [][]byte{i32(2), []byte{}}, Liveness: EmptyLiveness,
				Deletion: DeletionTime{MarkedForDeleteAt: ts0 + 20, LocalDeletionTime: 1_650_000_020}, Shadowable: true,
				Columns: []ColumnData{
					{Column: 1, Deletion: Live, Cells: []Cell{{Timestamp: ts0 + 21, LocalDeletionTime: 1_650_000_021, Tombstone: true}}},
					{Column: 3, Deletion: DeletionTime{MarkedForDeleteAt: ts0 + 19, LocalDeletionTime: 1_650_000_019}},
					{Column: 4, Deletion: Live, Cells: []Cell{{Timestamp: ts0 + 22, LocalDeletionTime: NoDeletionTime, Path: []byte{}, Value: i32(0)}}},
				}},
			&Marker{Kind: ExclEndInclStartBoundary, Values: [][]byte{i32(3), []byte("z")},
				Deletion: DeletionTime{MarkedForDeleteAt: ts0 + 3, LocalDeletionTime: 1_650_000_002},
				Start:    DeletionTime{MarkedForDeleteAt: ts0 + 4, LocalDeletionTime: 1_650_000_004}},
			// Null clustering value, a timestamp below the header minimum and a local deletion
			// time below it: negative deltas take 9-byte vints.
			&Row{Clustering: [][]byte{i32(4), nil}, Liveness: Liveness{Timestamp: ts0 - 1_000_000, LocalExpirationTime: NoDeletionTime}, Deletion: Live,
				Columns: []ColumnData{{Column: 1, Deletion: Live, Cells: []Cell{{Timestamp: ts0 - 7, LocalDeletionTime: 1_500_000_000, Tombstone: true}}}}},
			&Marker{Kind: InclEndBound, Values: [][]byte{i32(9)}, Deletion: DeletionTime{MarkedForDeleteAt: ts0 + 4, LocalDeletionTime: 1_650_000_004}, Start: Live},
			// A row whose primary key liveness is all there is.
			&Row{Clustering: [][]byte{i32(10), []byte("only")}, Liveness: Liveness{Timestamp: ts0, LocalExpirationTime: NoDeletionTime}, Deletion: Live},
		},
	}, {
		// A partition with nothing but its (empty) static row.
		key: []byte("k2"), deletion: Live,
		static: &Row{Static: true, Liveness: EmptyLiveness, Deletion: Live},
	}}
}

func writePartition(t testing.TB, w *Writer, dst []byte, p partition, explicitStatic bool) []byte {
	t.Helper()
	var err error
	if dst, err = w.BeginPartition(dst, p.key, p.deletion); err != nil {
		t.Fatal(err)
	}
	if p.static != nil && (explicitStatic || len(p.static.Columns) > 0) {
		if dst, err = w.AppendStatic(dst, p.static); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range p.items {
		switch it := it.(type) {
		case *Row:
			dst, err = w.AppendRow(dst, it)
		case *Marker:
			dst, err = w.AppendMarker(dst, it)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if dst, err = w.EndPartition(dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// dumpRow renders a row canonically: nil and empty clustering values differ (null vs empty),
// nil and empty cell values do not (both are HAS_EMPTY_VALUE on disk), and every live
// deletion prints as live (the live complex-deletion slot reads back with a raw local
// deletion time).
func dumpRow(r *Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "static=%v ck=[", r.Static)
	for _, v := range r.Clustering {
		if v == nil {
			b.WriteString("null ")
		} else {
			fmt.Fprintf(&b, "%x ", v)
		}
	}
	fmt.Fprintf(&b, "] live=%+v del=%s shadow=%v", r.Liveness, dumpDeletion(r.Deletion), r.Shadowable && !r.Deletion.IsLive())
	for _, cd := range r.Columns {
		fmt.Fprintf(&b, " col%d{del=%s", cd.Column, dumpDeletion(cd.Deletion))
		for _, c := range cd.Cells {
			fmt.Fprintf(&b, " [ts=%d ldt=%d ttl=%d tomb=%v path=%x val=%x]", c.Timestamp, c.LocalDeletionTime, c.TTL, c.Tombstone, c.Path, c.Value)
		}
		b.WriteString("}")
	}
	return b.String()
}

func dumpDeletion(d DeletionTime) string {
	if d.IsLive() {
		return "live"
	}
	return fmt.Sprintf("%+v", d)
}

func dumpMarker(mk *Marker) string {
	start := Live
	if mk.Kind.IsBoundary() {
		start = mk.Start
	}
	return fmt.Sprintf("marker kind=%d values=%x del=%+v start=%+v", mk.Kind, mk.Values, mk.Deletion, start)
}

// The writer's output decodes to exactly what was written, for every row feature, in both
// DeletionTime encodings; and re-encoding the decoding gives the same bytes.
func TestWriteReadRoundTrip(t *testing.T) {
	tb := compile(t, richHeader())
	for _, v := range []version.Version{vMD, vNB, vOA, vDA} {
		t.Run(v.String(), func(t *testing.T) {
			w := NewWriter(tb, v)
			var c Cursor
			for pi, p := range richPartitions() {
				buf := writePartition(t, w, nil, p, false)
				if err := c.Reset(tb, v, buf); err != nil {
					t.Fatalf("partition %d: %v\n%x", pi, err, buf)
				}
				if !bytes.Equal(c.Key(), p.key) || c.Deletion() != p.deletion {
					t.Fatalf("partition %d: header %q %+v", pi, c.Key(), c.Deletion())
				}
				if got, want := dumpRow(c.Static()), dumpRow(p.static); got != want {
					t.Errorf("partition %d static:\n got %s\nwant %s", pi, got, want)
				}
				for i, it := range p.items {
					if !c.Next() {
						t.Fatalf("partition %d: ended at item %d: %v", pi, i, c.Err())
					}
					var got, want string
					switch it := it.(type) {
					case *Row:
						got, want = dumpRow(c.Row()), dumpRow(it)
						if c.Kind() != KindRow {
							got = "a marker"
						}
					case *Marker:
						got, want = dumpMarker(c.Marker()), dumpMarker(it)
						if c.Kind() != KindMarker {
							got = "a row"
						}
					}
					if got != want {
						t.Errorf("partition %d item %d:\n got %s\nwant %s", pi, i, got, want)
					}
				}
				if c.Next() || !c.Done() {
					t.Fatalf("partition %d: not at the end: %v", pi, c.Err())
				}
				// Re-encoding the decoding gives the same bytes.
				if again := reencodeTable(t, &c, NewWriter(tb, v), tb, v, buf); !bytes.Equal(again, buf) {
					t.Errorf("partition %d: re-encoded\n%x\nwant\n%x", pi, again, buf)
				}
				// Writing the empty static row explicitly gives the same bytes as letting the
				// writer add it.
				if again := writePartition(t, w, nil, p, true); !bytes.Equal(again, buf) {
					t.Errorf("partition %d: explicit empty static row differs", pi)
				}
			}
		})
	}
}

// Hand-derived encodings from UnfilteredSerializer, Columns.Serializer and
// ClusteringBoundOrBoundary.Serializer, for features no fixture contains.
func TestWriterGolden(t *testing.T) {
	h := &schema.Header{
		MinTimestamp: 1000, MinLocalDeletionTime: 100, MinTTL: 0,
		KeyType:         m + "BytesType",
		ClusteringTypes: []string{m + "Int32Type"},
		RegularColumns: []schema.Column{
			{Name: []byte("a"), Type: m + "Int32Type"},
			{Name: []byte("b"), Type: m + "UTF8Type"},
			{Name: []byte("c"), Type: m + "UTF8Type"},
		},
	}
	tb := compile(t, h)
	cases := []struct {
		name string
		v    version.Version
		del  DeletionTime
		item any
		want string // partition hex
	}{{
		name: "subset bitmap of missing columns",
		v:    vNB, del: Live,
		item: &Row{Clustering: [][]byte{i32(5)}, Liveness: Liveness{Timestamp: 1001, LocalExpirationTime: NoDeletionTime}, Deletion: Live,
			Columns: []ColumnData{{Column: 1, Deletion: Live, Cells: []Cell{live(1001, []byte("hi"))}}}},
		// key 0001 6b, legacy LIVE; flags 04 (timestamp, not all columns); clustering header
		// 00, value 00000005; size 07 = prev(1) + ts(1) + bitmap(1) + cell(4); prev 0f (the
		// header is 15 bytes); ts delta 01; bitmap 05 (a and c missing); cell 08 (row
		// timestamp) 02 "hi"; end 01.
		want: "00016b" + "7fffffff8000000000000000" + "04" + "00" + "00000005" + "07" + "0f" + "01" + "05" + "08026869" + "01",
	}, {
		name: "boundary marker after a row, oa deletion",
		v:    vOA, del: DeletionTime{MarkedForDeleteAt: 7, LocalDeletionTime: 200},
		item: &Marker{Kind: InclEndExclStartBoundary, Values: [][]byte{i32(5)},
			Deletion: DeletionTime{MarkedForDeleteAt: 1002, LocalDeletionTime: 101},
			Start:    DeletionTime{MarkedForDeleteAt: 1003, LocalDeletionTime: 102}},
		// key; oa deletion i64 7, u32 200; flags 02; kind 05; size 0001; header 00; value;
		// body size 05 = prev(1) + 2 + 2; prev 0f; end deletion 02 01; start deletion 03 02.
		want: "00016b" + "0000000000000007000000c8" + "02" + "05" + "0001" + "00" + "00000005" + "05" + "0f" + "0201" + "0302" + "01",
	}, {
		name: "expiring row, cell sharing the row ttl, tombstone below the minimum",
		v:    vNB, del: Live,
		item: &Row{Clustering: [][]byte{i32(5)}, Liveness: Liveness{Timestamp: 1000, TTL: 10, LocalExpirationTime: 110}, Deletion: Live,
			Columns: []ColumnData{
				{Column: 0, Deletion: Live, Cells: []Cell{{Timestamp: 1000, TTL: 10, LocalDeletionTime: 110, Value: i32(1)}}},
				{Column: 1, Deletion: Live, Cells: []Cell{{Timestamp: 1000, TTL: 10, LocalDeletionTime: 110}}},
				{Column: 2, Deletion: Live, Cells: []Cell{{Timestamp: 999, Tombstone: true, LocalDeletionTime: 99}}},
			}},
		// flags 2c (timestamp, ttl, all columns); size 1d; prev 0f; ts 00, ttl 0a, ldt 0a;
		// a: 1a (expiring, row ts, row ttl) 00000001; b: 1e (+ empty value);
		// c: 05 (deleted, empty), ts delta -1 and ldt delta -1 as 9-byte sign-extended vints.
		want: "00016b" + "7fffffff8000000000000000" + "2c" + "00" + "00000005" + "1d" + "0f" + "00" + "0a" + "0a" +
			"1a00000001" + "1e" + "05" + "ffffffffffffffffff" + "ffffffffffffffffff" + "01",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := partition{key: []byte("k"), deletion: tc.del, items: []any{tc.item}}
			got := writePartition(t, NewWriter(tb, tc.v), nil, p, false)
			if hex.EncodeToString(got) != tc.want {
				t.Fatalf("\n got %x\nwant %s", got, tc.want)
			}
			var c Cursor
			if err := c.Reset(tb, tc.v, got); err != nil || !c.Next() || c.Next() || !c.Done() {
				t.Fatalf("decode: %v", c.Err())
			}
		})
	}
}

// Supersets of 64 columns or more switch to index lists: the present indexes when fewer
// than half are present, else the missing ones.
func TestLargeColumnSubsets(t *testing.T) {
	h := &schema.Header{KeyType: m + "BytesType"}
	for i := 0; i < 70; i++ {
		h.RegularColumns = append(h.RegularColumns, schema.Column{Name: []byte(fmt.Sprintf("c%02d", i)), Type: m + "Int32Type"})
	}
	tb := compile(t, h)
	subsets := [][]int{{3}, {0, 69}, {1, 2, 3, 4, 5}, seq(0, 34), seq(0, 35), seq(1, 70), seq(0, 69), seq(0, 70)}
	// 70 columns: 35 present is not fewer than half, so 35 missing indexes are listed.
	wantSizes := []int{2, 3, 6, 35, 36, 2, 2, 0}
	for i, set := range subsets {
		r := &Row{Liveness: Liveness{Timestamp: 1, LocalExpirationTime: NoDeletionTime}, Deletion: Live}
		for _, col := range set {
			r.Columns = append(r.Columns, ColumnData{Column: col, Deletion: Live, Cells: []Cell{live(1, i32(int32(col)))}})
		}
		if got := subsetSizeOrZero(r.Columns, 70); got != wantSizes[i] {
			t.Errorf("subset %v: %d bytes, want %d", set, got, wantSizes[i])
		}
		buf := writePartition(t, NewWriter(tb, vNB), nil, partition{key: []byte("k"), deletion: Live, items: []any{r}}, false)
		var c Cursor
		if err := c.Reset(tb, vNB, buf); err != nil || !c.Next() {
			t.Fatalf("subset %v: %v", set, c.Err())
		}
		if got, want := dumpRow(c.Row()), dumpRow(r); got != want {
			t.Errorf("subset %v:\n got %s\nwant %s", set, got, want)
		}
	}
}

func subsetSizeOrZero(cols []ColumnData, n int) int {
	if len(cols) == n {
		return 0
	}
	return subsetSize(cols, n)
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

// Clusterings of more than 32 values carry one header per 32 values.
func TestWideClustering(t *testing.T) {
	h := &schema.Header{KeyType: m + "BytesType"}
	r := &Row{Liveness: Liveness{Timestamp: 5, LocalExpirationTime: NoDeletionTime}, Deletion: Live}
	for i := 0; i < 40; i++ {
		h.ClusteringTypes = append(h.ClusteringTypes, m+"UTF8Type")
		switch i % 3 {
		case 0:
			r.Clustering = append(r.Clustering, nil)
		case 1:
			r.Clustering = append(r.Clustering, []byte{})
		default:
			r.Clustering = append(r.Clustering, []byte{byte(i)})
		}
	}
	tb := compile(t, h)
	buf := writePartition(t, NewWriter(tb, vOA), nil, partition{key: []byte("k"), deletion: Live, items: []any{r}}, false)
	// After key (3 bytes), LIVE (1) and flags (1): the first header has 2 bits per value.
	if want := clusteringHeader(r.Clustering, 0); want&3 != 2 || (want>>2)&3 != 1 || (want>>4)&3 != 0 {
		t.Fatalf("header %b", want)
	}
	var c Cursor
	if err := c.Reset(tb, vOA, buf); err != nil || !c.Next() {
		t.Fatal(c.Err())
	}
	if got, want := dumpRow(c.Row()), dumpRow(r); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

// Invalid input is refused before anything is written, and the writer stays usable.
func TestWriterRejects(t *testing.T) {
	tb := compile(t, richHeader())
	ok := &Row{Clustering: [][]byte{i32(1), []byte("x")}, Liveness: Liveness{Timestamp: ts0, LocalExpirationTime: NoDeletionTime}, Deletion: Live}
	bad := []struct {
		name string
		row  *Row
	}{
		{"clustering arity", &Row{Clustering: [][]byte{i32(1)}, Liveness: EmptyLiveness, Deletion: Live}},
		{"fixed width clustering", &Row{Clustering: [][]byte{{1, 2}, []byte("x")}, Liveness: EmptyLiveness, Deletion: Live}},
		{"ttl without timestamp", &Row{Clustering: ok.Clustering, Liveness: Liveness{Timestamp: NoTimestamp, TTL: 5}, Deletion: Live}},
		{"columns out of order", &Row{Clustering: ok.Clustering, Liveness: EmptyLiveness, Deletion: Live, Columns: []ColumnData{
			{Column: 1, Cells: []Cell{live(1, []byte("b"))}, Deletion: Live}, {Column: 0, Cells: []Cell{live(1, i32(1))}, Deletion: Live}}}},
		{"unknown column", &Row{Clustering: ok.Clustering, Liveness: EmptyLiveness, Deletion: Live, Columns: []ColumnData{
			{Column: 6, Cells: []Cell{live(1, nil)}, Deletion: Live}}}},
		{"simple column with two cells", &Row{Clustering: ok.Clustering, Liveness: EmptyLiveness, Deletion: Live, Columns: []ColumnData{
			{Column: 1, Cells: []Cell{live(1, nil), live(2, nil)}, Deletion: Live}}}},
		{"fixed width value", &Row{Clustering: ok.Clustering, Liveness: EmptyLiveness, Deletion: Live, Columns: []ColumnData{
			{Column: 0, Cells: []Cell{live(1, []byte{1})}, Deletion: Live}}}},
		{"path on a simple column", &Row{Clustering: ok.Clustering, Liveness: EmptyLiveness, Deletion: Live, Columns: []ColumnData{
			{Column: 1, Cells: []Cell{{Timestamp: 1, Path: []byte{1}}}, Deletion: Live}}}},
		{"expiring tombstone", &Row{Clustering: ok.Clustering, Liveness: EmptyLiveness, Deletion: Live, Columns: []ColumnData{
			{Column: 1, Cells: []Cell{{Timestamp: 1, Tombstone: true, TTL: 4}}, Deletion: Live}}}},
		{"static passed as a row", &Row{Static: true, Liveness: EmptyLiveness, Deletion: Live}},
	}
	w := NewWriter(tb, vOA)
	dst, err := w.BeginPartition([]byte("prefix"), []byte("k"), Live)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		before, size := len(dst), w.PartitionSize()
		out, err := w.AppendRow(dst, b.row)
		if !errors.Is(err, ErrInvalid) || len(out) != before || w.PartitionSize() != size {
			t.Errorf("%s: err %v, %d bytes appended", b.name, err, len(out)-before)
		}
	}
	if dst, err = w.AppendRow(dst, ok); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendStatic(dst, &Row{Static: true}); !errors.Is(err, ErrInvalid) {
		t.Errorf("static row after rows: %v", err)
	}
	if _, err := w.BeginPartition(dst, []byte("k2"), Live); !errors.Is(err, ErrInvalid) {
		t.Errorf("nested partition: %v", err)
	}
	if dst, err = w.EndPartition(dst); err != nil {
		t.Fatal(err)
	}
	var c Cursor
	if err := c.Reset(tb, vOA, dst[len("prefix"):]); err != nil || !c.Next() || c.Next() || !c.Done() {
		t.Fatalf("after rejections the partition does not decode: %v", c.Err())
	}
	if _, err := w.AppendRow(nil, ok); !errors.Is(err, ErrInvalid) {
		t.Errorf("row outside a partition: %v", err)
	}
	if _, err := w.BeginPartition(nil, make([]byte, 1<<16), Live); !errors.Is(err, ErrInvalid) {
		t.Errorf("oversized key: %v", err)
	}
	if _, err := w.BeginPartition(nil, nil, DeletionTime{MarkedForDeleteAt: 1, LocalDeletionTime: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unencodable oa deletion: %v", err)
	}
}

// Partition deletions in both encodings, including the sentinels.
func TestPartitionDeletionTime(t *testing.T) {
	cases := []struct {
		v    version.Version
		d    DeletionTime
		want string
		back DeletionTime
	}{
		{vNB, Live, "7fffffff8000000000000000", Live},
		{vNB, DeletionTime{MarkedForDeleteAt: 5, LocalDeletionTime: 6}, "000000060000000000000005", DeletionTime{MarkedForDeleteAt: 5, LocalDeletionTime: 6}},
		{vNB, DeletionTime{MarkedForDeleteAt: 5, LocalDeletionTime: math.MaxInt32}, "7fffffff0000000000000005", DeletionTime{MarkedForDeleteAt: 5, LocalDeletionTime: math.MaxInt32}},
		{vOA, Live, "80", Live},
		{vOA, DeletionTime{MarkedForDeleteAt: math.MinInt64, LocalDeletionTime: 3}, "80", Live},
		{vDA, DeletionTime{MarkedForDeleteAt: 5, LocalDeletionTime: math.MaxUint32}, "0000000000000005ffffffff", DeletionTime{MarkedForDeleteAt: 5, LocalDeletionTime: math.MaxUint32}},
	}
	for _, tc := range cases {
		b, err := AppendDeletionTime(nil, tc.v, tc.d)
		if err != nil || hex.EncodeToString(b) != tc.want || DeletionTimeSize(tc.v, tc.d) != len(b) {
			t.Errorf("%s %+v: %x %v", tc.v, tc.d, b, err)
			continue
		}
		got, n, err := ReadDeletionTime(b, tc.v)
		if err != nil || n != len(b) || got != tc.back {
			t.Errorf("%s %x: %+v %d %v", tc.v, b, got, n, err)
		}
	}
	for _, b := range []string{"81", "", "00000000"} {
		raw, _ := hex.DecodeString(b)
		if _, _, err := ReadDeletionTime(raw, vOA); err == nil {
			t.Errorf("oa %s: no error", b)
		}
	}
}
