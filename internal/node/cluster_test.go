package node

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

const (
	testKS    = "sluice"
	testTable = "stress"
	testRF    = 2
	testSeed  = 42
	testParts = 400
)

// testCluster is the shared material of in-process cluster tests: a CA with a certificate per
// node and a cluster key.
type testCluster struct {
	t      *testing.T
	tlsDir string
	key    string
	nodes  map[string]*running
}

func newTestCluster(t *testing.T, names ...string) *testCluster {
	t.Helper()
	dir := t.TempDir()
	tc := &testCluster{t: t, tlsDir: filepath.Join(dir, "tls"), key: filepath.Join(dir, "cluster.key"), nodes: map[string]*running{}}
	if err := tlsx.WriteCA(tc.tlsDir, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := tlsx.WriteNode(tc.tlsDir, n, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, tc.key, "000102030405060708090a0b0c0d0e0f\n")
	return tc
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// config is a membership configuration on loopback with free ports.
func (tc *testCluster) config(name, dataDir string, seeds ...string) Config {
	return Config{
		Name: name, DataDirs: []string{dataDir}, TLSDir: tc.tlsDir,
		StreamAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0",
		Seeds: seeds, ClusterKeyFile: tc.key, NumTokens: 4,
		Keyspaces: map[string]Replication{testKS: {Class: SimpleStrategy, ReplicationFactor: testRF}},
	}
}

// start runs a node and waits until it has joined gossip.
func (tc *testCluster) start(cfg Config) *running {
	tc.t.Helper()
	r := start(tc.t, Options{Config: cfg, Logger: zerolog.Nop(), NewStreamServer: QUICStreamServer,
		TuneGossip: gossip.Config.ForTests, ShutdownTimeout: 5 * time.Second})
	tc.nodes[cfg.Name] = r
	waitUntil(tc.t, 20*time.Second, cfg.Name+" joined gossip", func() bool { return r.node.GossipAddr() != "" })
	return r
}

// waitUntil polls pred until it holds or the deadline passes.
func waitUntil(t *testing.T, d time.Duration, what string, pred func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !pred() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitOp waits for an operation to finish and fails the test unless it completed.
func waitOp(t *testing.T, n *Node, id int) OpStatus {
	t.Helper()
	last := finishOp(t, n, id)
	if last.State != OpComplete {
		t.Fatalf("%s on %s: %s: %s (transfers %+v)", last.Kind, n.cfg.Name, last.State, last.Error, last.Transfers)
	}
	return last
}

// transient is how an operation says it refused to act for a moment of the membership: a
// member it believes down (a peer down verdict ends the sessions with it) or that has yet to
// prove itself again, or a ring that changed under it (for which it says "run it again").
var transient = regexp.MustCompile(`member "[^"]+" (is (dead|suspect)|has not proven its identity)|member identities not yet proven|node: peer down|the ring has not settled`)

// settled reports whether every one of nodes sees every other one alive and builds its ring.
func settled(nodes ...*Node) bool {
	for _, obs := range nodes {
		c := obs.cluster.Load()
		if c == nil {
			return false
		}
		if _, err := c.g.Ring(); err != nil {
			return false
		}
		alive := map[string]bool{}
		for _, m := range c.g.Members() {
			alive[m.Name] = m.Liveness == gossip.StateAlive
		}
		for _, n := range nodes {
			if n != obs && !alive[n.cfg.Name] {
				return false
			}
		}
	}
	return true
}

// opRetried waits for operation id on n and returns every attempt's status, the completed one
// last. The in-process clusters run gossip's failure detector at test speed
// (gossip.Config.ForTests: a probe unanswered within 100 ms starts a suspicion): on a loaded
// machine under the race detector a live node can miss that and be declared dead until it
// refutes, and an operation rightly refuses to act without a member it believes down, or on
// a ring that changed under it (transient). Such a failure is retried as an operator would:
// once every one of nodes sees every other alive and builds its ring again (settled), retry
// starts the operation anew (three times at most). Any other failure fails the test.
func opRetried(t *testing.T, n *Node, id int, nodes []*Node, retry func() (OpStatus, error)) []OpStatus {
	t.Helper()
	var attempts []OpStatus
	for {
		st := finishOp(t, n, id)
		attempts = append(attempts, st)
		if st.State == OpComplete {
			return attempts
		}
		if len(attempts) > 3 || !transient.MatchString(st.Error) {
			t.Fatalf("%s on %s (attempt %d): %s: %s (transfers %+v)", st.Kind, n.cfg.Name, len(attempts), st.State, st.Error, st.Transfers)
		}
		t.Logf("%s on %s refused for a moment of the membership; retrying once it has settled: %s", st.Kind, n.cfg.Name, st.Error)
		waitUntil(t, 30*time.Second, "every node to see every member alive and build its ring", func() bool { return settled(nodes...) })
		next, err := retry()
		if err != nil {
			t.Fatalf("retrying %s on %s: %v", st.Kind, n.cfg.Name, err)
		}
		id = next.ID
	}
}

// cleanupAll runs a cleanup (req) on each of nodes in turn, through opRetried over the
// cluster's members, and checks that every attempt cut each parent into one child at most.
func cleanupAll(t *testing.T, req CleanupRequest, cluster []*Node, nodes ...*Node) {
	t.Helper()
	for _, n := range nodes {
		s, err := n.StartCleanup(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range opRetried(t, n, s.ID, cluster, func() (OpStatus, error) { return n.StartCleanup(req) }) {
			checkCleanupOnePerParent(t, st)
		}
	}
}

// ringOf is the ring as node n sees it, once it builds one: a member that was believed dead
// for a moment proves itself again before its tokens count (see opRetried).
func ringOf(t *testing.T, n *Node) ring.Ring {
	t.Helper()
	c := n.cluster.Load()
	if c == nil {
		t.Fatalf("%s has no membership", n.cfg.Name)
	}
	var r ring.Ring
	var err error
	waitUntil(t, 20*time.Second, n.cfg.Name+"'s ring", func() bool {
		r, err = c.g.Ring()
		return err == nil
	})
	return r
}

// sees reports whether n's ring view has exactly the named members, each with the state.
func sees(n *Node, want map[string]ring.NodeState) bool {
	c := n.cluster.Load()
	if c == nil {
		return false
	}
	r, err := c.g.Ring()
	if err != nil {
		return false
	}
	ms := r.Members()
	if len(ms) != len(want) {
		return false
	}
	for _, m := range ms {
		if want[m.Node.Name] != m.State {
			return false
		}
	}
	return true
}

// heldKeys returns the partition keys in node's live sstables of every table.
func heldKeys(t *testing.T, n *Node) map[string]int {
	t.Helper()
	dirs, err := n.catalog.TableDirs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, td := range dirs {
		live, err := catalog.ListLive(td.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range live {
			tb, err := sstable.Open(s.Desc.Prefix())
			if err != nil {
				t.Fatal(err)
			}
			err = tb.ScanPartitions(func(p *sstable.Partition) error {
				out[string(p.Key)]++
				return nil
			})
			tb.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// checkPlacement checks that every key is held by exactly its replicas on r, once each, among
// the given nodes.
func checkPlacement(t *testing.T, r ring.Ring, keys [][]byte, nodes ...*Node) {
	t.Helper()
	held := map[string]map[string]int{}
	for _, n := range nodes {
		held[n.cfg.Name] = heldKeys(t, n)
	}
	s := ring.SimpleStrategy{RF: testRF}
	bad := 0
	for _, k := range keys {
		var want, got []string
		for _, rep := range s.Replicas(r, token.Murmur3.Token(k)) {
			want = append(want, rep.Name)
		}
		for _, n := range nodes {
			switch held[n.cfg.Name][string(k)] {
			case 0:
			case 1:
				got = append(got, n.cfg.Name)
			default:
				t.Errorf("key %s held %d times by %s", k, held[n.cfg.Name][string(k)], n.cfg.Name)
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(want, got) {
			bad++
			if bad <= 5 {
				t.Errorf("key %s (token %v): held by %v, replicas %v", k, token.Murmur3.Token(k), got, want)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d keys misplaced", bad, len(keys))
	}
}

// placeData writes one generated sstable's partitions to every node of r, each getting exactly
// the ranges it replicates, and returns the keys.
func placeData(t *testing.T, r ring.Ring, dataDirs map[string]string) [][]byte {
	t.Helper()
	v, err := version.ParseWritable("oa")
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	res, err := gen.Generate(context.Background(), src, gen.Options{Version: v, Partitions: testParts,
		PartitionSize: 1024, RowSize: 512, ChunkLength: 4096, Seed: testSeed, Keyspace: testKS, Table: testTable})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	for name, dir := range dataDirs {
		rs := ring.ReplicaRanges(r, ring.SimpleStrategy{RF: testRF}, name)
		if _, err := slice.Split(context.Background(), parent, rs, gen.TableDir(dir, testKS, testTable), slice.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	return gen.Keys(testSeed, testParts)
}

// startPlaced starts the named nodes with the given tokens, each holding exactly the
// generated partitions it replicates at RF 2, and waits until every one sees them all NORMAL.
// It returns the nodes in order and the generated keys.
func (tc *testCluster) startPlaced(t *testing.T, names []string, initial map[string][]int64) ([]*Node, [][]byte) {
	t.Helper()
	dirs := map[string]string{}
	var ms []ring.Member
	for _, name := range names {
		dirs[name] = t.TempDir()
		ts := make([]token.Token, 0, len(initial[name]))
		for _, v := range initial[name] {
			ts = append(ts, token.Token{Kind: token.KindMurmur3, Long: v})
		}
		ms = append(ms, ring.Member{Node: ring.Node{Name: name, DC: DefaultDC, Rack: DefaultRack}, State: ring.Normal, Tokens: ts})
	}
	r0, err := ring.NewRing(ms...)
	if err != nil {
		t.Fatal(err)
	}
	keys := placeData(t, r0, dirs)
	var nodes []*Node
	seed := ""
	for _, name := range names {
		cfg := tc.config(name, dirs[name])
		if seed != "" {
			cfg.Seeds = []string{seed}
		}
		cfg.InitialTokens = initial[name]
		nodes = append(nodes, tc.start(cfg).node)
		seed = nodes[0].GossipAddr()
	}
	normal := map[string]ring.NodeState{}
	for _, name := range names {
		normal[name] = ring.Normal
	}
	for _, n := range nodes {
		waitUntil(t, 20*time.Second, n.cfg.Name+" sees every node NORMAL", func() bool { return sees(n, normal) })
	}
	return nodes, keys
}

func tokensOf(seed uint64, n int) []int64 {
	return longsOf(ring.RandomTokens(rand.New(rand.NewPCG(seed, 1)), n))
}

// Three nodes hold data by ownership at RF 2; a fourth bootstraps and the others clean up;
// then one decommissions. After each step every key is on exactly its replicas of the ring.
func TestBootstrapCleanupAndDecommissionKeepEveryKeyOnExactlyItsReplicas(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2", "n3", "n4")
	initial := map[string][]int64{"n1": tokensOf(1, 4), "n2": tokensOf(2, 4), "n3": tokensOf(3, 4)}
	nodes, keys := tc.startPlaced(t, []string{"n1", "n2", "n3"}, initial)
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	seed := n1.GossipAddr()
	checkPlacement(t, ringOf(t, n1), keys, n1, n2, n3)

	// Bootstrap n4: it allocates tokens, fetches its ranges and becomes NORMAL.
	held := map[string]int{}
	for _, n := range nodes {
		held[n.cfg.Name] = countSSTables(t, n)
	}
	cfg := tc.config("n4", t.TempDir(), seed)
	cfg.Bootstrap = true
	n4 := tc.start(cfg).node
	var boot OpStatus
	waitUntil(t, 30*time.Second, "n4's bootstrap to start", func() bool {
		for _, o := range n4.Ops() {
			if o.Kind == OpBootstrap {
				boot = o
				return true
			}
		}
		return false
	})
	all := []*Node{n1, n2, n3, n4}
	attempts := opRetried(t, n4, boot.ID, all, n4.StartBootstrap)
	// A transfer's sstables, over the attempts: a retry finds what an earlier attempt installed
	// and completes that transfer with nothing more.
	installed := map[string]int{}
	for _, a := range attempts {
		for _, tr := range a.Transfers {
			if tr.State == OpComplete {
				installed[tr.From+" "+tr.Ranges] += tr.SSTables
			}
		}
	}
	final := attempts[len(attempts)-1].Transfers
	if len(final) == 0 {
		t.Fatal("bootstrap streamed nothing")
	}
	for _, tr := range final {
		n := installed[tr.From+" "+tr.Ranges]
		if tr.To != "n4" || n == 0 {
			t.Errorf("transfer %+v: want sstables installed on n4 (%d over %d attempts)", tr, n, len(attempts))
		}
		// At most one sstable per source sstable, however many ranges the transfer holds.
		if n > held[tr.From] {
			t.Errorf("transfer %+v installed %d sstables from %d on %s", tr, n, held[tr.From], tr.From)
		}
	}
	four := map[string]ring.NodeState{"n1": ring.Normal, "n2": ring.Normal, "n3": ring.Normal, "n4": ring.Normal}
	for _, n := range all {
		waitUntil(t, 20*time.Second, n.cfg.Name+" sees four NORMAL nodes", func() bool { return sees(n, four) })
	}
	if sessions := n4.Sessions(); len(sessions) == 0 {
		t.Error("n4's netstats shows none of its bootstrap sessions")
	}

	// Before cleanup the old nodes still hold what they gave up; cleanup drops exactly that.
	cleanupAll(t, CleanupRequest{}, all, n1, n2, n3)
	r4 := ringOf(t, n1)
	checkPlacement(t, r4, keys, all...)

	// Decommission n2: its ranges go to the nodes that take them over.
	s, err := n2.StartDecommission()
	if err != nil {
		t.Fatal(err)
	}
	for _, dec := range opRetried(t, n2, s.ID, all, n2.StartDecommission) {
		for _, tr := range dec.Transfers {
			if tr.From != "n2" {
				t.Errorf("transfer %+v: want n2 as the source", tr)
			}
		}
	}
	rest := map[string]ring.NodeState{"n1": ring.Normal, "n3": ring.Normal, "n4": ring.Normal}
	for _, n := range []*Node{n1, n3, n4} {
		waitUntil(t, 20*time.Second, n.cfg.Name+" sees n2 gone", func() bool { return sees(n, rest) })
	}
	if st, _ := n2.Status(); st.Ring == nil || st.Ring.State != ring.Left.String() {
		t.Errorf("n2's status after decommission: %+v", st.Ring)
	}
	checkPlacement(t, ringOf(t, n1), keys, n1, n3, n4)

	// A decommissioned node refuses to start again with its data.
	n2cfg := n2.Config()
	again, err := New(Options{Config: n2cfg, Logger: zerolog.Nop(), NewStreamServer: QUICStreamServer, TuneGossip: gossip.Config.ForTests})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := again.Run(ctx); !errors.Is(err, ErrDecommissioned) {
		t.Fatalf("restart of a decommissioned node: %v, want ErrDecommissioned", err)
	}
}

// Nodes with another cluster key or label never join: their gossip cannot read the cluster's.
func TestANodeWithAnotherClusterKeyOrLabelNeverJoins(t *testing.T) {
	tc := newTestCluster(t, "a", "b", "c", "d")
	n1 := tc.start(tc.config("a", t.TempDir())).node
	seed := n1.GossipAddr()

	other := filepath.Join(t.TempDir(), "other.key")
	writeFile(t, other, strings.Repeat("ff", 16))
	cfg := tc.config("b", t.TempDir(), seed)
	cfg.ClusterKeyFile = other
	bad := start(t, Options{Config: cfg, Logger: zerolog.Nop(), NewStreamServer: QUICStreamServer, TuneGossip: gossip.Config.ForTests})
	cfg = tc.config("d", t.TempDir(), seed)
	cfg.ClusterLabel = "another"
	badLabel := start(t, Options{Config: cfg, Logger: zerolog.Nop(), NewStreamServer: QUICStreamServer, TuneGossip: gossip.Config.ForTests})

	// A node with the right key joins meanwhile; the others are still outside after it did.
	good := tc.start(tc.config("c", t.TempDir(), seed)).node
	waitUntil(t, 20*time.Second, "a sees c", func() bool {
		return sees(n1, map[string]ring.NodeState{"a": ring.Normal, "c": ring.Normal}) && sees(good, map[string]ring.NodeState{"a": ring.Normal, "c": ring.Normal})
	})
	for _, m := range n1.cluster.Load().g.Members() {
		if m.Name == "b" || m.Name == "d" {
			t.Errorf("%s joined with the wrong key or label", m.Name)
		}
	}
	for _, r := range []*running{bad, badLabel} {
		if r.node.GossipAddr() != "" {
			t.Errorf("%s finished joining", r.node.cfg.Name)
		}
		if _, err := r.node.StartCleanup(CleanupRequest{}); !errors.Is(err, ErrNoMembership) {
			t.Errorf("%s: cleanup without membership: %v", r.node.cfg.Name, err)
		}
	}
}

// A peer declared down ends exactly the sessions registered under it, with ErrPeerDown.
func TestPeerDownCancelsOnlyThatPeersSessions(t *testing.T) {
	var p peerRegistry
	a1, rel1 := p.register(context.Background(), "a:1")
	a2, rel2 := p.register(context.Background(), "a:1")
	b, relB := p.register(context.Background(), "b:1")
	defer relB()
	if got := p.cancel("a:1"); got != 2 {
		t.Fatalf("cancelled %d sessions, want 2", got)
	}
	for _, ctx := range []context.Context{a1, a2} {
		if !errors.Is(context.Cause(ctx), ErrPeerDown) {
			t.Fatalf("cause %v, want ErrPeerDown", context.Cause(ctx))
		}
	}
	if b.Err() != nil {
		t.Fatal("another peer's session was cancelled")
	}
	rel1()
	rel2()
	if got := p.cancel("a:1"); got != 0 {
		t.Fatalf("released sessions cancelled again: %d", got)
	}
}

// Three single-token nodes at RF 2; one moves to a new token; after cleanup every key is on
// exactly its replicas of the new ring.
func TestMoveThenCleanupKeepsEveryKeyOnExactlyItsReplicas(t *testing.T) {
	tc := newTestCluster(t, "m1", "m2", "m3")
	names := []string{"m1", "m2", "m3"}
	initial := map[string][]int64{"m1": {-6e18}, "m2": {0}, "m3": {6e18}}
	nodes, keys := tc.startPlaced(t, names, initial)
	normal := map[string]ring.NodeState{"m1": ring.Normal, "m2": ring.Normal, "m3": ring.Normal}
	const target = int64(3e18)
	s, err := nodes[0].StartMove(target)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, mv := range opRetried(t, nodes[0], s.ID, nodes, func() (OpStatus, error) { return nodes[0].StartMove(target) }) {
		moved += len(mv.Transfers)
	}
	if moved == 0 {
		t.Fatal("move streamed nothing")
	}
	for _, n := range nodes {
		waitUntil(t, 20*time.Second, n.cfg.Name+" sees m1 at its new token", func() bool {
			if !sees(n, normal) {
				return false
			}
			m, _ := ringOf(t, n).Member("m1")
			return len(m.Tokens) == 1 && m.Tokens[0].Long == target
		})
	}
	cleanupAll(t, CleanupRequest{Keyspace: testKS}, nodes, nodes...)
	checkPlacement(t, ringOf(t, nodes[1]), keys, nodes...)
	if _, err := nodes[0].StartMove(target); err == nil {
		waitUntil(t, 10*time.Second, "the second move to finish", func() bool {
			ops := nodes[0].Ops()
			return ops[len(ops)-1].State != OpRunning
		})
		if ops := nodes[0].Ops(); ops[len(ops)-1].State != OpFailed {
			t.Fatal("a move to the node's own token succeeded")
		}
	}
}

// Import verifies a directory's sstables and installs copies under fresh generations; one
// damaged sstable refuses the whole import and installs nothing.
func TestImportAdoptsVerifiedSSTablesAndRefusesDamagedOnes(t *testing.T) {
	cfg := testConfig(t)
	r := start(t, Options{Config: cfg, Logger: zerolog.Nop()})
	n := r.node
	generate(t, cfg.DataDirs[0], "ks", "t", 1) // the table exists with generation 1
	src := t.TempDir()
	generate(t, src, "ks", "t", 2)
	srcDir := gen.TableDir(src, "ks", "t")

	s, err := n.StartImport(ImportRequest{Keyspace: "ks", Table: "t", Dir: srcDir})
	if err != nil {
		t.Fatal(err)
	}
	imp := waitOp(t, n, s.ID)
	if len(imp.Imported) != 1 || !strings.HasSuffix(imp.Imported[0].SSTable, "nb-2-big") || imp.Imported[0].Partitions != 20 {
		t.Fatalf("imported %+v", imp.Imported)
	}
	held := heldKeys(t, n)
	for _, seed := range []uint64{1, 2} {
		for _, k := range gen.Keys(seed, 20) {
			if held[string(k)] != 1 {
				t.Fatalf("key %s of seed %d held %d times", k, seed, held[string(k)])
			}
		}
	}
	if rep, err := sstable.Verify(imp.Imported[0].SSTable, sstable.VerifyOptions{Extended: true}); err != nil || !rep.OK {
		t.Fatalf("installed copy does not verify: %v %+v", err, rep)
	}

	// Damage one byte of Data.db in a second source: the import is refused.
	bad := t.TempDir()
	generate(t, bad, "ks", "t", 3)
	badDir := gen.TableDir(bad, "ks", "t")
	data := filepath.Join(badDir, "nb-1-big-Data.db")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = n.StartImport(ImportRequest{Keyspace: "ks", Table: "t", Dir: badDir})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the refused import to finish", func() bool {
		ops := n.Ops()
		return ops[len(ops)-1].State != OpRunning
	})
	ops := n.Ops()
	if o := ops[len(ops)-1]; o.State != OpFailed || !strings.Contains(o.Error, ErrImportRefused.Error()) || len(o.Imported) != 0 {
		t.Fatalf("damaged import: %+v", o)
	}
	if got := len(heldKeys(t, n)); got != 40 {
		t.Fatalf("after the refused import the node holds %d keys, want 40", got)
	}
}

// checkCleanupOnePerParent checks that cleanup turned each sstable into at most one: kept,
// dropped, or sliced into exactly one child.
func checkCleanupOnePerParent(t *testing.T, st OpStatus) {
	t.Helper()
	for _, c := range st.Cleanup {
		switch {
		case c.Action == CleanupSplit && len(c.Children) != 1:
			t.Errorf("cleanup of %s: %d children, want one", c.SSTable, len(c.Children))
		case c.Action != CleanupSplit && len(c.Children) != 0:
			t.Errorf("cleanup of %s (%s): %d children", c.SSTable, c.Action, len(c.Children))
		}
	}
}

// countSSTables counts the live sstables of the test table on n.
func countSSTables(t *testing.T, n *Node) int {
	t.Helper()
	ds, err := descriptor.List(gen.TableDir(n.cfg.DataDirs[0], testKS, testTable))
	if err != nil {
		t.Fatal(err)
	}
	return len(ds)
}
