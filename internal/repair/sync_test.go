package repair

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/token"
)

func dg(tok int64, key uint64, hash uint64, copies ...uint64) Digest {
	return Digest{Token: tok, Key: key, Hash: hash, Copies: copies}
}

// A replica that missed a flush receives the partitions that flush touched, and the replica
// that had them receives nothing; a partition one side lacks goes to it; equal ones stay.
func TestPlanSyncSendsOnlyWhatDiffersTowardsTheSideThatLacksIt(t *testing.T) {
	ranges := token.RangeSet{rng(0, 100)}
	mine := []Digest{
		dg(10, 1, 0xa, 1),       // equal on both
		dg(20, 2, 0xb, 1, 2),    // stale: the peer has copy 3 too
		dg(30, 3, 0xc, 1),       // only here
		dg(40, 4, 0xd, 1, 2, 3), // the peer's copies are a subset: it needs this side's
		dg(50, 5, 0xe, 7),       // both hold something the other lacks
	}
	theirs := []Digest{
		dg(10, 1, 0xa, 1),
		dg(20, 2, 0xf, 1, 2, 3),
		dg(35, 6, 0x1, 1), // only there
		dg(40, 4, 0x2, 1, 3),
		dg(50, 5, 0x3, 8),
	}
	p, err := PlanSync(ranges, mine, theirs)
	if err != nil {
		t.Fatal(err)
	}
	// Fetch: 20, 35 (a run: nothing unselected of theirs between them), 50 after 40.
	if got, want := p.Fetch.String(), "(10,35],(40,50]"; got != want {
		t.Fatalf("fetch %s, want %s", got, want)
	}
	if p.Fetched != 3 {
		t.Fatalf("fetched %d partitions, want 3", p.Fetched)
	}
	if got, want := p.Send.String(), "(20,50]"; got != want {
		t.Fatalf("send %s, want %s (30, 40, 50 are a run of this side's)", got, want)
	}
	if p.Sent != 3 {
		t.Fatalf("sent %d partitions, want 3", p.Sent)
	}
	for _, tok := range []int64{10, 20} {
		if p.Send.Contains(tk(tok)) {
			t.Errorf("partition %d sent to a peer that holds all of it", tok)
		}
	}
	if p.Fetch.Contains(tk(10)) || p.Fetch.Contains(tk(40)) {
		t.Errorf("fetched a partition this side already holds whole: %s", p.Fetch)
	}
}

// Runs cover exactly the selected partitions of a listing: an unselected partition ends a
// run, a range's edge ends a run, and partitions sharing a token stay together.
func TestRunsHoldTheSelectedPartitionsAndNoOther(t *testing.T) {
	ranges := token.RangeSet{rng(0, 100), rng(200, 300)}
	list := []Digest{dg(10, 1, 0, 1), dg(20, 2, 0, 1), dg(30, 3, 0, 1), dg(40, 4, 0, 1), dg(40, 5, 0, 1),
		dg(250, 6, 0, 1), dg(260, 7, 0, 1)}
	sel := []bool{true, true, false, false, true, true, true}
	rs, n, err := Runs(ranges, list, sel)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("%d partitions, want 5", n)
	}
	if got, want := rs.String(), "(0,20],(39,40],(200,260]"; got != want {
		t.Fatalf("runs %s, want %s", got, want)
	}
	for i, d := range list {
		tok := tk(d.Token)
		if sel[i] && !rs.Contains(tok) {
			t.Errorf("selected %d not covered", d.Token)
		}
		if !sel[i] && rs.Contains(tok) && d.Token != 40 { // 40 shares its token with a selected one
			t.Errorf("unselected %d covered", d.Token)
		}
	}
	if _, _, err := Runs(ranges, []Digest{dg(150, 1, 0, 1)}, []bool{true}); !errors.Is(err, ErrBadDigests) {
		t.Fatalf("a token outside the ranges: %v", err)
	}
}

// Digest pages round-trip, and a page no honest replica sends is refused by name.
func TestDigestPagesRoundTripAndHostileOnesAreRefused(t *testing.T) {
	rs := token.RangeSet{rng(0, 100)}
	ds := []Digest{dg(10, 1, 2, 3), dg(10, 9, 2, 3, 4), dg(20, 1, 5, 6)}
	got, err := ParseDigests(AppendDigests(nil, ds), rs, nil, 10)
	if err != nil || len(got) != 3 || got[1].Key != 9 || len(got[1].Copies) != 2 || got[2].Token != 20 {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	after := int64(10)
	bad := map[string][]byte{
		"truncated":         AppendDigests(nil, ds)[:30],
		"out of order":      AppendDigests(nil, []Digest{dg(20, 1, 0, 1), dg(10, 1, 0, 1)}),
		"outside":           AppendDigests(nil, []Digest{dg(150, 1, 0, 1)}),
		"not after":         AppendDigests(nil, []Digest{dg(10, 1, 0, 1)}),
		"twice":             AppendDigests(nil, []Digest{dg(30, 1, 0, 1), dg(30, 1, 0, 1)}),
		"no copies":         AppendDigests(nil, []Digest{dg(30, 1, 0)}),
		"unsorted copies":   AppendDigests(nil, []Digest{dg(30, 1, 0, 5, 4)}),
		"too many":          AppendDigests(nil, []Digest{dg(30, 1, 0, 1), dg(31, 1, 0, 1), dg(32, 1, 0, 1)}),
		"huge copy count":   append(AppendDigests(nil, []Digest{dg(30, 1, 0, 1)})[:24], 0xff, 0xff, 0xff, 0xff, 0x0f),
		"the minimum token": AppendDigests(nil, []Digest{dg(math.MinInt64, 1, 0, 1)}),
	}
	for name, b := range bad {
		if _, err := ParseDigests(b, token.RangeSet{rng(0, 100), {Left: tk(1000), Right: token.Murmur3.MinToken()}}, &after, 2); !errors.Is(err, ErrBadDigests) {
			t.Errorf("%s: %v, want ErrBadDigests", name, err)
		}
	}
}

// Digests carries each copy's own hash, so that a replica holding an extra flush is seen to
// include the other's content; pages end at a token's end and resume after it.
func TestDigestsCarryEachCopyAndPage(t *testing.T) {
	ctx := context.Background()
	h := header("UTF8Type")
	old := part{key: "k", del: rows.Live, items: []item{row(s("a"), 10, cell(liveCell(10, "old")), nil)}}
	newer := part{key: "k", del: rows.Live, items: []item{row(s("a"), 20, cell(liveCell(20, "new")), nil)}}
	var many []part
	for i := 0; i < 40; i++ {
		many = append(many, part{key: "p" + string(rune('a'+i%26)) + string(rune('a'+i/26)), del: rows.Live,
			items: []item{row(s("r"), 10, cell(liveCell(10, "v")), nil)}})
	}
	a1 := writeSSTable(t, t.TempDir(), h, append([]part{old}, many...)...)
	b2 := writeSSTable(t, t.TempDir(), h, newer)
	all := token.RangeSet{wholeRing}
	stale, _, err := Digests(ctx, []*sstable.Table{a1}, all, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _, err := Digests(ctx, []*sstable.Table{a1, b2}, all, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != 41 || len(fresh) != 41 {
		t.Fatalf("%d and %d digests, want 41", len(stale), len(fresh))
	}
	p, err := PlanSync(all, stale, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if p.Fetched != 1 || p.Sent != 0 {
		t.Fatalf("stale side fetches %d, sends %d; want 1 and 0 (%+v)", p.Fetched, p.Sent, p)
	}
	if !p.Fetch.Contains(token.Murmur3.Token(s("k"))) {
		t.Fatalf("fetch %s misses the stale partition", p.Fetch)
	}
	// Pages of 16: every partition once, in order, resuming after the last token.
	var paged []Digest
	var after *int64
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		page, more, err := Digests(ctx, []*sstable.Table{a1, b2}, all, after, 16)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseDigests(AppendDigests(nil, page), all, after, 16); err != nil {
			t.Fatalf("page %d does not parse back: %v", pages, err)
		}
		paged = append(paged, page...)
		if !more {
			break
		}
		last := page[len(page)-1].Token
		after = &last
	}
	if len(paged) != len(fresh) {
		t.Fatalf("pages hold %d digests, one pass %d", len(paged), len(fresh))
	}
	for i := range paged {
		if paged[i].Token != fresh[i].Token || paged[i].Hash != fresh[i].Hash {
			t.Fatalf("page digest %d differs", i)
		}
	}
}
