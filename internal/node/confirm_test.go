package node

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

func tk(v int64) token.Token { return token.Token{Kind: token.KindMurmur3, Long: v} }

// Members without a proven identity are named when alive or when they claim ring state; the
// node itself, proven members, gone ones that claim nothing or failed their proof, and
// replaced ones are not.
func TestUnprovenMembersAreNamed(t *testing.T) {
	m := func(name string, st ring.NodeState, id gossip.Identity, l gossip.Liveness, tokens ...int64) gossip.Member {
		return gossip.Member{Name: name, Meta: gossip.NodeMeta{State: st}, Identity: id, Liveness: l, Tokens: tokens,
			IdentityError: map[gossip.Identity]string{gossip.IdentityRefused: "bad certificate"}[id]}
	}
	ms := []gossip.Member{
		m("self", ring.Normal, gossip.IdentityPending, gossip.StateAlive, 1),
		m("ok", ring.Normal, gossip.IdentityProven, gossip.StateAlive, 2),
		m("pending", ring.Normal, gossip.IdentityPending, gossip.StateAlive, 3),
		m("impostor", ring.Normal, gossip.IdentityRefused, gossip.StateAlive, 4),
		m("tokens-only", 0, gossip.IdentityRefused, gossip.StateAlive, 5),
		m("silent", 0, gossip.IdentityRefused, gossip.StateAlive),
		m("gone", ring.Normal, gossip.IdentityRefused, gossip.StateLeft, 6),
		m("dead-unproven", ring.Normal, gossip.IdentityPending, gossip.StateDead, 7),
		m("dead-silent", 0, gossip.IdentityPending, gossip.StateDead),
		m("left", ring.Left, gossip.IdentityPending, gossip.StateLeft, 8),
		m("replaced", ring.Normal, gossip.IdentityPending, gossip.StateDead, 9),
		{Name: "heir", Meta: gossip.NodeMeta{State: ring.Normal, Replaces: "replaced"}, Identity: gossip.IdentityProven,
			Liveness: gossip.StateAlive, Tokens: []int64{9}},
	}
	got := strings.Join(unprovenMembers(ms, "self"), ", ")
	want := "pending (pending), impostor (refused: bad certificate), tokens-only (refused: bad certificate), " +
		"silent (refused: bad certificate), dead-unproven (pending)"
	if got != want {
		t.Fatalf("unproven: %s\nwant      %s", got, want)
	}
}

// finishOp waits for an operation to finish, whatever its outcome.
func finishOp(t *testing.T, n *Node, id int) OpStatus {
	t.Helper()
	var last OpStatus
	waitUntil(t, 90*time.Second, "operation to finish", func() bool {
		for _, o := range n.Ops() {
			if o.ID == id {
				last = o
				return o.State != OpRunning
			}
		}
		return false
	})
	return last
}

// cleanupOn runs a cleanup of the test keyspace on n and waits for its outcome.
func cleanupOn(t *testing.T, n *Node) OpStatus {
	t.Helper()
	s, err := n.StartCleanup(CleanupRequest{Keyspace: testKS})
	if err != nil {
		t.Fatal(err)
	}
	return finishOp(t, n, s.ID)
}

// refusedCleanup checks that a cleanup failed with err and names each of the words.
func refusedCleanup(t *testing.T, st OpStatus, err error, words ...string) {
	t.Helper()
	t.Logf("cleanup %s: %s", st.State, st.Error)
	if st.State != OpFailed || !strings.Contains(st.Error, err.Error()) {
		t.Fatalf("cleanup: %s: %s, want refused with %q", st.State, st.Error, err)
	}
	for _, w := range words {
		if !strings.Contains(st.Error, w) {
			t.Errorf("cleanup's error does not name %q: %s", w, st.Error)
		}
	}
}

// splitInto installs parent's partitions in ranges into the test table's directory under root.
func splitInto(t *testing.T, parent *sstable.Table, rs token.RangeSet, root string) {
	t.Helper()
	if _, err := slice.Split(context.Background(), parent, rs, gen.TableDir(root, testKS, testTable), slice.Options{}); err != nil {
		t.Fatal(err)
	}
}

// generated writes the test table's partitions of seed testSeed (rows of rowSize bytes) into a
// directory of its own and opens the sstable.
func generated(t *testing.T, rowSize int) *sstable.Table {
	t.Helper()
	v, err := version.ParseWritable("oa")
	if err != nil {
		t.Fatal(err)
	}
	res, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Partitions: testParts,
		PartitionSize: 1024, RowSize: rowSize, ChunkLength: 4096, Seed: testSeed, Keyspace: testKS, Table: testTable})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}

// The ring says c2 owns ranges c1 holds, but c2 never received them (it joined with tokens and
// no bootstrap). c1's cleanup drops nothing until c2 holds each partition with the same
// content, and then only the ranges c2 confirmed; a young ring and an unproven member with
// tokens refuse it outright. Move and decommission drop nothing on the node they run on.
func TestCleanupDropsOnlyWhatTheOwnersConfirm(t *testing.T) {
	tc := newTestCluster(t, "c1", "c2")
	rf1 := map[string]Replication{testKS: {Class: SimpleStrategy, ReplicationFactor: 1}}
	s1 := ring.SimpleStrategy{RF: 1}
	truth, other := generated(t, 512), generated(t, 256) // the same keys, other content
	whole := token.RangeSet{{Left: token.Murmur3.MinToken(), Right: token.Murmur3.MinToken()}}
	d1, d2 := t.TempDir(), t.TempDir()
	splitInto(t, truth, whole, d1)
	keys := gen.Keys(testSeed, testParts)

	cfg := tc.config("c1", d1)
	cfg.Keyspaces, cfg.InitialTokens = rf1, []int64{0}
	c1 := tc.start(cfg).node
	cfg = tc.config("c2", d2, c1.GossipAddr())
	cfg.Keyspaces, cfg.InitialTokens = rf1, []int64{-6e18, 6e18}
	c2 := tc.start(cfg).node
	both := map[string]ring.NodeState{"c1": ring.Normal, "c2": ring.Normal}
	for _, n := range []*Node{c1, c2} {
		waitUntil(t, 20*time.Second, n.cfg.Name+" sees c1 and c2", func() bool { return sees(n, both) })
	}
	r := ringOf(t, c1)
	mine, theirs := ring.ReplicaRanges(r, s1, "c1"), ring.ReplicaRanges(r, s1, "c2")
	held := func(n *Node) int { return len(heldKeys(t, n)) }
	if got := held(c1); got != testParts {
		t.Fatalf("c1 holds %d keys, want %d", got, testParts)
	}

	// (c) A ring younger than the settle period is not acted on.
	c := c1.cluster.Load()
	c.ringMu.Lock()
	c.settle, c.settleWait = time.Hour, 0
	c.ringMu.Unlock()
	refusedCleanup(t, cleanupOn(t, c1), ErrRingUnsettled, "cleanup waits for it to settle", "3600 s")
	c.ringMu.Lock()
	c.settle, c.settleWait = time.Second, time.Second
	c.ringMu.Unlock()
	if got := held(c1); got != testParts {
		t.Fatalf("after the refused cleanup c1 holds %d keys", got)
	}

	// (a) c2 holds nothing: every range is refused, every partition stays.
	st := cleanupOn(t, c1)
	refusedCleanup(t, st, ErrUnconfirmed, "c2: lacks")
	if len(st.CleanupChecks) != 1 || st.CleanupChecks[0].Confirmed != "" || len(st.CleanupChecks[0].Refused) == 0 {
		t.Fatalf("checks %+v", st.CleanupChecks)
	}
	for _, f := range st.CleanupChecks[0].Refused {
		if f.Owner != "c2" || !strings.Contains(st.Error, f.Range) && len(st.CleanupChecks[0].Refused) <= ops.MaxListedProblems {
			t.Errorf("refusal %+v (error %s)", f, st.Error)
		}
	}
	if got := held(c1); got != testParts {
		t.Fatalf("after the refused cleanup c1 holds %d keys", got)
	}

	// c2 holds the keys, with other content: still refused.
	splitInto(t, other, theirs, d2)
	refusedCleanup(t, cleanupOn(t, c1), ErrUnconfirmed, "c2: holds other content")
	if got := held(c1); got != testParts {
		t.Fatalf("after the refused cleanup c1 holds %d keys", got)
	}

	// c2 receives the true copies of all its ranges but the first: c1 drops the confirmed
	// ranges (c2's copies include c1's) and keeps the other.
	withheld := theirs[0]
	splitInto(t, truth, theirs[1:], d2)
	st = cleanupOn(t, c1)
	refusedCleanup(t, st, ErrUnconfirmed, "c2: holds other content", withheld.String())
	if len(st.CleanupChecks) != 1 || st.CleanupChecks[0].Confirmed == "" {
		t.Fatalf("checks %+v", st.CleanupChecks)
	}
	var kept token.RangeSet
	for _, f := range st.CleanupChecks[0].Refused {
		rs, err := token.ParseRanges(token.Murmur3, f.Range)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, rs...)
	}
	h1 := heldKeys(t, c1)
	dropped := 0
	for _, k := range keys {
		tok := token.Murmur3.Token(k)
		switch {
		case h1[string(k)] == 1:
			if !mine.Contains(tok) && !kept.Contains(tok) {
				t.Errorf("key %s: kept outside c1's and the refused ranges", k)
			}
		case !theirs[1:].Contains(tok):
			t.Errorf("key %s (token %v): dropped without a confirmed copy", k, tok)
		default:
			dropped++
		}
		if withheld.Contains(tok) && h1[string(k)] != 1 {
			t.Errorf("key %s of the withheld range is gone from c1", k)
		}
	}
	if dropped == 0 {
		t.Fatal("nothing dropped in the confirmed ranges")
	}

	// (d) A member about without a proven identity (here an impostor announcing c1's stream
	// address) refuses the cleanup outright.
	key, err := LoadClusterKey(tc.key)
	if err != nil {
		t.Fatal(err)
	}
	meta := gossip.NodeMeta{StreamAddr: c1.StreamAddr().String(), DC: DefaultDC, Rack: DefaultRack}
	imp, err := gossip.New(gossip.Config{Name: "impostor", BindAddr: "127.0.0.1:0", Seeds: []string{c1.GossipAddr()},
		ClusterKey: key, Label: DefaultClusterLabel, Log: zerolog.Nop(), Meta: meta}.ForTests())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := imp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer imp.Shutdown()
	impostor := func(pred func(m gossip.Member) bool) func() bool {
		return func() bool {
			m, ok := c.members()["impostor"]
			return ok && pred(m)
		}
	}
	waitUntil(t, 20*time.Second, "c1 to refuse the impostor", impostor(func(m gossip.Member) bool {
		return m.Identity == gossip.IdentityRefused
	}))
	before := held(c1)
	refusedCleanup(t, cleanupOn(t, c1), ErrUnprovenMembers, "impostor (refused")
	if got := held(c1); got != before {
		t.Fatalf("c1 held %d keys before the refused cleanup, %d after", before, got)
	}
	imp.Leave(5 * time.Second)
	imp.Shutdown()
	waitUntil(t, 20*time.Second, "c1 to see the impostor gone", impostor(func(m gossip.Member) bool { return m.Liveness != gossip.StateAlive }))

	// c2 receives the withheld range: the cleanup completes and c1 holds exactly its ranges.
	splitInto(t, truth, token.RangeSet{withheld}, d2)
	st = cleanupOn(t, c1)
	if st.State != OpComplete || len(st.CleanupChecks) != 1 || st.CleanupChecks[0].Confirmed == "" || len(st.CleanupChecks[0].Refused) != 0 {
		t.Fatalf("cleanup: %s: %s: checks %+v", st.State, st.Error, st.CleanupChecks)
	}
	h1 = heldKeys(t, c1)
	for _, k := range keys {
		if tok := token.Murmur3.Token(k); (h1[string(k)] == 1) != mine.Contains(tok) {
			t.Errorf("key %s (token %v): held by c1 %d times, c1 replicates it: %v", k, tok, h1[string(k)], mine.Contains(tok))
		}
	}

	// Move: c1 fetches what it gains and keeps everything it had.
	before1 := heldKeys(t, c1)
	s, err := c1.StartMove(3e18)
	if err != nil {
		t.Fatal(err)
	}
	waitOp(t, c1, s.ID)
	for k := range before1 {
		if heldKeys(t, c1)[k] == 0 {
			t.Fatalf("the move dropped key %s on c1", k)
		}
	}
	for _, n := range []*Node{c1, c2} {
		waitUntil(t, 20*time.Second, n.cfg.Name+" sees c1 at its new token", func() bool {
			m, _ := ringOf(t, n).Member("c1")
			return sees(n, both) && len(m.Tokens) == 1 && m.Tokens[0].Long == 3e18
		})
	}
	// (b) c2 gave up (0, 3e18] to c1, which fetched it: c2's cleanup is confirmed by c1.
	st = cleanupOn(t, c2)
	if st.State != OpComplete || len(st.CleanupChecks) != 1 || st.CleanupChecks[0].Confirmed == "" {
		t.Fatalf("c2's cleanup: %s: %s: checks %+v", st.State, st.Error, st.CleanupChecks)
	}
	gained := token.Range{Left: tk(0), Right: tk(3e18)}
	h2 := heldKeys(t, c2)
	for _, k := range keys {
		if gained.Contains(token.Murmur3.Token(k)) && h2[string(k)] != 0 {
			t.Errorf("key %s of c1's new range still on c2", k)
		}
	}

	// Decommission: c2 hands its ranges to c1 and keeps its data.
	before2 := heldKeys(t, c2)
	s, err = c2.StartDecommission()
	if err != nil {
		t.Fatal(err)
	}
	waitOp(t, c2, s.ID)
	if after := heldKeys(t, c2); !maps.Equal(after, before2) {
		t.Fatalf("decommission changed c2's data: %d keys before, %d after", len(before2), len(after))
	}
	h1 = heldKeys(t, c1)
	for _, k := range keys {
		if h1[string(k)] == 0 {
			t.Errorf("key %s is not on c1 after c2 left", k)
		}
	}
}
