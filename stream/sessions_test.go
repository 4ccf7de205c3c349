package stream

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

// SplitRanges cuts a set into at most n disjoint groups that together hold exactly its
// tokens, contiguous in token order and of about equal width, halving ranges only when there
// are fewer than n.
func TestSplitRangesCoversTheSetOnceInBalancedGroups(t *testing.T) {
	parse := func(s string) token.RangeSet {
		rs, err := token.ParseRanges(token.Murmur3, s)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		spec   string
		n      int
		groups int
	}{
		{"(0,0]", 2, 2},      // the whole ring, halved
		{"(0,0]", 4, 4},      // and halved again
		{"(-100,100]", 2, 2}, // one range
		{"(-100,-99]", 4, 1}, // a single token cannot be cut
		{"(100,-100]", 2, 2}, // wrapping
		{"(-9223372036854775808,0],(0,-9223372036854775808]", 2, 2},
		{randomRanges(r, 16).String(), 2, 2}, // vnodes: whole ranges
		{randomRanges(r, 3).String(), 8, 8},
		{"(-100,100]", 1, 1},
	} {
		rs := parse(c.spec)
		groups := SplitRanges(rs, c.n)
		if len(groups) != c.groups {
			t.Errorf("%s into %d: %d groups, want %d", c.spec, c.n, len(groups), c.groups)
		}
		for i := 0; i < 20000; i++ {
			tok := token.Token{Kind: token.KindMurmur3, Long: int64(r.Uint64())}
			if i < 4 {
				tok.Long = []int64{-100, 100, 0, math.MaxInt64}[i]
			}
			in := 0
			for _, g := range groups {
				if g.Contains(tok) {
					in++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[rs.Contains(tok)]; in != want {
				t.Fatalf("%s into %d: token %d in %d groups, want %d (%v)", c.spec, c.n, tok.Long, in, want, groups)
			}
		}
		if len(groups) > 1 {
			lo, hi := math.Inf(1), 0.0
			for _, g := range groups {
				w := 0.0
				for _, x := range g {
					w += x.Width()
				}
				lo, hi = min(lo, w), max(hi, w)
			}
			if c.groups > 1 && len(rs) < c.n && hi > 2.01*lo {
				t.Errorf("%s into %d: group widths from %g to %g", c.spec, c.n, lo, hi)
			}
		}
	}
}

// A fetch in two sessions installs exactly what one session would: every partition of the
// ranges once, one child per parent and group.
func TestFetchSessionsInstallsTheRangesOnce(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1, 2, 3}})
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	r := rand.New(rand.NewPCG(5, 6))
	for _, ranges := range []token.RangeSet{randomRanges(r, 16), randomRanges(r, 1)} {
		var last SessionStatus
		calls := 0
		res, err := FetchSessions(context.Background(), Config{}, ca.client(t, ca), FetchRequest{Peer: addr, Keyspace: "ks", Table: "t",
			Ranges: ranges, Dir: t.TempDir()}, 2, func(s SessionStatus) { last, calls = s, calls+1 })
		if err != nil {
			t.Fatal(err)
		}
		checkFetchedPartitions(t, parents, parents, ranges, res)
		var bytes int64
		for _, f := range res.SSTables {
			bytes += f.Bytes
		}
		if bytes != res.BytesReceived || calls == 0 || last.BytesDone != res.BytesReceived {
			t.Errorf("%d ranges: %d bytes in the sstables, %d received, progress %d of %d in %d calls", len(ranges), bytes, res.BytesReceived, last.BytesDone, last.BytesTotal, calls)
		}
	}
}
