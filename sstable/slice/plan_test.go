package slice

import (
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

// The planner's shortcuts (the open child's piece, the gap the last partition fell in) give
// the answer Pieces.Find gives, partition by partition, for tokens in order and out of it (a
// damaged index): a partition joins a child of the piece holding it, or none; a child is one
// stretch of consecutive partitions of one piece, and the counts add up.
func TestPlannerAgreesWithFind(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	for trial := range 300 {
		bounds := make([]int64, 2+rng.IntN(8))
		for i := range bounds {
			bounds[i] = rng.Int64N(2000) - 1000
		}
		sort.Slice(bounds, func(a, b int) bool { return bounds[a] < bounds[b] })
		var ranges token.RangeSet
		for i := 0; i+1 < len(bounds); i += 2 {
			if bounds[i] < bounds[i+1] {
				ranges = append(ranges, token.Range{Left: tok(bounds[i]), Right: tok(bounds[i+1])})
			}
		}
		if trial%5 == 0 && len(ranges) > 0 {
			// A range wrapping through the ring's minimum, and the minimum token itself.
			ranges[len(ranges)-1].Right = tok(bounds[0] - 1)
			ranges = ranges[1:]
		}
		if len(ranges) == 0 {
			continue
		}
		ps, err := NewPieces(token.Murmur3, ranges)
		if err != nil {
			t.Fatal(err)
		}
		toks := make([]int64, 200)
		for i := range toks {
			toks[i] = rng.Int64N(2200) - 1100
		}
		toks[0] = math.MinInt64
		if trial%2 == 0 {
			sort.Slice(toks, func(a, b int) bool { return toks[a] < toks[b] })
		}
		pl := NewPlanner(ps)
		joined := make([]int, len(toks))
		for i, v := range toks {
			joined[i] = pl.Add(int64(i), []byte{byte(i)}, tok(v), int64(i*10))
		}
		plans := pl.Finish(ranges, int64(len(toks)*10))
		if pl.Partitions() != int64(len(toks)) {
			t.Fatalf("trial %d: %d partitions counted, %d added", trial, pl.Partitions(), len(toks))
		}
		members := make([]int64, len(plans))
		for i, v := range toks {
			want, k := ps.Find(tok(v)), joined[i]
			if (want < 0) != (k < 0) || (k >= 0 && plans[k].Piece != want) {
				t.Fatalf("trial %d (%v), partition %d token %d: joined child %d, Find says piece %d", trial, ranges, i, v, k, want)
			}
			if k < 0 {
				continue
			}
			members[k]++
			c := plans[k]
			if int64(i) < c.FirstOrdinal || int64(i) >= c.FirstOrdinal+c.Partitions {
				t.Fatalf("trial %d, partition %d: outside its child's ordinals %d+%d", trial, i, c.FirstOrdinal, c.Partitions)
			}
			if int64(i) == c.FirstOrdinal+c.Partitions-1 && (c.LastTok.Long != v || c.Hi != int64(i+1)*10) {
				t.Fatalf("trial %d, partition %d: last of its child, which ends at token %d, position %d", trial, i, c.LastTok.Long, c.Hi)
			}
		}
		for k, c := range plans {
			if members[k] != c.Partitions || c.FirstTok.Long != toks[c.FirstOrdinal] || c.Lo != c.FirstOrdinal*10 {
				t.Fatalf("trial %d, child %d: %d partitions joined, %d counted; first token %d", trial, k, members[k], c.Partitions, c.FirstTok.Long)
			}
		}
	}
}

func tok(v int64) token.Token { return token.Token{Kind: token.KindMurmur3, Long: v} }

// Plans made apart over consecutive parts of the partitions and joined with Append are the
// plan one Planner makes of them all, wherever the cuts fall: inside a child, between
// children, in a gap.
func TestPlannerAppendIsOnePlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	ranges := token.RangeSet{{Left: tok(-800), Right: tok(-300)}, {Left: tok(-300), Right: tok(-100)}, {Left: tok(200), Right: tok(600)},
		{Left: tok(900), Right: tok(-900)}}
	ps, err := NewPieces(token.Murmur3, ranges)
	if err != nil {
		t.Fatal(err)
	}
	for trial := range 500 {
		toks := make([]int64, 1+rng.IntN(60))
		for i := range toks {
			toks[i] = rng.Int64N(2000) - 1000
		}
		sort.Slice(toks, func(a, b int) bool { return toks[a] < toks[b] })
		add := func(pl *Planner, from, to int) {
			for i := from; i < to; i++ {
				// Each part's ordinals count from its first partition, as a ranged scan's do.
				pl.Add(int64(i-from), []byte{byte(i)}, tok(toks[i]), int64(i*10))
			}
		}
		one := NewPlanner(ps)
		add(one, 0, len(toks))
		want := one.Finish(ranges, int64(len(toks)*10))

		cuts := []int{0}
		for range rng.IntN(3) + 1 {
			cuts = append(cuts, rng.IntN(len(toks)+1))
		}
		cuts = append(cuts, len(toks))
		sort.Ints(cuts)
		joined := NewPlanner(ps)
		for c := 0; c+1 < len(cuts); c++ {
			part := NewPlanner(ps)
			add(part, cuts[c], cuts[c+1])
			if c == 0 {
				joined = part
				continue
			}
			joined.Append(part, int64(cuts[c]*10))
		}
		got := joined.Finish(ranges, int64(len(toks)*10))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d, tokens %v cut at %v:\n joined %+v\n one    %+v", trial, toks, cuts, got, want)
		}
	}
}
