package ring

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

func TestPlanBootstrapFourthNodeRF2(t *testing.T) {
	// a:0 b:100 c:200, RF 2. d joins at 50: it becomes primary for (0,50] (which c held as
	// second replica) and second replica for (200,0] (which b held).
	r := mustRing(t, normal("a", 0), normal("b", 100), normal("c", 200))
	s := SimpleStrategy{RF: 2}
	c := Bootstrap(nd("d"), toks(50))
	p := mustPlan(t, r, s, c, PlanOptions{})
	wantPlan := "" +
		"b->d (-9223372036854775808,0]\n" +
		"b->d (200,-9223372036854775808]\n" +
		"c->d (0,50]\n"
	if got := planText(p); got != wantPlan {
		t.Errorf("plan:\n%swant:\n%s", got, wantPlan)
	}
	wantReleased := map[string]string{"b": "(-9223372036854775808,0],(200,-9223372036854775808]", "c": "(0,50]"}
	checkSets(t, "released", p.Released, wantReleased)
	pending, err := PendingRanges(r, s, c)
	if err != nil {
		t.Fatal(err)
	}
	checkSets(t, "pending", pending, map[string]string{"d": "(-9223372036854775808,50],(200,-9223372036854775808]"})
	checkPlan(t, r, s, p)
}

func TestPlanBootstrapVnodesRF2(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	r := mustRing(t,
		Member{Node: nd("a"), State: Normal, Tokens: RandomTokens(rng, 8)},
		Member{Node: nd("b"), State: Normal, Tokens: RandomTokens(rng, 8)},
		Member{Node: nd("c"), State: Normal, Tokens: RandomTokens(rng, 8)})
	s := SimpleStrategy{RF: 2}
	ts, err := AllocateTokens(r, nd("d"), 8, s)
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, r, s, Bootstrap(nd("d"), ts), PlanOptions{})
	checkPlan(t, r, s, p)
	for _, tr := range p.Transfers {
		if tr.To != "d" {
			t.Errorf("%v: only d gains data in a bootstrap", tr)
		}
	}
	if len(p.Transfers) == 0 {
		t.Error("the new node fetches nothing")
	}
}

func TestPlanDecommissionOneOfFourRF2(t *testing.T) {
	// b leaves a:0 b:100 c:200 d:300. c becomes second replica of (300,0]; d of (0,100].
	r := mustRing(t, normal("a", 0), normal("b", 100), normal("c", 200), normal("d", 300))
	s := SimpleStrategy{RF: 2}
	p := mustPlan(t, r, s, Decommission("b"), PlanOptions{})
	wantPlan := "" +
		"b->c (-9223372036854775808,0]\n" +
		"b->c (300,-9223372036854775808]\n" +
		"b->d (0,100]\n"
	if got := planText(p); got != wantPlan {
		t.Errorf("plan:\n%swant:\n%s", got, wantPlan)
	}
	checkSets(t, "released", p.Released, map[string]string{"b": "(-9223372036854775808,100],(300,-9223372036854775808]"})
	if m, _ := p.Future.Member("b"); m.State != Left || len(m.Tokens) != 0 {
		t.Errorf("after decommission b is %v with %v", m.State, m.Tokens)
	}
	checkPlan(t, r, s, p)

	// A Leaving node is the source of everything it gives up, even when another replica is
	// closer to the gainer.
	racks := mustRing(t, normal("a@dc1/r1", 0), normal("b@dc1/r2", 100), normal("c@dc1/r1", 200), normal("d@dc1/r2", 300))
	p = mustPlan(t, racks, SimpleStrategy{RF: 3}, Decommission("b"), PlanOptions{})
	for _, tr := range p.Transfers {
		if tr.From != "b" {
			t.Errorf("%v: the leaving node must send", tr)
		}
	}
	checkPlan(t, racks, SimpleStrategy{RF: 3}, p)
}

func TestPlanMove(t *testing.T) {
	// b moves from 100 to 250 in a:0 b:100 c:200 d:300 with RF 2.
	r := mustRing(t, normal("a", 0), normal("b", 100), normal("c", 200), normal("d", 300))
	s := SimpleStrategy{RF: 2}
	p := mustPlan(t, r, s, Move("b", tok(250)), PlanOptions{})
	wantPlan := "" +
		"a->b (200,250]\n" + // b's new primary range, which a held as second replica
		"d->b (100,200]\n" + // b becomes second replica of c's range
		"b->c (-9223372036854775808,0]\n" + // c takes b's old second-replica range
		"b->c (300,-9223372036854775808]\n"
	if got := planText(p); got != wantPlan {
		t.Errorf("plan:\n%swant:\n%s", got, wantPlan)
	}
	checkSets(t, "released", p.Released, map[string]string{
		"a": "(200,250]",
		"b": "(-9223372036854775808,0],(300,-9223372036854775808]",
		"d": "(100,200]",
	})
	checkPlan(t, r, s, p)
}

func TestPlanSourceSelection(t *testing.T) {
	s := SimpleStrategy{RF: 3}
	// Two nodes, RF 3: nobody loses a range when c joins, so any current replica serves.
	cases := []struct {
		name string
		c    Node
		opt  PlanOptions
		want string
	}{
		{"same rack wins", nd("c@dc1/r2"), PlanOptions{}, "b->c (-9223372036854775808,-9223372036854775808]\n"},
		{"otherwise load spreads", nd("c@dc1/r3"), PlanOptions{},
			"a->c (-9223372036854775808,0]\na->c (200,-9223372036854775808]\nb->c (0,200]\n"},
		{"a down node is never a source", nd("c@dc1/r2"), PlanOptions{Down: []string{"b"}},
			"a->c (-9223372036854775808,-9223372036854775808]\n"},
	}
	r := mustRing(t, normal("a@dc1/r1", 0), normal("b@dc1/r2", 100))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustPlan(t, r, s, Bootstrap(c.c, toks(200)), c.opt)
			if got := planText(p); got != c.want {
				t.Errorf("plan:\n%swant:\n%s", got, c.want)
			}
			checkPlan(t, r, s, p)
		})
	}
	_, err := Plan(r, s, Bootstrap(nd("c"), toks(200)), PlanOptions{Down: []string{"a", "b"}})
	if !errors.Is(err, ErrNoSource) {
		t.Errorf("every replica down: err = %v, want ErrNoSource", err)
	}

	// The strict source is down: another current replica serves instead.
	four := mustRing(t, normal("a", 0), normal("b", 100), normal("c", 200))
	p := mustPlan(t, four, SimpleStrategy{RF: 2}, Bootstrap(nd("d"), toks(50)), PlanOptions{Down: []string{"c"}})
	if got, want := planText(p), "b->d (-9223372036854775808,50]\nb->d (200,-9223372036854775808]\n"; got != want {
		t.Errorf("plan with c down:\n%swant:\n%s", got, want)
	}
}

func TestPlanTwoDCsStreamsWithinTheDC(t *testing.T) {
	r := mustRing(t, normal("a@dc1/r1", 0), normal("b@dc2/r1", 100), normal("c@dc1/r2", 200),
		normal("d@dc2/r2", 300), normal("e@dc1/r3", 400), normal("f@dc2/r3", 500))
	s := NetworkTopologyStrategy{RF: map[string]int{"dc1": 2, "dc2": 2}}
	p := mustPlan(t, r, s, Bootstrap(nd("g@dc2/r1"), toks(250)), PlanOptions{})
	if len(p.Transfers) == 0 {
		t.Fatal("no transfers")
	}
	for _, tr := range p.Transfers {
		if !strings.Contains("bdf", tr.From) || tr.To != "g" {
			t.Errorf("%v: a dc2 bootstrap must stream from dc2", tr)
		}
	}
	checkPlan(t, r, s, p)
}

func TestChangePreconditions(t *testing.T) {
	r := mustRing(t, normal("a", 0), normal("b", 100, 150), normal("c", 200),
		Member{Node: nd("j"), State: Joining, Tokens: toks(50)}, Member{Node: nd("l"), State: Left})
	bytesTok := token.Token{Kind: token.KindBytes, Bytes: []byte("x")}
	cases := []struct {
		name string
		c    Change
		want error
	}{
		{"bootstrap a new node", Bootstrap(nd("d"), toks(300)), nil},
		{"bootstrap a joining node", Bootstrap(nd("j"), toks(50)), nil},
		{"bootstrap a left node again", Bootstrap(nd("l"), toks(300)), nil},
		{"bootstrap a normal node", Bootstrap(nd("a"), toks(300)), ErrInvalidChange},
		{"bootstrap onto an owned token", Bootstrap(nd("d"), toks(100)), ErrTokenConflict},
		{"bootstrap onto a joining token", Bootstrap(nd("d"), toks(50)), ErrTokenConflict},
		{"bootstrap without tokens", Bootstrap(nd("d"), nil), ErrNoTokens},
		{"bootstrap a byte-ordered token", Bootstrap(nd("d"), []token.Token{bytesTok}), ErrUnsupportedToken},
		{"bootstrap without a name", Bootstrap(Node{}, toks(1)), ErrInvalidNode},
		{"decommission", Decommission("a"), nil},
		{"decommission an unknown node", Decommission("x"), ErrUnknownNode},
		{"decommission a joining node", Decommission("j"), ErrInvalidChange},
		{"move", Move("a", tok(10)), nil},
		{"move a vnode node", Move("b", tok(10)), ErrInvalidChange},
		{"move onto an owned token", Move("a", tok(200)), ErrTokenConflict},
		{"move onto its own token", Move("a", tok(0)), ErrTokenConflict},
		{"move a left node", Move("l", tok(10)), ErrInvalidChange},
		{"unknown kind", Change{Kind: 9, Node: nd("a")}, ErrInvalidChange},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.Apply(c.c)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("Apply(%v) error = %v, want %v", c.c, err, c.want)
			}
			_, err2 := Plan(r, SimpleStrategy{RF: 2}, c.c, PlanOptions{})
			if (err == nil) != (err2 == nil) {
				t.Errorf("Plan error %v disagrees with Apply error %v", err2, err)
			}
		})
	}
	solo := mustRing(t, normal("a", 0))
	if _, err := solo.Apply(Decommission("a")); !errors.Is(err, ErrInvalidChange) {
		t.Errorf("decommissioning the last node: %v", err)
	}
}

// TestPlanProperties checks, on seeded random rings, strategies and changes, that every plan
// moves data correctly: each range a node gains comes from exactly one node that replicates it
// now, no transfer is redundant, and holding old replicas plus transfers minus released ranges
// gives exactly the future replicas.
func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := map[string]int{}
	for i := range 600 {
		r, s, c := randomScenario(rng)
		kinds[fmt.Sprintf("%v/%T", c.Kind, s)]++
		p, err := Plan(r, s, c, PlanOptions{})
		if err != nil {
			t.Fatalf("case %d: %v on %v: %v", i, c, r.Members(), err)
		}
		if !checkPlan(t, r, s, p) {
			t.Fatalf("case %d: %v, %v, ring %v", i, c, s, r.Members())
		}
	}
	// Every kind of change ran under both strategies.
	for _, k := range []ChangeKind{ChangeBootstrap, ChangeDecommission, ChangeMove} {
		for _, st := range []string{"ring.SimpleStrategy", "ring.NetworkTopologyStrategy"} {
			if kinds[fmt.Sprintf("%v/%s", k, st)] < 20 {
				t.Errorf("only %d cases of %v under %s", kinds[fmt.Sprintf("%v/%s", k, st)], k, st)
			}
		}
	}
}

// FuzzPlan runs the plan checks on scenarios drawn from fuzzed seeds.
func FuzzPlan(f *testing.F) {
	for i := range uint64(8) {
		f.Add(i, i*31+7)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		r, s, c := randomScenario(rand.New(rand.NewPCG(a, b)))
		p, err := Plan(r, s, c, PlanOptions{})
		if err != nil {
			t.Fatalf("%v on %v: %v", c, r.Members(), err)
		}
		checkPlan(t, r, s, p)
	})
}

func randomScenario(rng *rand.Rand) (Ring, Strategy, Change) {
	dcs := 1 + rng.IntN(2)
	racks := 1 + rng.IntN(3)
	singleToken := rng.IntN(2) == 0
	newNode := func(i int) Node {
		return Node{Name: fmt.Sprintf("n%02d", i), DC: fmt.Sprintf("dc%d", 1+rng.IntN(dcs)), Rack: fmt.Sprintf("r%d", 1+rng.IntN(racks))}
	}
	newTokens := func() []token.Token {
		n := 1
		if !singleToken {
			n = 1 + rng.IntN(6)
		}
		ts := RandomTokens(rng, n)
		if rng.IntN(8) == 0 {
			ts[0] = tok(min64)
		}
		return ts
	}
	var ms []Member
	for i := range 1 + rng.IntN(7) {
		m := Member{Node: newNode(i), State: Normal, Tokens: newTokens()}
		if rng.IntN(6) == 0 {
			m.State = []NodeState{Leaving, Moving}[rng.IntN(2)]
		}
		if r, err := NewRing(append(ms, m)...); err == nil && r.Len() > 0 {
			ms = append(ms, m)
		}
	}
	r, _ := NewRing(ms...)
	var s Strategy = SimpleStrategy{RF: 1 + rng.IntN(4)}
	if rng.IntN(2) == 0 {
		s = NetworkTopologyStrategy{RF: map[string]int{"dc1": 1 + rng.IntN(3), "dc2": rng.IntN(3)}}
	}
	for {
		switch rng.IntN(3) {
		case 0:
			nn := newNode(99) // names of the ring's members are below n07
			c := Bootstrap(nn, newTokens())
			if _, err := r.Apply(c); err == nil {
				return r, s, c
			}
		case 1:
			if len(ms) > 1 {
				m := ms[rng.IntN(len(ms))]
				if m.State == Normal || m.State == Leaving {
					return r, s, Decommission(m.Node.Name)
				}
			}
		case 2:
			m := ms[rng.IntN(len(ms))]
			c := Move(m.Node.Name, RandomTokens(rng, 1)[0])
			if _, err := r.Apply(c); err == nil {
				return r, s, c
			}
		}
	}
}

func mustPlan(t *testing.T, r Ring, s Strategy, c Change, opt PlanOptions) StreamPlan {
	t.Helper()
	p, err := Plan(r, s, c, opt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func checkSets(t *testing.T, what string, got map[string]token.RangeSet, want map[string]string) {
	t.Helper()
	for n, rs := range got {
		if rs.String() != want[n] {
			t.Errorf("%s[%s] = %s, want %q", what, n, rs, want[n])
		}
	}
	for n := range want {
		if _, ok := got[n]; !ok {
			t.Errorf("%s[%s] missing, want %s", what, n, want[n])
		}
	}
}

// checkPlan verifies a plan against the replicas of both rings on every atom of the union of
// their tokens, sampling each atom at both ends.
func checkPlan(t *testing.T, r Ring, s Strategy, p StreamPlan) bool {
	t.Helper()
	ok := true
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
		ok = false
	}
	minTok := token.Murmur3.MinToken()
	for _, tr := range p.Transfers {
		if u := tr.Range.Unwrap(minTok); len(u) != 1 {
			fail("%v wraps", tr)
		}
		if tr.From == tr.To {
			fail("%v streams to itself", tr)
		}
	}
	pending, err := PendingRanges(r, s, p.Change)
	if err != nil {
		fail("PendingRanges: %v", err)
	}
	bounds := union(r.nat, p.Future.nat)
	for k, b := range bounds {
		samples := []int64{b}
		if left := bounds[(k+len(bounds)-1)%len(bounds)]; left+1 != b {
			samples = append(samples, left+1)
		}
		for _, x := range samples {
			x := tok(x)
			before, after := nodeNames(s.Replicas(r, x)), nodeNames(s.Replicas(p.Future, x))
			held := slices.Clone(before)
			for _, tr := range p.Transfers {
				if !tr.Range.Contains(x) {
					continue
				}
				if !slices.Contains(before, tr.From) {
					fail("%v: source does not replicate %v (replicas %v)", tr, x, before)
				}
				// Strict consistency: a replica that loses the range is the source when there is
				// one; a leaving node sends everything it holds.
				lost := slices.DeleteFunc(slices.Clone(before), func(n string) bool { return slices.Contains(after, n) })
				if len(lost) > 0 && !slices.Contains(lost, tr.From) {
					fail("%v: source keeps %v while %v lose it", tr, x, lost)
				}
				if p.Change.Kind == ChangeDecommission && slices.Contains(before, p.Change.Node.Name) && tr.From != p.Change.Node.Name {
					fail("%v: the leaving node holds %v and must send it", tr, x)
				}
				if slices.Contains(held, tr.To) {
					fail("%v: %s already holds or receives %v", tr, tr.To, x)
				}
				if !slices.Contains(after, tr.To) {
					fail("%v: %s will not replicate %v", tr, tr.To, x)
				}
				held = append(held, tr.To)
			}
			for _, n := range after {
				if !slices.Contains(held, n) && len(before) > 0 {
					fail("token %v: future replica %s neither holds nor receives it", x, n)
				}
				if !slices.Contains(before, n) && !pending[n].Contains(x) {
					fail("token %v: pending ranges of %s miss it", x, n)
				}
			}
			for n, rs := range pending {
				if rs.Contains(x) && (slices.Contains(before, n) || !slices.Contains(after, n)) {
					fail("token %v: pending ranges of %s hold it, but it replicates it before (%v) or not after (%v)", x, n, before, after)
				}
			}
			for _, n := range held {
				released := p.Released[n].Contains(x)
				if slices.Contains(after, n) == released {
					fail("token %v: %s released=%v but future replica=%v", x, n, released, slices.Contains(after, n))
				}
			}
		}
	}
	return ok
}
