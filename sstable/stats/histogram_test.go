package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// addBySearch is EstimatedHistogram.add as Cassandra writes it: the insertion point of a binary
// search over the offsets, clamped to the overflow bucket.
func addBySearch(h *EstimatedHistogram, v int64) {
	i := sort.Search(len(h.Offsets), func(i int) bool { return h.Offsets[i] >= v })
	h.Counts[min(i, len(h.Counts)-1)]++
}

// Add, and AddNear from any hint (right, wrong, out of range), count every value in the bucket
// Cassandra's binary search finds: each offset and its neighbours, the extremes of int64,
// values past the last offset and random ones of every magnitude, for the bucket counts sluice
// writes, small ones, repeated offsets and a histogram whose offsets outnumber its buckets.
func TestAddIsCassandrasBinarySearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	hs := []EstimatedHistogram{
		{Offsets: []int64{5, 5, 9}, Counts: make([]int64, 2)},
		{Offsets: []int64{-3, 0, 0, 7}, Counts: make([]int64, 5)},
		{Offsets: nil, Counts: make([]int64, 1)},
	}
	for _, n := range []int{1, 2, 3, 8, CellsPerPartitionCount, PartitionSizeBuckets4, PartitionSizeBuckets5} {
		hs = append(hs, NewEstimatedHistogram(n))
	}
	for _, h := range hs {
		vs := []int64{math.MinInt64, math.MaxInt64, -1, 0, 1, 2}
		for _, o := range h.Offsets {
			vs = append(vs, o-1, o, o+1, o, o)
		}
		for range 5000 {
			vs = append(vs, int64(rng.Uint64N(1<<rng.UintN(63))))
		}
		add := EstimatedHistogram{Offsets: h.Offsets, Counts: make([]int64, len(h.Counts))}
		near := EstimatedHistogram{Offsets: h.Offsets, Counts: make([]int64, len(h.Counts))}
		want := EstimatedHistogram{Offsets: h.Offsets, Counts: make([]int64, len(h.Counts))}
		hint := 0
		for i, v := range vs {
			add.Add(v)
			addBySearch(&want, v)
			if i%3 == 2 {
				hint = rng.IntN(len(h.Counts)+4) - 2 // sometimes a wrong or impossible hint
			}
			hint = near.AddNear(v, hint)
			if !slices.Equal(add.Counts, want.Counts) || !slices.Equal(near.Counts, want.Counts) {
				t.Fatalf("offsets %v: %d counted in other bucket than Cassandra's", h.Offsets[:min(len(h.Offsets), 8)], v)
			}
		}
	}
}
