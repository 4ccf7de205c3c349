package repair

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"sort"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

const marshal = schema.MarshalPackage

// item is a row or a range tombstone marker of a test partition, in clustering order.
type item struct {
	row    *rows.Row
	marker *rows.Marker
}

type part struct {
	key   string
	del   rows.DeletionTime
	items []item
}

func header(clustering string) *schema.Header {
	return &schema.Header{
		KeyType: marshal + "UTF8Type", ClusteringTypes: []string{marshal + clustering},
		RegularColumns: []schema.Column{{Name: []byte("v"), Type: marshal + "BytesType"}, {Name: []byte("w"), Type: marshal + "BytesType"}},
	}
}

func liveCell(ts int64, v string) rows.Cell {
	return rows.Cell{Timestamp: ts, LocalDeletionTime: rows.NoDeletionTime, Value: []byte(v)}
}

func tombCell(ts int64) rows.Cell {
	return rows.Cell{Timestamp: ts, LocalDeletionTime: 1_700_000_000, Tombstone: true}
}

// row is a row of clustering ck with liveness at ts (none when ts is 0) and cells of column
// v (index 0) and, when given, w (index 1).
func row(ck []byte, ts int64, v *rows.Cell, w *rows.Cell) item {
	r := &rows.Row{Clustering: [][]byte{ck}, Liveness: rows.EmptyLiveness, Deletion: rows.Live}
	if ts != 0 {
		r.Liveness = rows.Liveness{Timestamp: ts, TTL: rows.NoTTL, LocalExpirationTime: rows.NoDeletionTime}
	}
	if v != nil {
		r.Columns = append(r.Columns, rows.ColumnData{Column: 0, Deletion: rows.Live, Cells: []rows.Cell{*v}})
	}
	if w != nil {
		r.Columns = append(r.Columns, rows.ColumnData{Column: 1, Deletion: rows.Live, Cells: []rows.Cell{*w}})
	}
	return item{row: r}
}

func deletedRow(ck []byte, at int64) item {
	return item{row: &rows.Row{Clustering: [][]byte{ck}, Liveness: rows.EmptyLiveness,
		Deletion: rows.DeletionTime{MarkedForDeleteAt: at, LocalDeletionTime: 1_700_000_000}}}
}

func rtBound(kind rows.BoundKind, ck []byte, at int64) item {
	return item{marker: &rows.Marker{Kind: kind, Values: [][]byte{ck},
		Deletion: rows.DeletionTime{MarkedForDeleteAt: at, LocalDeletionTime: 1_700_000_000}}}
}

func del(at int64) rows.DeletionTime {
	return rows.DeletionTime{MarkedForDeleteAt: at, LocalDeletionTime: 1_700_000_000}
}

func cell(c rows.Cell) *rows.Cell { return &c }

func s(v string) []byte { return []byte(v) }

func i32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// writeSSTable writes the partitions (in any order) as one sstable in dir and opens it.
func writeSSTable(t testing.TB, dir string, h *schema.Header, parts ...part) *sstable.Table {
	t.Helper()
	v, err := version.ParseWritable("oa")
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(parts, func(i, j int) bool {
		return token.CompareKeys(token.Murmur3.Token(s(parts[i].key)), s(parts[i].key), token.Murmur3.Token(s(parts[j].key)), s(parts[j].key)) < 0
	})
	w, err := sstable.NewWriter(dir, sstable.WriterOptions{Version: v, Partitioner: token.Murmur3, Header: h})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if err := w.BeginPartition(s(p.key), p.del); err != nil {
			t.Fatal(err)
		}
		for _, it := range p.items {
			if it.row != nil {
				err = w.AppendRow(it.row)
			} else {
				err = w.AppendMarker(it.marker)
			}
			if err != nil {
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
	tb, err := sstable.Open(d.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}

var wholeRing = token.Range{Left: token.Murmur3.MinToken(), Right: token.Murmur3.MinToken()}

func treeOf(t *testing.T, tables ...*sstable.Table) *Tree {
	t.Helper()
	trees, err := Build(context.Background(), tables, []Spec{{Range: wholeRing, Depth: 6}})
	if err != nil {
		t.Fatal(err)
	}
	return trees[0]
}

// layout is one replica's sstables: each inner slice is one sstable's partitions.
type layout [][]part

func (l layout) tree(t *testing.T, h *schema.Header) *Tree {
	t.Helper()
	var tables []*sstable.Table
	for _, ps := range l {
		tables = append(tables, writeSSTable(t, t.TempDir(), h, ps...))
	}
	return treeOf(t, tables...)
}

var other = part{key: "other", items: []item{row(s("x"), 5, cell(liveCell(5, "o")), nil)}}

func TestReconciledContentHashesLikeTheMergedPartition(t *testing.T) {
	h := header("UTF8Type")
	cases := []struct {
		name   string
		split  layout
		merged layout
	}{
		{
			name: "rows split across sstables, overlapping at different timestamps",
			split: layout{
				{{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(liveCell(10, "a1")), nil), row(s("b"), 10, cell(liveCell(10, "old")), nil)}}, other},
				{{key: "k", del: rows.Live, items: []item{row(s("b"), 20, cell(liveCell(20, "new")), cell(liveCell(20, "w"))), row(s("c"), 10, cell(liveCell(10, "c1")), nil)}}},
			},
			merged: layout{{{key: "k", del: rows.Live, items: []item{
				row(s("a"), 10, cell(liveCell(10, "a1")), nil), row(s("b"), 20, cell(liveCell(20, "new")), cell(liveCell(20, "w"))),
				row(s("c"), 10, cell(liveCell(10, "c1")), nil)}}, other}},
		},
		{
			name: "a row deletion shadows older cells and keeps newer ones",
			split: layout{
				{{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(liveCell(10, "a")), cell(liveCell(30, "late")))}}},
				{{key: "k", del: rows.Live, items: []item{deletedRow(s("a"), 20)}}},
			},
			merged: layout{{{key: "k", del: rows.Live, items: []item{{row: &rows.Row{Clustering: [][]byte{s("a")},
				Liveness: rows.EmptyLiveness, Deletion: del(20),
				Columns: []rows.ColumnData{{Column: 1, Deletion: rows.Live, Cells: []rows.Cell{liveCell(30, "late")}}}}}}}}},
		},
		{
			name: "a partition deletion shadows every older row",
			split: layout{
				{{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(liveCell(10, "a")), nil), deletedRow(s("b"), 15)}}},
				{{key: "k", del: del(20), items: nil}},
			},
			merged: layout{{{key: "k", del: del(20)}}},
		},
		{
			name: "a tombstone wins a timestamp tie",
			split: layout{
				{{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(liveCell(10, "zzz")), nil)}}},
				{{key: "k", del: rows.Live, items: []item{row(s("a"), 0, cell(tombCell(10)), nil)}}},
			},
			merged: layout{{{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(tombCell(10)), nil)}}}},
		},
		{
			name: "a range tombstone shadows the rows it covers",
			split: layout{
				{{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(liveCell(10, "a")), nil), row(s("b"), 10, cell(liveCell(10, "b")), nil),
					row(s("c"), 10, cell(liveCell(10, "c")), nil)}}},
				{{key: "k", del: rows.Live, items: []item{rtBound(rows.InclStartBound, s("a"), 20), rtBound(rows.InclEndBound, s("b"), 20)}}},
			},
			merged: layout{{{key: "k", del: rows.Live, items: []item{rtBound(rows.InclStartBound, s("a"), 20), rtBound(rows.InclEndBound, s("b"), 20),
				row(s("c"), 10, cell(liveCell(10, "c")), nil)}}}},
		},
		{
			name: "the same sstable twice is the sstable once",
			split: layout{
				{{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(liveCell(10, "a")), nil)}}, other},
				{{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(liveCell(10, "a")), nil)}}, other},
			},
			merged: layout{{{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(liveCell(10, "a")), nil)}}, other}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := c.split.tree(t, h), c.merged.tree(t, h)
			if d, err := Diff(a, b); err != nil || len(d) != 0 {
				t.Fatalf("split and merged differ in %v (%v)", d, err)
			}
		})
	}
}

func TestDifferingContentHashesDifferently(t *testing.T) {
	h := header("UTF8Type")
	base := part{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(liveCell(10, "a")), nil), row(s("b"), 10, cell(liveCell(10, "b")), nil)}}
	ref := layout{{base, other}}.tree(t, h)
	for _, c := range []struct {
		name string
		l    layout
	}{
		{"another value", layout{{{key: "k", items: []item{row(s("a"), 10, cell(liveCell(10, "A")), nil), row(s("b"), 10, cell(liveCell(10, "b")), nil)}}, other}}},
		{"another timestamp", layout{{{key: "k", items: []item{row(s("a"), 10, cell(liveCell(11, "a")), nil), row(s("b"), 10, cell(liveCell(10, "b")), nil)}}, other}}},
		{"a missing row", layout{{{key: "k", items: []item{row(s("a"), 10, cell(liveCell(10, "a")), nil)}}, other}}},
		{"a missing partition", layout{{base}}},
		{"a newer row deletion", layout{{base, other}, {{key: "k", items: []item{deletedRow(s("b"), 11)}}}}},
		{"an older row deletion is still a deletion", layout{{base, other}, {{key: "k", items: []item{deletedRow(s("b"), 9)}}}}},
		{"a partition deletion", layout{{base, other}, {{key: "k", del: del(5)}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i := range c.l {
				for j := range c.l[i] {
					if c.l[i][j].del == (rows.DeletionTime{}) {
						c.l[i][j].del = rows.Live
					}
				}
			}
			got := c.l.tree(t, h)
			if d, err := Diff(ref, got); err != nil || len(d) == 0 {
				t.Fatalf("no difference found (%v)", err)
			}
		})
	}
}

// Rows of an Int32Type clustering interleave by signed value, not by bytes: merging two
// sstables must order -5 before 3, or the hash would differ from the single sstable's.
func TestInt32ClusteringsMergeInTypeOrder(t *testing.T) {
	h := header("Int32Type")
	r := func(v int32) item { return row(i32(v), 10, cell(liveCell(10, "x")), nil) }
	split := layout{
		{{key: "k", del: rows.Live, items: []item{r(-5), r(3)}}},
		{{key: "k", del: rows.Live, items: []item{r(-1), r(7)}}},
	}.tree(t, h)
	merged := layout{{{key: "k", del: rows.Live, items: []item{r(-5), r(-1), r(3), r(7)}}}}.tree(t, h)
	if d, err := Diff(split, merged); err != nil || len(d) != 0 {
		t.Fatalf("differ in %v (%v)", d, err)
	}
}

func TestComparatorOrdersKnownTypes(t *testing.T) {
	uuid1 := func(timeHi, timeLow byte, node byte) []byte {
		b := make([]byte, 16)
		b[6], b[3], b[15] = 0x10|timeHi, timeLow, node
		return b
	}
	long := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	for _, c := range []struct {
		typ  string
		a, b []byte // a < b
	}{
		{"UTF8Type", s("a"), s("b")},
		{"UTF8Type", s(""), s("\x00")},
		{"Int32Type", i32(-1), i32(0)},
		{"Int32Type", i32(math.MinInt32), i32(math.MaxInt32)},
		{"LongType", long(-2), long(1)},
		{"TimeUUIDType", uuid1(0, 9, 0), uuid1(1, 0, 0)}, // time_hi outranks time_low
		{"TimeUUIDType", uuid1(0, 0, 0x80), uuid1(0, 0, 0x01)},
		{"UUIDType", uuid1(0, 9, 0), uuid1(1, 0, 0)},
		{"ReversedType(org.apache.cassandra.db.marshal.Int32Type)", i32(1), i32(-1)},
	} {
		typ, err := schema.ParseType(marshal + c.typ)
		if c.typ[0] == 'R' {
			typ, err = schema.ParseType(marshal + c.typ)
		}
		if err != nil {
			t.Fatal(err)
		}
		cmp, err := newComparator([]*schema.Type{typ})
		if err != nil {
			t.Fatal(err)
		}
		if cmp.compare(position{values: [][]byte{c.a}}, position{values: [][]byte{c.b}}) >= 0 ||
			cmp.compare(position{values: [][]byte{c.b}}, position{values: [][]byte{c.a}}) <= 0 {
			t.Errorf("%s: %x should sort before %x", c.typ, c.a, c.b)
		}
	}
	typ, _ := schema.ParseType(marshal + "DecimalType")
	if _, err := newComparator([]*schema.Type{typ}); !errors.Is(err, ErrUnsupportedClustering) {
		t.Fatalf("DecimalType: %v", err)
	}
}

// Bounds sit before or after the clusterings they share a prefix with, as their kind says.
func TestBoundsSortAroundEqualClusterings(t *testing.T) {
	typ, _ := schema.ParseType(marshal + "UTF8Type")
	cmp, _ := newComparator([]*schema.Type{typ, typ})
	rowAB := position{values: [][]byte{s("a"), s("b")}}
	for _, c := range []struct {
		kind rows.BoundKind
		vals [][]byte
		want int // sign of compare(bound, row a:b)
	}{
		{rows.InclStartBound, [][]byte{s("a")}, -1},
		{rows.ExclStartBound, [][]byte{s("a")}, 1},
		{rows.InclEndBound, [][]byte{s("a")}, 1},
		{rows.ExclEndBound, [][]byte{s("a")}, -1},
		{rows.InclStartBound, [][]byte{s("a"), s("b")}, -1},
		{rows.InclEndBound, [][]byte{s("a"), s("b")}, 1},
		{rows.InclStartBound, [][]byte{s("b")}, 1},
	} {
		got := cmp.compare(position{values: c.vals, side: sideOf(c.kind)}, rowAB)
		if (got > 0) != (c.want > 0) || got == 0 {
			t.Errorf("bound %d %q against a:b: %d, want sign %d", c.kind, c.vals, got, c.want)
		}
	}
}

func TestUnsupportedClusteringIsAClearError(t *testing.T) {
	h := header("DecimalType")
	tb := writeSSTable(t, t.TempDir(), h, part{key: "k", del: rows.Live, items: []item{row([]byte{0, 0, 0, 1, 5}, 10, nil, nil)}})
	if _, err := Build(context.Background(), []*sstable.Table{tb}, []Spec{{Range: wholeRing, Depth: 2}}); !errors.Is(err, ErrUnsupportedClustering) {
		t.Fatalf("Build: %v, want ErrUnsupportedClustering", err)
	}
}

// Build covers only the partitions of its ranges, and a range's tree counts each key once
// however many sstables hold it.
func TestBuildCountsEachPartitionOnceInItsRange(t *testing.T) {
	h := header("UTF8Type")
	var ps []part
	for i := 0; i < 50; i++ {
		ps = append(ps, part{key: string(rune('a'+i%26)) + string(rune('a'+i/26)), del: rows.Live,
			items: []item{row(s("r"), 10, cell(liveCell(10, "v")), nil)}})
	}
	a := writeSSTable(t, t.TempDir(), h, ps...)
	b := writeSSTable(t, t.TempDir(), h, ps[:20]...)
	split := token.Range{Left: token.Murmur3.MinToken(), Right: tk(0)}
	rest := token.Range{Left: tk(0), Right: token.Murmur3.MinToken()}
	trees, err := Build(context.Background(), []*sstable.Table{a, b}, []Spec{{Range: split, Depth: 3}, {Range: rest, Depth: 4}})
	if err != nil {
		t.Fatal(err)
	}
	counts, err := Count([]*sstable.Table{a}, token.RangeSet{split, rest})
	if err != nil {
		t.Fatal(err)
	}
	if trees[0].Partitions() != uint64(counts[0]) || trees[1].Partitions() != uint64(counts[1]) || counts[0]+counts[1] != 50 {
		t.Fatalf("trees hold %d+%d partitions, counts %v", trees[0].Partitions(), trees[1].Partitions(), counts)
	}
	only, err := Build(context.Background(), []*sstable.Table{a}, []Spec{{Range: split, Depth: 3}, {Range: rest, Depth: 4}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range trees {
		if d, err := Diff(trees[i], only[i]); err != nil || len(d) != 0 {
			t.Fatalf("duplicates in a second sstable changed range %d: %v %v", i, d, err)
		}
	}
	if _, err := Build(context.Background(), []*sstable.Table{a}, []Spec{{Range: rng(10, -10), Depth: 1}}); !errors.Is(err, ErrBadTree) {
		t.Fatalf("wrapping range: %v", err)
	}
}
