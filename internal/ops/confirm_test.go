package ops

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// The gaps of a kept set and the set itself cover the ring once; the units cleanup would drop
// are exactly the gaps, each within one range of the ring and owned by its replicas.
func TestDropUnitsAreTheRingsRangesOutsideKeep(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	mk := func(name string, n int) ring.Member {
		return ring.Member{Node: ring.Node{Name: name, DC: "dc1", Rack: "r1"}, State: ring.Normal,
			Tokens: ring.RandomTokens(rng, n)}
	}
	r, err := ring.NewRing(mk("a", 4), mk("b", 4), mk("c", 4))
	if err != nil {
		t.Fatal(err)
	}
	whole := uint64(math.MaxUint64)
	for _, s := range []ring.Strategy{ring.SimpleStrategy{RF: 1}, ring.SimpleStrategy{RF: 2}} {
		keep := ring.CleanupRanges(r, s, "a")
		gaps := ringGaps(keep)
		var kw, gw uint64
		for _, x := range keep {
			kw += tokenWidth(x)
		}
		for _, x := range gaps {
			gw += tokenWidth(x)
		}
		if kw+gw != whole || len(repair.Intersect(keep, gaps)) != 0 {
			t.Fatalf("%v: keep %v and gaps %v do not cover the ring once", s, keep, gaps)
		}
		units := dropUnits(r, s, keep, "a")
		var dropped token.RangeSet
		for _, u := range units {
			dropped = append(dropped, u.Drop...)
			if !covers(ring.Normalize(token.RangeSet{u.Range}), u.Drop) {
				t.Errorf("unit %v drops %v outside it", u.Range, u.Drop)
			}
			if want := s.ReplicationFactor(); len(u.Owners) != want || slices.Contains(u.Owners, "a") {
				t.Errorf("unit %v: owners %v, want %d others", u.Range, u.Owners, want)
			}
			reps := s.Replicas(r, u.Range.Right)
			for _, o := range u.Owners {
				if !slices.ContainsFunc(reps, func(n ring.Node) bool { return n.Name == o }) {
					t.Errorf("unit %v: %s is no replica", u.Range, o)
				}
			}
		}
		if got := ring.Normalize(dropped); got.String() != gaps.String() {
			t.Errorf("%v: units drop %v, gaps are %v", s, got, gaps)
		}
		ps := pieces(units)
		for i, p := range ps {
			if got := pieceOf(ps, p.rng.Right.Long); got != i {
				t.Errorf("piece of %v's right end: %d, want %d", p.rng, got, i)
			}
		}
		for _, x := range keep {
			if x.Right.Long != math.MinInt64 {
				if got := pieceOf(ps, x.Right.Long); got != -1 {
					t.Errorf("a kept token (%d) lies in piece %d", x.Right.Long, got)
				}
			}
		}
	}
	if got := ringGaps(nil); len(got) != 1 || !got[0].Left.Equal(got[0].Right) {
		t.Errorf("gaps of nothing: %v", got)
	}
	if got := ringGaps(ringGaps(nil)); len(got) != 0 {
		t.Errorf("gaps of everything: %v", got)
	}
}

// pages serves a sorted digest listing in pages of about size digests, never splitting a
// token, as repair.Digests does.
func pages(list []repair.Digest, size int) digestPages {
	return func(_ context.Context, after *int64) ([]repair.Digest, bool, error) {
		i := 0
		if after != nil {
			i, _ = slices.BinarySearchFunc(list, *after+1, func(d repair.Digest, t int64) int {
				return int(min(max(d.Token-t, -1), 1))
			})
		}
		j := min(i+size, len(list))
		for j < len(list) && j > i && list[j].Token == list[j-1].Token {
			j++
		}
		return list[i:j], j < len(list), nil
	}
}

// Walking the two listings page by page finds exactly the partitions of mine that theirs lacks
// or holds with other content, whatever the page sizes, with colliding tokens.
func TestMatchDigestsFindsWhatTheOwnerLacks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var mine, theirs []repair.Digest
		want := map[[2]uint64]bool{} // token, key -> differs
		tok := int64(-1000)
		for range rng.IntN(300) {
			tok += int64(rng.IntN(3)) // collisions when 0
			d := repair.Digest{Token: tok, Key: rng.Uint64(), Hash: rng.Uint64(), Copies: []uint64{uint64(rng.IntN(100))}}
			switch rng.IntN(6) {
			case 0: // theirs only
				theirs = append(theirs, d)
			case 1: // mine only
				mine = append(mine, d)
				want[[2]uint64{uint64(d.Token), d.Key}] = false
			case 2: // both, other content
				o := d
				o.Hash, o.Copies = d.Hash+1, []uint64{d.Copies[0] + 1000}
				mine, theirs = append(mine, d), append(theirs, o)
				want[[2]uint64{uint64(d.Token), d.Key}] = true
			case 3: // both, theirs holds more: my copy among theirs
				o := d
				o.Hash, o.Copies = d.Hash+1, []uint64{d.Copies[0], d.Copies[0] + 1000}
				mine, theirs = append(mine, d), append(theirs, o)
			default:
				mine, theirs = append(mine, d), append(theirs, d)
			}
		}
		got := map[[2]uint64]bool{}
		err := matchDigests(context.Background(), pages(mine, 1+rng.IntN(7)), pages(theirs, 1+rng.IntN(7)),
			func(d repair.Digest, differs bool) { got[[2]uint64{uint64(d.Token), d.Key}] = differs })
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d found, want %d", round, len(got), len(want))
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Fatalf("round %d: partition %v: found %v (%v), want differs %v", round, k, ok, g, v)
			}
		}
	}
}
