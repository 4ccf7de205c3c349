package ring

import (
	"testing"
)

type replicaCase struct {
	at   int64
	want string
}

func checkReplicas(t *testing.T, r Ring, s Strategy, cases []replicaCase) {
	t.Helper()
	for _, c := range cases {
		if got := names(s.Replicas(r, tok(c.at))); got != c.want {
			t.Errorf("%v: Replicas(%d) = %s, want %s", s, c.at, got, c.want)
		}
	}
}

func TestSimpleStrategyWalksTheRing(t *testing.T) {
	r := mustRing(t, normal("a", 0), normal("b", 100), normal("c", 200), normal("d", 300))
	t.Run("RF 2, wrapping past the largest token", func(t *testing.T) {
		checkReplicas(t, r, SimpleStrategy{RF: 2}, []replicaCase{
			{50, "b,c"}, {100, "b,c"}, {101, "c,d"}, {300, "d,a"}, {301, "a,b"}, {min64, "a,b"}, {0, "a,b"},
		})
	})
	t.Run("RF larger than the ring gives every node once", func(t *testing.T) {
		checkReplicas(t, r, SimpleStrategy{RF: 5}, []replicaCase{{50, "b,c,d,a"}, {250, "d,a,b,c"}})
	})
	t.Run("RF 0 gives none", func(t *testing.T) {
		checkReplicas(t, r, SimpleStrategy{RF: 0}, []replicaCase{{50, ""}})
	})
	t.Run("vnodes count a node once", func(t *testing.T) {
		v := mustRing(t, normal("a", 0, 200), normal("b", 100, 300))
		checkReplicas(t, v, SimpleStrategy{RF: 2}, []replicaCase{{50, "b,a"}, {150, "a,b"}})
		checkReplicas(t, v, SimpleStrategy{RF: 3}, []replicaCase{{50, "b,a"}})
	})
	t.Run("leaving and moving nodes still replicate, joining ones do not", func(t *testing.T) {
		v := mustRing(t, normal("a", 0), Member{Node: nd("b"), State: Leaving, Tokens: toks(100)},
			Member{Node: nd("c"), State: Moving, Tokens: toks(200)}, Member{Node: nd("j"), State: Joining, Tokens: toks(50)})
		checkReplicas(t, v, SimpleStrategy{RF: 2}, []replicaCase{{50, "b,c"}, {150, "c,a"}})
	})
	var empty Ring
	if got := (SimpleStrategy{RF: 3}).Replicas(empty, tok(0)); got != nil {
		t.Errorf("empty ring replicas = %v", got)
	}
}

func TestNetworkTopologyStrategyRackAwareness(t *testing.T) {
	// Four nodes in ring order a, b, c, d; a and b share rack r1.
	r := mustRing(t, normal("a@dc1/r1", 0), normal("b@dc1/r1", 100), normal("c@dc1/r2", 200), normal("d@dc1/r3", 300))
	t.Run("RF 2 skips a used rack", func(t *testing.T) {
		checkReplicas(t, r, NetworkTopologyStrategy{RF: map[string]int{"dc1": 2}}, []replicaCase{
			{50, "b,c"}, {150, "c,d"}, {250, "d,a"}, {-50, "a,c"}, // from a, b (r1 again) is skipped
		})
	})
	t.Run("RF 3 equal to the rack count uses every rack", func(t *testing.T) {
		checkReplicas(t, r, NetworkTopologyStrategy{RF: map[string]int{"dc1": 3}}, []replicaCase{
			{-50, "a,c,d"}, {50, "b,c,d"}, {150, "c,d,a"},
		})
	})
	t.Run("RF 4 above the rack count repeats racks for the first nodes met", func(t *testing.T) {
		checkReplicas(t, r, NetworkTopologyStrategy{RF: map[string]int{"dc1": 4}}, []replicaCase{
			{-50, "a,b,c,d"}, {50, "b,c,d,a"},
		})
	})
	t.Run("RF above the node count gives every node", func(t *testing.T) {
		checkReplicas(t, r, NetworkTopologyStrategy{RF: map[string]int{"dc1": 9}}, []replicaCase{{150, "c,d,a,b"}})
	})
	// Two racks, RF 3: one repeat is allowed and goes to the first repeat met.
	two := mustRing(t, normal("a@dc1/r1", 0), normal("b@dc1/r1", 100), normal("c@dc1/r1", 200), normal("d@dc1/r2", 300))
	t.Run("RF 3 over two racks", func(t *testing.T) {
		checkReplicas(t, two, NetworkTopologyStrategy{RF: map[string]int{"dc1": 3}}, []replicaCase{
			{50, "b,c,d"}, {-50, "a,b,d"}, {250, "d,a,b"},
		})
	})
	t.Run("one rack behaves like SimpleStrategy", func(t *testing.T) {
		one := mustRing(t, normal("a", 0), normal("b", 100), normal("c", 200))
		checkReplicas(t, one, NetworkTopologyStrategy{RF: map[string]int{"dc1": 2}}, []replicaCase{{50, "b,c"}, {250, "a,b"}})
	})
}

func TestNetworkTopologyStrategyTwoDCs(t *testing.T) {
	// dc1: a, c; dc2: b, d, alternating on the ring. Rack names repeat across DCs but are
	// distinct racks.
	r := mustRing(t, normal("a@dc1/r1", 0), normal("b@dc2/r1", 100), normal("c@dc1/r2", 200), normal("d@dc2/r2", 300))
	cases := []struct {
		rf    map[string]int
		cases []replicaCase
	}{
		{map[string]int{"dc1": 1, "dc2": 2}, []replicaCase{{50, "b,c,d"}, {250, "d,a,b"}}},
		{map[string]int{"dc1": 2, "dc2": 2}, []replicaCase{{50, "b,c,d,a"}}},
		{map[string]int{"dc1": 0, "dc2": 1}, []replicaCase{{50, "b"}, {150, "d"}}},
		{map[string]int{"dc1": 1, "dc3": 3}, []replicaCase{{50, "c"}}},     // a DC without nodes is skipped
		{map[string]int{"dc1": 3, "dc2": 1}, []replicaCase{{50, "b,c,a"}}}, // dc1 has only two nodes
	}
	for _, c := range cases {
		checkReplicas(t, r, NetworkTopologyStrategy{RF: c.rf}, c.cases)
	}
	if got := (NetworkTopologyStrategy{RF: map[string]int{"dc1": 1, "dc2": 2, "dc3": -1}}).ReplicationFactor(); got != 3 {
		t.Errorf("ReplicationFactor = %d, want 3", got)
	}
	if got := (NetworkTopologyStrategy{RF: map[string]int{"dc2": 2, "dc1": 1}}).String(); got != "NetworkTopologyStrategy{dc1:1,dc2:2}" {
		t.Errorf("String = %s", got)
	}
}

func TestRangeOwnersAndOwnership(t *testing.T) {
	// Four tokens a quarter of the ring apart; a holds two of them.
	q := int64(1) << 62
	t0 := int64(min64) + 1
	r := mustRing(t, normal("a", t0, t0+2*q), normal("b", t0+q), normal("c", t0+3*q))
	ro := RangeOwners(r, SimpleStrategy{RF: 2})
	want := []string{
		"(4611686018427387905,-9223372036854775807] a,b",
		"(-9223372036854775807,-4611686018427387903] b,a",
		"(-4611686018427387903,1] a,c",
		"(1,4611686018427387905] c,a",
	}
	if len(ro) != len(want) {
		t.Fatalf("RangeOwners has %d ranges, want %d", len(ro), len(want))
	}
	for i, w := range want {
		if got := ro[i].Range.String() + " " + names(ro[i].Replicas); got != w {
			t.Errorf("RangeOwners[%d] = %s, want %s", i, got, w)
		}
	}
	cases := []struct {
		rf    int
		own   map[string]float64
		ratio float64
	}{
		{1, map[string]float64{"a": 0.5, "b": 0.25, "c": 0.25}, 2},
		{2, map[string]float64{"a": 1, "b": 0.5, "c": 0.5}, 2},
		{3, map[string]float64{"a": 1, "b": 1, "c": 1}, 1},
	}
	for _, c := range cases {
		s := SimpleStrategy{RF: c.rf}
		own := Ownership(r, s)
		sum := 0.0
		for n, w := range c.own {
			if own[n] != w {
				t.Errorf("RF %d: ownership of %s = %v, want %v", c.rf, n, own[n], w)
			}
			sum += own[n]
		}
		if sum != float64(c.rf) {
			t.Errorf("RF %d: ownership sums to %v", c.rf, sum)
		}
		if got := OwnershipRatio(r, s); got != c.ratio {
			t.Errorf("RF %d: OwnershipRatio = %v, want %v", c.rf, got, c.ratio)
		}
	}
	// A Normal node in a DC the strategy does not replicate to owns nothing.
	dc := mustRing(t, normal("a@dc1/r1", 0), normal("b@dc2/r1", 100))
	if got := OwnershipRatio(dc, NetworkTopologyStrategy{RF: map[string]int{"dc1": 1}}); got <= 1e300 {
		t.Errorf("OwnershipRatio with a non-replica = %v, want +Inf", got)
	}
	if got := OwnershipRatio(Ring{}, SimpleStrategy{RF: 1}); got != 0 {
		t.Errorf("OwnershipRatio of an empty ring = %v, want 0", got)
	}
}

func TestReplicaCommonAndCleanupRanges(t *testing.T) {
	r := mustRing(t, normal("a", 0), normal("b", 100), normal("c", 200), normal("d", 300))
	s := SimpleStrategy{RF: 2}
	replica := []struct{ node, want string }{
		{"a", "(-9223372036854775808,0],(200,-9223372036854775808]"},   // (200,300] and (300,0]
		{"b", "(-9223372036854775808,100],(300,-9223372036854775808]"}, // (300,0] and (0,100]
		{"c", "(0,200]"},
		{"x", ""},
	}
	for _, c := range replica {
		if got := ReplicaRanges(r, s, c.node).String(); got != c.want {
			t.Errorf("ReplicaRanges(%s) = %s, want %s", c.node, got, c.want)
		}
	}
	common := []struct{ a, b, want string }{
		{"a", "b", "(-9223372036854775808,0],(300,-9223372036854775808]"},
		{"b", "c", "(0,100]"},
		{"a", "c", ""},
		{"a", "a", "(-9223372036854775808,0],(200,-9223372036854775808]"},
	}
	for _, c := range common {
		if got := CommonRanges(r, s, c.a, c.b).String(); got != c.want {
			t.Errorf("CommonRanges(%s,%s) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	if got := CleanupRanges(r, s, "c").String(); got != "(0,200]" {
		t.Errorf("settled ring: CleanupRanges(c) = %s, want its replica ranges (0,200]", got)
	}
}

func TestCleanupKeepsPendingRanges(t *testing.T) {
	s := SimpleStrategy{RF: 2}
	r := mustRing(t, normal("a", 0), normal("b", 100), normal("c", 200))
	boot := Bootstrap(nd("d"), toks(50))
	joining, err := r.Begin(boot)
	if err != nil {
		t.Fatal(err)
	}
	done, err := r.Apply(boot)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		ring Ring
		node string
		want string
	}{
		{"before: b holds (200,100]", r, "b", "(-9223372036854775808,100],(200,-9223372036854775808]"},
		{"while d joins, b keeps everything", joining, "b", "(-9223372036854775808,100],(200,-9223372036854775808]"},
		{"while d joins, d keeps what it fetches", joining, "d", "(-9223372036854775808,50],(200,-9223372036854775808]"},
		{"after d joined, b drops (200,0]", done, "b", "(0,100]"},
	}
	for _, c := range cases {
		if got := CleanupRanges(c.ring, s, c.node).String(); got != c.want {
			t.Errorf("%s: CleanupRanges(%s) = %s, want %s", c.name, c.node, got, c.want)
		}
	}
	// While b leaves a four-node ring, c keeps (300,0], which it is about to receive.
	four := mustRing(t, normal("a", 0), normal("b", 100), normal("c", 200), normal("d", 300))
	leaving, err := four.Begin(Decommission("b"))
	if err != nil {
		t.Fatal(err)
	}
	if got := CleanupRanges(leaving, s, "c").String(); got != "(-9223372036854775808,200],(300,-9223372036854775808]" {
		t.Errorf("while b leaves: CleanupRanges(c) = %s", got)
	}
	if m, _ := leaving.Member("b"); m.State != Leaving {
		t.Errorf("Begin(Decommission) left b %v", m.State)
	}
}
