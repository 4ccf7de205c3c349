package repair

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

func tk(v int64) token.Token { return token.Token{Kind: token.KindMurmur3, Long: v} }

func rng(l, r int64) token.Range { return token.Range{Left: tk(l), Right: tk(r)} }

const minTok = math.MinInt64

func TestDepthForGivesAboutOnePartitionPerLeaf(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want int
	}{{0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {1000, 10}, {1024, 10}, {1025, 11}, {1 << 40, MaxDepth}} {
		if got := DepthFor(c.n); got != c.want {
			t.Errorf("DepthFor(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// Leaves tile the range exactly: consecutive, the first starting at Left and the last ending at
// Right, and every token lands in the leaf whose range contains it.
func TestLeavesTileTheRangeAndTokensLandInTheirLeaf(t *testing.T) {
	for _, c := range []struct {
		name  string
		r     token.Range
		depth int
	}{
		{"small", rng(0, 10), 3},
		{"width below leaves", rng(0, 5), 4},
		{"negative", rng(-1000, -1), 5},
		{"to the end of the ring", rng(math.MaxInt64-100, minTok), 3},
		{"whole ring", rng(minTok, minTok), 4},
		{"wrapping", rng(100, -100), 3},
		{"depth 0", rng(-5, 5), 0},
		{"wide", rng(minTok+1, math.MaxInt64), MaxDepth},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &Tree{Range: c.r, Depth: c.depth, Leaves: make([]Leaf, 1<<c.depth)}
			if l := tr.LeafRange(0).Left; !l.Equal(c.r.Left) {
				t.Fatalf("first leaf starts at %v, want %v", l, c.r.Left)
			}
			if r := tr.LeafRange(1<<c.depth - 1).Right; !r.Equal(c.r.Right) {
				t.Fatalf("last leaf ends at %v, want %v", r, c.r.Right)
			}
			for i := 0; i+1 < 1<<c.depth; i++ {
				if !tr.LeafRange(i).Right.Equal(tr.LeafRange(i + 1).Left) {
					t.Fatalf("leaf %d ends at %v, leaf %d starts at %v", i, tr.LeafRange(i).Right, i+1, tr.LeafRange(i+1).Left)
				}
			}
			probe := []int64{c.r.Left.Long + 1, c.r.Right.Long, c.r.Left.Long + 2, c.r.Right.Long - 1, 0, 7, -7, math.MaxInt64, minTok + 1}
			for i := 0; i < 1<<c.depth; i++ {
				lr := tr.LeafRange(i)
				probe = append(probe, lr.Right.Long, lr.Left.Long+1)
			}
			for _, v := range probe {
				i, ok := leafIndex(c.r, c.depth, tk(v))
				if ok != c.r.Contains(tk(v)) {
					t.Fatalf("token %d: in range %v, range contains %v", v, ok, c.r.Contains(tk(v)))
				}
				if ok && !tr.LeafRange(i).Contains(tk(v)) {
					t.Fatalf("token %d put in leaf %d %v", v, i, tr.LeafRange(i))
				}
			}
		})
	}
}

func build(t *testing.T, r token.Range, depth int, parts map[int64]uint64, order []int64) *Tree {
	t.Helper()
	b, err := NewBuilder(r, depth)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range order {
		if err := b.Add(tk(v), parts[v]); err != nil {
			t.Fatal(err)
		}
	}
	return b.Tree()
}

func TestDiffFindsExactlyTheDifferingLeaves(t *testing.T) {
	r := rng(0, 1600) // depth 4: leaves of 100 tokens
	parts := map[int64]uint64{50: 1, 150: 2, 151: 3, 420: 4, 1599: 5, 1600: 6}
	order := []int64{50, 150, 151, 420, 1599, 1600}
	a := build(t, r, 4, parts, order)

	cases := []struct {
		name   string
		change func(p map[int64]uint64) []int64
		want   string
	}{
		{"equal", func(p map[int64]uint64) []int64 { return order }, ""},
		{"one value", func(p map[int64]uint64) []int64 { p[420] = 99; return order }, "(400,500]"},
		{"missing partition", func(p map[int64]uint64) []int64 { return []int64{50, 150, 420, 1599, 1600} }, "(100,200]"},
		{"adjacent leaves merge", func(p map[int64]uint64) []int64 {
			p[350], p[420] = 7, 99
			return []int64{50, 150, 151, 350, 420, 1599, 1600}
		}, "(300,500]"},
		{"last leaf", func(p map[int64]uint64) []int64 { p[1600] = 0; return order }, "(1500,1600]"},
		{"empty against full", func(p map[int64]uint64) []int64 { return nil }, "(0,200],(400,500],(1500,1600]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := map[int64]uint64{}
			for k, v := range parts {
				p[k] = v
			}
			b := build(t, r, 4, p, c.change(p))
			d, err := Diff(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if d.String() != c.want {
				t.Fatalf("diff %q, want %q", d, c.want)
			}
			if (a.Root() == b.Root()) != (c.want == "") {
				t.Fatalf("roots %x %x with diff %q", a.Root(), b.Root(), d)
			}
		})
	}
}

// The same partitions in another leaf order hash differently: order within a leaf matters, and
// equal counts with swapped hashes do not cancel out.
func TestLeafHashDependsOnOrderAndContent(t *testing.T) {
	r := rng(0, 100)
	a := build(t, r, 0, map[int64]uint64{10: 1, 20: 2}, []int64{10, 20})
	b := build(t, r, 0, map[int64]uint64{10: 2, 20: 1}, []int64{10, 20})
	if a.Leaves[0] == b.Leaves[0] {
		t.Fatal("swapped partition hashes hash alike")
	}
	if a.Leaves[0].Partitions != 2 || a.Partitions() != 2 {
		t.Fatalf("leaf %+v", a.Leaves[0])
	}
}

func TestWrapAroundAndWholeRingTrees(t *testing.T) {
	whole := rng(minTok, minTok)
	order := []int64{minTok + 1, -5, 0, 5, math.MaxInt64}
	parts := map[int64]uint64{minTok + 1: 1, -5: 2, 0: 3, 5: 4, math.MaxInt64: 5}
	a := build(t, whole, 2, parts, order)
	parts[math.MaxInt64] = 6
	b := build(t, whole, 2, parts, order)
	d, err := Diff(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if d.String() != "(4611686018427387904,-9223372036854775808]" {
		t.Fatalf("diff %v", d)
	}
	// A range wrapping past the maximum takes its tokens in ring order.
	wrap := rng(100, -100)
	w := build(t, wrap, 1, map[int64]uint64{200: 1, math.MaxInt64: 2, minTok + 1: 3, -100: 4}, []int64{200, math.MaxInt64, minTok + 1, -100})
	if w.Partitions() != 4 {
		t.Fatalf("%d partitions", w.Partitions())
	}
}

func TestBuilderRefusesOutOfOrderAndOutOfRange(t *testing.T) {
	b, _ := NewBuilder(rng(0, 100), 2)
	if err := b.Add(tk(50), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(tk(40), 1); !errors.Is(err, ErrOrder) {
		t.Fatalf("out of order: %v", err)
	}
	if err := b.Add(tk(0), 1); !errors.Is(err, ErrOrder) {
		t.Fatalf("left end (exclusive): %v", err)
	}
	if err := b.Add(tk(50), 2); err != nil {
		t.Fatalf("same token again (next key): %v", err)
	}
	if _, err := NewBuilder(rng(0, 1), MaxDepth+1); !errors.Is(err, ErrBadTree) {
		t.Fatalf("depth beyond max: %v", err)
	}
	if _, err := NewBuilder(token.Range{Left: token.Token{Kind: token.KindBytes}, Right: token.Token{Kind: token.KindBytes}}, 1); !errors.Is(err, ErrBadTree) {
		t.Fatalf("byte-ordered range: %v", err)
	}
}

func TestDiffRefusesTreesOfOtherShapes(t *testing.T) {
	a := build(t, rng(0, 100), 2, nil, nil)
	for _, b := range []*Tree{build(t, rng(0, 100), 3, nil, nil), build(t, rng(0, 101), 2, nil, nil), {Range: rng(0, 100), Depth: 2}} {
		if _, err := Diff(a, b); !errors.Is(err, ErrBadTree) {
			t.Fatalf("diff against %v depth %d with %d leaves: %v", b.Range, b.Depth, len(b.Leaves), err)
		}
	}
}

func TestTreeJSONRoundTrips(t *testing.T) {
	a := build(t, rng(-1000, 1000), 5, map[int64]uint64{-3: 9, 7: 8, 999: 7}, []int64{-3, 7, 999})
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back Tree
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d, err := Diff(a, &back); err != nil || len(d) != 0 || back.Partitions() != 3 {
		t.Fatalf("round trip: diff %v, %v, %d partitions", d, err, back.Partitions())
	}
	for _, bad := range []string{
		`{"range":"(0,1]","depth":1,"leaves":""}`,
		`{"range":"(0,1]","depth":16,"leaves":""}`,
		`{"range":"(0,1],(2,3]","depth":0,"leaves":"AAAAAAAAAAAAAAAAAAAAAA=="}`,
		`{"range":"nope","depth":0,"leaves":"AAAAAAAAAAAAAAAAAAAAAA=="}`,
		`{"range":"(0,1]","depth":0,"leaves":"!!"}`,
		`[]`,
	} {
		if err := json.Unmarshal([]byte(bad), &back); !errors.Is(err, ErrBadTree) {
			t.Errorf("%s: %v, want ErrBadTree", bad, err)
		}
	}
}

func FuzzTreeUnmarshal(f *testing.F) {
	a := &Tree{Range: rng(-1000, 1000), Depth: 2, Leaves: []Leaf{{1, 1}, {0, 0}, {3, 2}, {0, 0}}}
	b, _ := json.Marshal(a)
	f.Add(b)
	f.Add([]byte(`{"range":"(0,1]","depth":15,"leaves":"AAAA"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var tr Tree
		if err := json.Unmarshal(b, &tr); err != nil {
			return
		}
		if len(tr.Leaves) != 1<<tr.Depth {
			t.Fatalf("%d leaves at depth %d", len(tr.Leaves), tr.Depth)
		}
		out, err := json.Marshal(&tr)
		if err != nil {
			t.Fatal(err)
		}
		var again Tree
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatal(err)
		}
		if d, err := Diff(&tr, &again); err != nil || len(d) != 0 {
			t.Fatalf("re-encoding differs: %v %v", d, err)
		}
	})
}
