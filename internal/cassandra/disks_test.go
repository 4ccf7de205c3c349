package cassandra

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

func rng(l, r int64) token.Range { return token.Range{Left: murmur(l), Right: murmur(r)} }

// The boundaries Cassandra's DiskBoundaryManager computes, worked by hand from
// Splitter.splitOwnedRanges.
func TestDiskBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		local  token.RangeSet
		disks  int
		vnodes bool
		want   []int64
	}{
		{"one disk", token.RangeSet{rng(-100, 0)}, 1, false, []int64{math.MaxInt64}},
		{"no local range", nil, 3, true, []int64{math.MaxInt64}},
		// One token: equal shares of (-100, 0], split inside the range.
		{"one token, two disks", token.RangeSet{rng(-100, 0)}, 2, false, []int64{-50, math.MaxInt64}},
		{"one token, four disks", token.RangeSet{rng(0, 400)}, 4, false, []int64{100, 200, 300, math.MaxInt64}},
		// vnodes: widths 10, 10, 60 (total 80, 40 a disk): after (20,30] the sum is 20 and with
		// the next range 80; 80 is no nearer to 40 than 20 is, so the first disk ends at 30.
		{"vnodes, whole ranges", token.RangeSet{rng(40, 100), rng(0, 10), rng(20, 30)}, 2, true, []int64{30, math.MaxInt64}},
		// vnodes but one range: whole ranges give one part, so the split is even.
		{"vnodes, one range", token.RangeSet{rng(0, 100)}, 2, true, []int64{50, math.MaxInt64}},
		// A wrapping range is unwrapped at the minimum: (min, -100] and (100, max] (2^63-100
		// and 2^63-101 tokens): the first disk takes the first whole range.
		{"vnodes, wrapping", token.RangeSet{rng(100, -100), rng(-50, 50)}, 2, true, []int64{-100, math.MaxInt64}},
	} {
		got := DiskBoundaries(tc.local, tc.disks, tc.vnodes)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Whatever the ranges, every token of a set lands in exactly one disk's part, the part
// DiskFor names, and the boundaries rise to the maximum token.
func TestSplitByDiskCoversOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var toks []int64
		for range 2 + r.IntN(30) {
			toks = append(toks, int64(r.Uint64()))
		}
		slices.Sort(toks)
		toks = slices.Compact(toks)
		var local token.RangeSet
		for i, tk := range toks {
			if r.IntN(3) == 0 {
				continue
			}
			prev := toks[(i+len(toks)-1)%len(toks)]
			local = append(local, rng(prev, tk))
		}
		disks := 1 + r.IntN(4)
		b := DiskBoundaries(local, disks, r.IntN(2) == 0)
		if len(b) == 0 || len(b) > disks || b[len(b)-1] != math.MaxInt64 || !slices.IsSorted(b) {
			t.Fatalf("round %d: boundaries %v for %d disks", round, b, disks)
		}
		parts := SplitByDisk(local, b)
		for range 200 {
			tk := int64(r.Uint64())
			if tk == math.MinInt64 {
				continue
			}
			in := 0
			for d, p := range parts {
				if p.Contains(murmur(tk)) {
					in++
					if d != DiskFor(b, tk) {
						t.Fatalf("round %d: token %d in part %d, DiskFor says %d (boundaries %v)", round, tk, d, DiskFor(b, tk), b)
					}
				}
			}
			if want := map[bool]int{true: 1, false: 0}[local.Contains(murmur(tk))]; in != want {
				t.Fatalf("round %d: token %d in %d parts, want %d (ranges %v, boundaries %v, parts %v)", round, tk, in, want, local, b, parts)
			}
		}
	}
	// The whole ring, written either way.
	for _, whole := range []token.RangeSet{{rng(math.MinInt64, math.MinInt64)}, {rng(7, 7)}} {
		parts := SplitByDisk(whole, []int64{0, math.MaxInt64})
		if !parts[0].Contains(murmur(math.MinInt64+1)) || !parts[0].Contains(murmur(0)) || parts[0].Contains(murmur(1)) ||
			!parts[1].Contains(murmur(1)) || !parts[1].Contains(murmur(math.MaxInt64)) {
			t.Errorf("%v: %v", whole, parts)
		}
	}
}

func TestPairStaging(t *testing.T) {
	root := t.TempDir()
	d1, d2, s1 := filepath.Join(root, "d1"), filepath.Join(root, "d2"), filepath.Join(root, "s1")
	for _, d := range []string{d1, d2, s1} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pairs, problems := PairStaging([]string{d1, d2}, []string{s1})
	if !slices.Equal(pairs, []string{s1, s1}) || len(problems) != 0 {
		t.Errorf("one file system: %v %v", pairs, problems)
	}
	pairs, problems = PairStaging([]string{d1, filepath.Join(root, "gone")}, []string{s1, filepath.Join(root, "nostaging")})
	if pairs[0] != s1 || pairs[1] != "" || len(problems) != 2 || !strings.Contains(strings.Join(problems, "|"), "gone") {
		t.Errorf("missing directories: %v %q", pairs, problems)
	}
}
