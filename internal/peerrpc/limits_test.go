package peerrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicedb/sluice/internal/repair"
)

func treeBodyOf(ranges string, depth int) []byte {
	b, _ := json.Marshal(map[string]any{"keyspace": "ks", "table": "t", "ranges": ranges, "depth": depth})
	return b
}

func copies(r string, n int) string { return strings.TrimSuffix(strings.Repeat(r+",", n), ",") }

// disjoint is n adjacent ranges of width w from 0.
func disjoint(n int, w int64) string {
	var parts []string
	for i := range int64(n) {
		parts = append(parts, fmt.Sprintf("(%d,%d]", i*w, (i+1)*w))
	}
	return strings.Join(parts, ",")
}

// A repair_tree body is held to every bound, and the error names the bound.
func TestCheckTreeNamesTheBoundARequestExceeds(t *testing.T) {
	const min = "-9223372036854775808"
	for _, c := range []struct {
		name, ranges string
		depth        int
		bound        string
	}{
		{"10,000 ranges", copies("(0,1]", 10000), 0, "MaxCallRanges"},
		{"256 copies at depth 15", copies("(0,1]", 256), 15, "MaxTreeLeaves"},
		{"17 ranges at depth 15", disjoint(17, 1000), 15, "MaxTreeLeaves"},
		{"16 copies at depth 15", copies("(0,1]", 16), 15, "sorted and disjoint"},
		{"two copies at depth 0", "(0,1],(0,1]", 0, "sorted and disjoint"},
		{"overlapping", "(0,10],(5,20]", 3, "sorted and disjoint"},
		{"unsorted", "(10,20],(0,10]", 3, "sorted and disjoint"},
		{"after the end of the ring", "(10," + min + "],(20,30]", 3, "sorted and disjoint"},
		{"wrapping", "(10,-10]", 3, "normalized"},
		{"whole ring off the minimum", "(5,5]", 3, "normalized"},
		{"deeper than MaxTreeDepth", "(0,1]", 16, "MaxTreeDepth"},
		{"negative depth", "(0,1]", -1, "MaxTreeDepth"},
		{"bad ranges", "(0,", 0, "missing"},
	} {
		_, err := CheckTree(treeBodyOf(c.ranges, c.depth))
		if err == nil || !strings.Contains(err.Error(), c.bound) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.bound)
		}
	}
	for _, c := range []struct {
		ranges string
		depth  int
	}{
		{disjoint(16, 1000), 15},
		{disjoint(MaxCallRanges, 10), 9},
		{"(" + min + "," + min + "]", 15},
		{"(-10,10],(10,20],(30," + min + "]", 2},
	} {
		cost, err := CheckTree(treeBodyOf(c.ranges, c.depth))
		if err != nil {
			t.Errorf("%d ranges at depth %d: %v", strings.Count(c.ranges, "("), c.depth, err)
			continue
		}
		n := int64(strings.Count(c.ranges, "("))
		if want := n<<c.depth*TreeWorkPerLeaf + n*treeWorkPerTree; cost.Work != want {
			t.Errorf("%d ranges at depth %d: work %d, want %d", n, c.depth, cost.Work, want)
		}
	}
}

func TestCheckDigestsRefusesRepeatsAndTooManyRanges(t *testing.T) {
	body := func(ranges string, limit int) []byte {
		b, _ := json.Marshal(map[string]any{"keyspace": "ks", "table": "t", "ranges": ranges, "limit": limit})
		return b
	}
	for ranges, bound := range map[string]string{
		copies("(0,1]", 10000):       "MaxCallRanges",
		copies("(0,1]", 2):           "sorted and disjoint",
		disjoint(MaxCallRanges+1, 5): "MaxCallRanges",
	} {
		if _, err := CheckDigests(body(ranges, 0)); err == nil || !strings.Contains(err.Error(), bound) {
			t.Errorf("%d ranges: %v, want %s", strings.Count(ranges, "("), err, bound)
		}
	}
	small, err := CheckDigests(body(disjoint(MaxCallRanges, 5), 5))
	if err != nil {
		t.Fatal(err)
	}
	full, err := CheckDigests(body("(0,1]", 0))
	if err != nil || full != DigestCost(repair.MaxDigestsPerPage) || small.Work >= full.Work {
		t.Fatalf("cost of a page of 5 %+v, of a full page %+v (%v)", small, full, err)
	}
}

// The table is consistent: every call its checks admit has a predicted answer within its
// MaxAnswer and work within the default budget, and every answer fits a frame.
func TestEveryAdmissibleCallFitsTheTable(t *testing.T) {
	lim := &Limits{}
	tree, _ := lim.Lookup(MethodRepairTree)
	digests, _ := lim.Lookup(MethodRepairDigests)
	for depth := 0; depth <= MaxTreeDepth; depth++ {
		n := min(MaxCallRanges, MaxTreeLeaves>>depth)
		c := TreeCost(n, depth)
		if c.Answer > int64(tree.MaxAnswer) || c.Work > DefaultMemoryBudget {
			t.Errorf("%d trees at depth %d: %+v beyond MaxAnswer %d or the budget", n, depth, c, tree.MaxAnswer)
		}
	}
	for _, limit := range []int{-1, 0, 1, 1000, repair.MaxDigestsPerPage, math.MaxInt32} {
		if c := DigestCost(limit); c.Answer > int64(digests.MaxAnswer) || c.Work > DefaultMemoryBudget {
			t.Errorf("digests limit %d: %+v beyond MaxAnswer %d or the budget", limit, c, digests.MaxAnswer)
		}
	}
	for _, m := range DefaultMethods() {
		if m.MaxBody > MaxRequest || m.MaxAnswer+len(bodyHead)+len(bodyTail) > MaxResponse || m.MaxAnswer <= 0 {
			t.Errorf("%s: MaxBody %d, MaxAnswer %d outside the frame bounds", m.Name, m.MaxBody, m.MaxAnswer)
		}
		if m.Heavy != (m.Check != nil) {
			t.Errorf("%s: a heavy call needs a Check to predict its work, and only heavy calls take ranges", m.Name)
		}
	}
}

// admit refuses by the table, then by the caller's heavy slots, then by the memory budget, and
// release gives back what it took.
func TestAdmitHoldsCallsToTheTableAndTheBudgets(t *testing.T) {
	work := func(n int64) func([]byte) (Cost, error) {
		return func(b []byte) (Cost, error) {
			if string(b) == `"bad"` {
				return Cost{}, errors.New("bad body (MaxThing)")
			}
			return Cost{Answer: 10, Work: n}, nil
		}
	}
	g := newGate(&Limits{HeavyPerPeer: 2, MemoryBudget: 100, Methods: []Method{
		{Name: "light", MaxBody: 10, MaxAnswer: 100},
		{Name: "heavy", MaxBody: 10, MaxAnswer: 100, Heavy: true, Check: work(40)},
		{Name: "huge", MaxBody: 10, MaxAnswer: 100, Heavy: true, Check: work(101)},
		{Name: "chatty", MaxBody: 10, MaxAnswer: 5, Heavy: true, Check: work(1)},
	}})
	refused := func(caller, method, body string, code Code, reason Reason) {
		t.Helper()
		_, release, r, err := g.admit(caller, method, []byte(body))
		if err == nil || err.Code != code || r != reason || release != nil {
			t.Fatalf("%s %s %s: %v (%s), want %s (%s)", caller, method, body, err, r, code, reason)
		}
	}
	admitted := func(caller, method string) func() {
		t.Helper()
		_, release, _, err := g.admit(caller, method, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", caller, method, err)
		}
		return release
	}
	refused("a", "nothing", "", CodeUnknown, ReasonUnknown)
	refused("a", "light", `"12345678901"`, CodeBadRequest, ReasonBody)
	refused("a", "heavy", `"bad"`, CodeBadRequest, ReasonBounds)
	refused("a", "huge", "", CodeBadRequest, ReasonBounds)
	refused("a", "chatty", "", CodeBadRequest, ReasonBounds)
	admitted("a", "light")()

	a1, a2 := admitted("a", "heavy"), admitted("a", "heavy")
	refused("a", "heavy", "", CodeBusy, ReasonPeer)
	admitted("a", "light")()                          // light calls take no slot
	refused("b", "heavy", "", CodeBusy, ReasonMemory) // a holds 80 of 100
	if g.heavy.Held("b") != 0 {
		t.Fatal("a call refused for memory kept its slot")
	}
	a1()
	b1 := admitted("b", "heavy")
	refused("b", "heavy", "", CodeBusy, ReasonMemory)
	a2()
	b2 := admitted("b", "heavy")
	if g.budget.Used() != 80 {
		t.Fatalf("%d reserved, want 80", g.budget.Used())
	}
	b1()
	b2()
	if g.budget.Used() != 0 || g.heavy.Held("a") != 0 || g.heavy.Held("b") != 0 {
		t.Fatalf("after every release: %d reserved, slots a %d b %d", g.budget.Used(), g.heavy.Held("a"), g.heavy.Held("b"))
	}
}

func TestBudgetRefusesWhatDoesNotFit(t *testing.T) {
	b := NewBudget(100)
	if !b.Reserve(60) || b.Reserve(41) || !b.Reserve(40) || b.Reserve(1) || !b.Reserve(0) {
		t.Fatalf("reservations of 60, 41, 40, 1, 0 from 100: %d used", b.Used())
	}
	b.Release(60)
	if b.Used() != 40 || b.Reserve(61) || !b.Reserve(60) {
		t.Fatalf("after a release: %d used", b.Used())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("releasing more than was reserved did not panic")
			}
		}()
		b.Release(101)
	}()

	// Concurrent reservers never hold more than the limit together.
	b = NewBudget(1000)
	var peak atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(100 + 50*i)
			for range 2000 {
				if !b.Reserve(n) {
					continue
				}
				if u := b.Used(); u > peak.Load() {
					peak.Store(u)
				}
				b.Release(n)
			}
		}()
	}
	wg.Wait()
	if peak.Load() > 1000 || b.Used() != 0 {
		t.Fatalf("peak %d of 1000, %d left reserved", peak.Load(), b.Used())
	}
}

func TestSlotsArePerHolder(t *testing.T) {
	s := NewSlots(2)
	if !s.Take("a") || !s.Take("a") || s.Take("a") || !s.Take("b") {
		t.Fatal("two slots each")
	}
	s.Give("a")
	if !s.Take("a") || s.Held("a") != 2 || s.Held("b") != 1 {
		t.Fatalf("after a give: a %d, b %d", s.Held("a"), s.Held("b"))
	}
}
