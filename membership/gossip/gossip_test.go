package gossip

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// testLog writes warnings and errors to the test log, and stops writing once the test has
// ended: memberlist goroutines may still log while a cluster shuts down, and t.Log after
// the test returns panics.
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func newTestLogger(t testing.TB) zerolog.Logger {
	w := &testLog{t: t}
	// Registered first, so it runs after every Shutdown registered later.
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return zerolog.New(w).Level(zerolog.WarnLevel)
}

// testCluster holds a test's nodes; every test uses its own label so concurrently running
// tests' clusters on loopback cannot merge even if a port were reused.
type testCluster struct {
	t     *testing.T
	label string
	log   zerolog.Logger
	rng   *rand.Rand
	nodes []*Gossip

	keysMu sync.Mutex
	keys   map[string]ed25519.PrivateKey // each node name's certificate key, made on first use
}

// key is the signing key of node name's certificate in this test.
func (c *testCluster) key(name string) ed25519.PrivateKey {
	c.keysMu.Lock()
	defer c.keysMu.Unlock()
	if c.keys == nil {
		c.keys = map[string]ed25519.PrivateKey{}
	}
	k, ok := c.keys[name]
	if !ok {
		_, k, _ = ed25519.GenerateKey(nil)
		c.keys[name] = k
	}
	return k
}

// pub is the public key member name proves, for a test Verifier.
func (c *testCluster) pub(name string) crypto.PublicKey { return c.key(name).Public() }

func newTestCluster(t *testing.T) *testCluster {
	t.Parallel()
	return &testCluster{t: t, label: "sluice-" + t.Name(), log: newTestLogger(t), rng: rand.New(rand.NewPCG(uint64(len(t.Name())), 42))}
}

// config returns a loopback test config for the named node; it seeds from the first node.
func (c *testCluster) config(name string) Config {
	var seeds []string
	if len(c.nodes) > 0 {
		seeds = []string{c.nodes[0].Addr()}
	}
	return Config{
		Name:       name,
		BindAddr:   "127.0.0.1:0",
		Seeds:      seeds,
		ClusterKey: keyA,
		Label:      c.label,
		Meta:       NodeMeta{StreamAddr: "127.0.0.1:7000", AdminAddr: "127.0.0.1:8080", DC: "dc1", Rack: "r" + name[len(name)-1:], State: ring.Normal},
		Log:        c.log,
		Signer:     c.key(name),
	}.ForTests()
}

// start starts a node, giving it 256 random tokens first unless it already has some.
func (c *testCluster) start(cfg Config) (*Gossip, error) {
	c.t.Helper()
	g, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { g.Shutdown() })
	if err := g.SetTokens(c.tokens(256)); err != nil {
		c.t.Fatal(err)
	}
	// The join's bound is stretched by slack like eventually's: a join returns as soon as a
	// seed answered, and a loaded machine can starve a seed past memberlist's 1 s TCP timeout
	// for a few attempts.
	ctx, cancel := context.WithTimeout(context.Background(), slack*10*time.Second)
	defer cancel()
	return g, g.Start(ctx)
}

func (c *testCluster) add(cfg Config) *Gossip {
	c.t.Helper()
	g, err := c.start(cfg)
	if err != nil {
		c.t.Fatalf("start %s: %v", cfg.Name, err)
	}
	c.nodes = append(c.nodes, g)
	return g
}

func (c *testCluster) addN(n int) {
	c.t.Helper()
	for range n {
		c.add(c.config(fmt.Sprintf("node%d", len(c.nodes))))
	}
}

func (c *testCluster) tokens(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = c.rng.Int64() - c.rng.Int64()
	}
	return out
}

// eventually polls cond until it holds or the deadline passes.
//
// The bound is stretched by slack: it states how soon a healthy cluster gets there, and the
// race detector on a loaded two-core machine can slow gossip rounds several times over without
// anything being wrong. A condition that holds returns at once, so a larger bound costs only
// failing runs.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	within *= slack
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s: last state: %s", within, what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// slack multiplies every eventually bound (see there).
const slack = 3

func member(ms []Member, name string) (Member, bool) {
	i := slices.IndexFunc(ms, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return Member{}, false
	}
	return ms[i], true
}

// converged reports whether every node sees every other node alive with its current
// metadata and token set.
func (c *testCluster) converged(nodes ...*Gossip) (bool, string) {
	if len(nodes) == 0 {
		nodes = c.nodes
	}
	for _, obs := range nodes {
		ms := obs.Members()
		for _, g := range nodes {
			m, ok := member(ms, g.cfg.Name)
			toks, ver := g.Tokens()
			g.mu.Lock()
			meta := g.meta
			g.mu.Unlock()
			switch {
			case !ok:
				return false, fmt.Sprintf("%s does not know %s", obs.cfg.Name, g.cfg.Name)
			case m.Liveness != StateAlive:
				return false, fmt.Sprintf("%s sees %s %v", obs.cfg.Name, g.cfg.Name, m.Liveness)
			case m.Meta != meta:
				return false, fmt.Sprintf("%s sees meta %+v of %s, want %+v", obs.cfg.Name, m.Meta, g.cfg.Name, meta)
			case m.TokensVersion != ver || !slices.Equal(m.Tokens, toks):
				return false, fmt.Sprintf("%s holds tokens v%d (%d) of %s, want v%d (%d)", obs.cfg.Name, m.TokensVersion, len(m.Tokens), g.cfg.Name, ver, len(toks))
			case m.Addr != g.Addr():
				return false, fmt.Sprintf("%s sees %s at %s, want %s", obs.cfg.Name, g.cfg.Name, m.Addr, g.Addr())
			}
		}
		alive := 0
		for _, m := range ms {
			if m.Liveness == StateAlive {
				alive++
			}
		}
		if alive != len(nodes) {
			return false, fmt.Sprintf("%s sees %d members alive, want %d", obs.cfg.Name, alive, len(nodes))
		}
	}
	return true, ""
}

func (c *testCluster) waitConverged(nodes ...*Gossip) {
	c.t.Helper()
	eventually(c.t, 10*time.Second, "cluster converges", func() (bool, string) { return c.converged(nodes...) })
}

func TestThreeNodesShareMetadataAndFullTokenSets(t *testing.T) {
	c := newTestCluster(t)
	c.addN(3)
	c.waitConverged()
	// 256 tokens are 2 KiB: far beyond the 512 bytes of memberlist metadata.
	for _, g := range c.nodes {
		if toks, _ := g.Tokens(); len(toks) != 256 || 8*len(toks) <= 512 {
			t.Fatalf("%s has %d tokens", g.cfg.Name, len(toks))
		}
	}
}

func TestTokenChangeReachesPeers(t *testing.T) {
	c := newTestCluster(t)
	c.addN(3)
	c.waitConverged()
	_, before := c.nodes[1].Tokens()
	want := c.tokens(256)
	if err := c.nodes[1].SetTokens(want); err != nil {
		t.Fatal(err)
	}
	got, after := c.nodes[1].Tokens()
	slices.Sort(want)
	if after <= before || !slices.Equal(got, want) {
		t.Fatalf("local set v%d -> v%d", before, after)
	}
	c.waitConverged()
	if _, err := c.nodes[0].Ring(); err != nil {
		t.Fatal(err)
	}
}

func TestTokenChangeSpreadsByBroadcastAlone(t *testing.T) {
	c := newTestCluster(t)
	for i := range 3 {
		cfg := c.config(fmt.Sprintf("node%d", i))
		// Push/pull only on join: after that, only the chunked broadcasts carry the change.
		cfg.PushPullInterval = time.Hour
		c.add(cfg)
	}
	c.waitConverged()
	want := c.tokens(256)
	if err := c.nodes[1].SetTokens(want); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	// The 256-token set travels as 4 chunks of at most 800 bytes, relayed by every node that
	// finds a chunk new; no push/pull runs, so this is the broadcasts' work alone. Delivery to
	// each peer is probabilistic (about 1 run in 40 leaves one of the two peers waiting for
	// the next push/pull), so the test asserts what is certain: the set crosses whole.
	eventually(t, 5*time.Second, "a peer receives the new set", func() (bool, string) {
		for _, obs := range []*Gossip{c.nodes[0], c.nodes[2]} {
			if m, _ := member(obs.Members(), "node1"); slices.Equal(m.Tokens, want) {
				return true, ""
			}
		}
		return false, "no peer has it"
	})
}

func TestMetadataChangeReachesPeers(t *testing.T) {
	c := newTestCluster(t)
	c.addN(3)
	c.waitConverged()
	evs := c.nodes[0].Events()
	m := c.nodes[2].cfg.Meta
	m.State = ring.Leaving
	m.AdminAddr = "127.0.0.1:9999"
	if err := c.nodes[2].SetMeta(m); err != nil {
		t.Fatal(err)
	}
	c.waitConverged()
	// node0 reports the change as an Update carrying the new state.
	deadline := time.After(slack * 5 * time.Second)
	for {
		select {
		case e := <-evs:
			if e.Kind == Update && e.Member.Name == "node2" && e.Member.Meta.State == ring.Leaving {
				return
			}
		case <-deadline:
			t.Fatal("no Update event for node2")
		}
	}
}

func TestSetMetaRefusesOversizedMetadata(t *testing.T) {
	c := newTestCluster(t)
	c.addN(1)
	g := c.nodes[0]
	m := g.cfg.Meta
	m.DC = strings.Repeat("d", 600)
	if err := g.SetMeta(m); !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if ms := g.Members(); len(ms) != 1 || ms[0].Meta.DC != "dc1" {
		t.Fatalf("metadata changed: %+v", ms)
	}
}

func TestShutdownWithoutLeaveIsReportedDead(t *testing.T) {
	c := newTestCluster(t)
	c.addN(3)
	c.waitConverged()
	evs := c.nodes[0].Events()
	start := time.Now()
	c.nodes[2].Shutdown()
	for _, obs := range c.nodes[:2] {
		eventually(t, 8*time.Second, obs.cfg.Name+" sees node2 dead", func() (bool, string) {
			m, _ := member(obs.Members(), "node2")
			return m.Liveness == StateDead, m.Liveness.String()
		})
	}
	t.Logf("dead node detected by both peers after %v", time.Since(start).Round(10*time.Millisecond))
	waitEvent(t, evs, Dead, "node2")
	// A dead node keeps its place in the ring.
	r, err := c.nodes[0].Ring()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Member("node2"); !ok {
		t.Fatal("dead node dropped from the ring")
	}
}

func TestLeaveIsReportedAsLeave(t *testing.T) {
	c := newTestCluster(t)
	c.addN(3)
	c.waitConverged()
	evs := c.nodes[0].Events()
	if err := c.nodes[2].Leave(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.nodes[2].Shutdown()
	for _, obs := range c.nodes[:2] {
		eventually(t, 5*time.Second, obs.cfg.Name+" sees node2 leave", func() (bool, string) {
			m, _ := member(obs.Members(), "node2")
			return m.Liveness == StateLeft, m.Liveness.String()
		})
	}
	waitEvent(t, evs, Leave, "node2")
}

// waitEvent reads evs until an event of kind for name arrives.
func waitEvent(t *testing.T, evs <-chan Event, kind EventKind, name string) {
	t.Helper()
	deadline := time.After(slack * 5 * time.Second)
	for {
		select {
		case e, ok := <-evs:
			if !ok {
				t.Fatal("events closed")
			}
			if e.Kind == kind && e.Member.Name == name {
				return
			}
		case <-deadline:
			t.Fatalf("no %v event for %s", kind, name)
		}
	}
}

// assertOutsider checks that an intruder never became a member on either side.
func (c *testCluster) assertOutsider(intruder *Gossip, err error) {
	c.t.Helper()
	if !errors.Is(err, ErrJoin) || !errors.Is(err, context.DeadlineExceeded) {
		c.t.Fatalf("intruder Start: %v, want ErrJoin after the deadline", err)
	}
	if ms := intruder.Members(); len(ms) != 1 || ms[0].Name != intruder.cfg.Name {
		c.t.Fatalf("intruder sees %d members", len(ms))
	}
	for _, g := range c.nodes {
		if _, ok := member(g.Members(), intruder.cfg.Name); ok {
			c.t.Fatalf("%s lists the intruder", g.cfg.Name)
		}
	}
}

func (c *testCluster) startIntruder(cfg Config) (*Gossip, error) {
	g, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { g.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	return g, g.Start(ctx)
}

func TestWrongClusterKeyNeverJoins(t *testing.T) {
	c := newTestCluster(t)
	c.addN(2)
	c.waitConverged()
	cfg := c.config("intruder")
	cfg.ClusterKey = keyB
	g, err := c.startIntruder(cfg)
	c.assertOutsider(g, err)
}

func TestWrongLabelNeverJoins(t *testing.T) {
	c := newTestCluster(t)
	c.addN(2)
	c.waitConverged()
	cfg := c.config("intruder")
	cfg.Label = c.label + "-other"
	g, err := c.startIntruder(cfg)
	c.assertOutsider(g, err)
}

func TestKeyRotation(t *testing.T) {
	c := newTestCluster(t)
	for i := range 3 {
		cfg := c.config(fmt.Sprintf("node%d", i))
		cfg.ExtraKeys = [][]byte{keyB}
		c.add(cfg)
	}
	c.waitConverged()
	// Switch the primary key one node at a time: during the switch some nodes encrypt with
	// B and others with A, and everyone still reads everything.
	for _, g := range c.nodes {
		if err := g.UseKey(keyB); err != nil {
			t.Fatal(err)
		}
		if err := g.SetTokens(c.tokens(256)); err != nil {
			t.Fatal(err)
		}
	}
	c.waitConverged()
	for _, g := range c.nodes {
		if err := g.RemoveKey(keyA); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.nodes[0].SetTokens(c.tokens(256)); err != nil {
		t.Fatal(err)
	}
	c.waitConverged()
	// A node holding only the new key joins; one holding only the retired key does not.
	cfg := c.config("node3")
	cfg.ClusterKey = keyB
	c.add(cfg)
	c.waitConverged()
	old := c.config("intruder")
	g, err := c.startIntruder(old)
	c.assertOutsider(g, err)
}

func TestRingEqualsRingBuiltFromTheSameTokens(t *testing.T) {
	c := newTestCluster(t)
	c.addN(3)
	c.waitConverged()
	var direct []ring.Member
	for _, g := range c.nodes {
		toks, _ := g.Tokens()
		ts := make([]token.Token, len(toks))
		for i, v := range toks {
			ts[i] = token.Token{Kind: token.KindMurmur3, Long: v}
		}
		direct = append(direct, ring.Member{Node: ring.Node{Name: g.cfg.Name, DC: "dc1", Rack: g.cfg.Meta.Rack}, State: ring.Normal, Tokens: ts})
	}
	want, err := ring.NewRing(direct...)
	if err != nil {
		t.Fatal(err)
	}
	s := ring.NetworkTopologyStrategy{RF: map[string]int{"dc1": 3}}
	for _, g := range c.nodes {
		got, err := g.Ring()
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got.Members()) != fmt.Sprint(want.Members()) || !slices.EqualFunc(got.Sorted(), want.Sorted(), token.Token.Equal) {
			t.Fatalf("%s: ring differs", g.cfg.Name)
		}
		if fmt.Sprint(ring.RangeOwners(got, s)) != fmt.Sprint(ring.RangeOwners(want, s)) {
			t.Fatalf("%s: replica placement differs", g.cfg.Name)
		}
	}
}

func TestRingWaitsForAnnouncedTokens(t *testing.T) {
	c := newTestCluster(t)
	c.addN(1)
	g := c.nodes[0]
	// A peer whose metadata announces a version this node has not received yet.
	g.mu.Lock()
	g.members["peer"] = &memberEntry{addr: "127.0.0.1:1", meta: NodeMeta{State: ring.Normal, TokensVersion: 5}, liveness: StateAlive}
	feed(g.tokens, "peer", tokenSet{version: 4, tokens: []int64{1}})
	g.mu.Unlock()
	if _, err := g.Ring(); !errors.Is(err, ErrTokensPending) || !strings.Contains(err.Error(), "peer") {
		t.Fatalf("err = %v", err)
	}
	g.mu.Lock()
	feed(g.tokens, "peer", tokenSet{version: 5, tokens: []int64{2}})
	g.mu.Unlock()
	if _, err := g.Ring(); err != nil {
		t.Fatal(err)
	}
}

func TestEventsNeverBlockMemberlist(t *testing.T) {
	c := newTestCluster(t)
	cfg := c.config("node0")
	cfg.EventBuffer = 2
	obs := c.add(cfg) // nobody reads obs.Events() until the end
	for i := 1; i <= 5; i++ {
		c.add(c.config(fmt.Sprintf("node%d", i)))
	}
	c.waitConverged()
	// Far more updates than the buffer holds, while the channel is full.
	for i := range 20 {
		m := c.nodes[1].cfg.Meta
		m.AdminAddr = fmt.Sprintf("127.0.0.1:%d", 9000+i)
		if err := c.nodes[1].SetMeta(m); err != nil {
			t.Fatal(err)
		}
		if err := c.nodes[2].SetTokens(c.tokens(256)); err != nil {
			t.Fatal(err)
		}
	}
	c.nodes[4].Shutdown()
	c.nodes[5].Shutdown()
	// memberlist calls the event delegate under its node lock: had a callback blocked on the
	// full channel, failure detection would stall and these nodes would never be seen dead.
	eventually(t, 10*time.Second, "node0 sees node4 and node5 dead", func() (bool, string) {
		ms := obs.Members()
		a, _ := member(ms, "node4")
		b, _ := member(ms, "node5")
		return a.Liveness == StateDead && b.Liveness == StateDead, a.Liveness.String() + "," + b.Liveness.String()
	})
	eventually(t, 10*time.Second, "live nodes converge while events are not read", func() (bool, string) {
		return c.converged(c.nodes[:4]...)
	})
	// Every Join and Dead is still delivered, in order per member.
	joins, deads := map[string]bool{}, map[string]bool{}
	evs := obs.Events()
	deadline := time.After(slack * 5 * time.Second)
	// (On a loaded machine another member may be suspected and declared dead for a moment;
	// the test waits for the two that stopped.)
	for len(joins) < 6 || !deads["node4"] || !deads["node5"] {
		select {
		case e := <-evs:
			switch e.Kind {
			case Join:
				joins[e.Member.Name] = true
			case Dead:
				if !joins[e.Member.Name] {
					t.Fatalf("Dead before Join for %s", e.Member.Name)
				}
				deads[e.Member.Name] = true
			}
		case <-deadline:
			t.Fatalf("joins %v, deads %v", joins, deads)
		}
	}
	if !deads["node4"] || !deads["node5"] {
		t.Fatalf("deads %v", deads)
	}
	t.Logf("updates coalesced while unread: %d", obs.CoalescedUpdates())
	obs.Shutdown()
	for range evs { // closed by Shutdown
	}
}

func TestStartTwiceAndAfterShutdown(t *testing.T) {
	c := newTestCluster(t)
	g := c.add(c.config("node0"))
	if err := g.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v", err)
	}
	g.Shutdown()
	if err := g.Leave(time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("Leave after Shutdown: %v", err)
	}
	if err := g.Shutdown(); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	g2, err := New(c.config("node1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := g2.Leave(time.Second); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Leave before Start: %v", err)
	}
	g2.Shutdown()
	if err := g2.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Shutdown: %v", err)
	}
}

// An update of the local metadata that memberlist does not confirm (it drops one that a
// concurrent refutation overtook, see announcer) is announced again until one is confirmed.
func TestUnconfirmedMetadataUpdateIsAnnouncedAgain(t *testing.T) {
	c := newTestCluster(t)
	g, err := New(c.config("node0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Shutdown() })
	var mu sync.Mutex
	var metas [][]byte
	g.updateNode = func(time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		metas = append(metas, (*delegate)(g).NodeMeta(512))
		if len(metas) == 1 {
			return errors.New("timeout waiting for update broadcast")
		}
		return nil
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := g.cfg.Meta
	m.AdminAddr = "127.0.0.1:9999"
	if err := g.SetMeta(m); err != nil {
		t.Fatal(err)
	}
	want := (*delegate)(g).NodeMeta(512)
	eventually(t, 5*time.Second, "the update announced again", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(metas) >= 2 && bytes.Equal(metas[len(metas)-1], want), fmt.Sprintf("%d announcements", len(metas))
	})
}
