package interop

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/catalog"
)

// liveNode is one Cassandra node of TestCassandraSidecarRebuild.
type liveNode struct {
	host, dc, dir string
	jmx           int
}

func (n liveNode) data() string { return filepath.Join(n.dir, "data") }

func (n liveNode) nodetool() []string { return nodetoolArgv(n.jmx) }

// session is a CQL session through node n alone, at LOCAL_ONE in its DC.
func (n liveNode) session(t *testing.T, native int) *gocql.Session {
	t.Helper()
	cc := gocql.NewCluster(fmt.Sprintf("%s:%d", n.host, native))
	cc.Timeout, cc.ConnectTimeout = 30*time.Second, 30*time.Second
	cc.Consistency = gocql.LocalOne
	cc.HostFilter = gocql.WhiteListHostFilter(n.host)
	cc.PoolConfig.HostSelectionPolicy = gocql.DCAwareRoundRobinPolicy(n.dc)
	return cqlSession(t, cc)
}

// rows reads every row of rebuild.t through s: pk/ck → v.
func rows(t *testing.T, s *gocql.Session) map[[2]int]string {
	t.Helper()
	out, err := readRows(s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readRows is rows, the query's error returned (a node that has not learned the schema yet).
func readRows(s *gocql.Session) (map[[2]int]string, error) {
	out := map[[2]int]string{}
	it := s.Query(`SELECT pk, ck, v FROM rebuild.t`).PageSize(2000).Iter()
	var pk, ck int
	var v string
	for it.Scan(&pk, &ck, &v) {
		out[[2]int{pk, ck}] = v
	}
	return out, it.Close()
}

// sidecar runs `sluice run` for node n with gossip; it returns the admin address and the
// admin token file.
func (n liveNode) sidecar(t *testing.T, name, tlsDir, keyFile, gossip, seed string, native int) (admin, token string) {
	t.Helper()
	return n.sidecarOn(t, n.data(), name, tlsDir, keyFile, gossip, seed, native)
}

// sidecarOn is sidecar with the sidecar's data_file_directories given (a list's inside).
func (n liveNode) sidecarOn(t *testing.T, data, name, tlsDir, keyFile, gossip, seed string, native int) (admin, token string) {
	t.Helper()
	admin = fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	token = filepath.Join(n.dir, "admin.token")
	startSidecar(t, n.dir, sidecarConf{Name: name, TLSDir: tlsDir, Stream: fmt.Sprintf("127.0.0.1:%d", freePort(t, "udp")), Admin: admin,
		Token: token, Gossip: gossip, Seed: seed, KeyFile: keyFile, Host: n.host, Native: native, Data: data,
		NodetoolJSON: nodetoolJSON(n.jmx), Staging: filepath.Join(n.dir, "staging"), Refresh: "2s"}, nil)
	return admin, token
}

// sidecarCluster is the sidecars of a test's nodes, side1, side2... gossiping with side1 (a
// cluster key and node certificates of one CA, under root).
type sidecarCluster struct {
	tlsDir, keyFile, seed string
	native                int
	admins, tokens        []string
}

func newSidecarCluster(t *testing.T, root string, native int) *sidecarCluster {
	t.Helper()
	c := &sidecarCluster{tlsDir: filepath.Join(root, "tls"), keyFile: filepath.Join(root, "cluster.key"), native: native,
		seed: fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))}
	if _, err := sluice(t, "cert", "ca", "--dir", c.tlsDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.keyFile, []byte("00112233445566778899aabbccddeeff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// add starts the next sidecar, beside node n, with data as its data_file_directories (a
// list's inside); it returns its admin address and token file.
func (c *sidecarCluster) add(t *testing.T, n liveNode, data string) (admin, token string) {
	t.Helper()
	name := fmt.Sprintf("side%d", len(c.admins)+1)
	if _, err := sluice(t, "cert", "node", "--dir", c.tlsDir, "--name", name); err != nil {
		t.Fatal(err)
	}
	g := c.seed
	if len(c.admins) > 0 {
		g = fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	}
	admin, token = n.sidecarOn(t, data, name, c.tlsDir, c.keyFile, g, c.seed, c.native)
	c.admins, c.tokens = append(c.admins, admin), append(c.tokens, token)
	return admin, token
}

// waitSidecarsUp waits (2 minutes at most) until sidecar i (admin address and token file)
// sees want nodes UP with their sidecars up, and returns its ring. The token stays the
// environment's for the sluice commands after.
func waitSidecarsUp(t *testing.T, i int, admin, token string, want int) adminapi.CassandraRing {
	t.Helper()
	t.Setenv(adminapi.TokenEnv, token)
	var r adminapi.CassandraRing
	for deadline := time.Now().Add(2 * time.Minute); ; {
		up := 0
		if out, err := sluice(t, "cassandra", "ring", "--json", "--admin", admin); err == nil && json.Unmarshal([]byte(out), &r) == nil {
			for _, cn := range r.Nodes {
				if cn.State == "UP" && cn.Sidecar == adminapi.SidecarUp {
					up++
				}
			}
		}
		if up == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("side%d sees %d nodes UP with their sidecars up, want %d: %+v", i+1, up, want, r)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// The sidecar's rebuild against live Cassandra 5.0 nodes: node 1 (127.0.0.1) in dc1 holds a
// keyspace replicated {dc1: 1} (rows written over CQL, flushed); node 2 (127.0.0.2) joined dc2
// without bootstrapping. The keyspace is altered to {dc1: 1, dc2: 1}: node 2 now replicates
// every range and holds nothing (LOCAL_ONE reads through it return no row). `sluice cassandra
// rebuild dc1` against node 2's sidecar fetches every range from node 1's sidecar (the two
// sidecars gossip with a cluster key and node certificates) into node 2's staging directory
// and imports it with nodetool import; then every row read at LOCAL_ONE through node 2 equals
// what was written. Then `sluice cassandra load` (testSidecarLoad). Unless
// SLUICE_SIDECAR_NODETOOL_REBUILD=0, a third node (127.0.0.3, dc3, also replicated, with its
// own sidecar) takes part in the load and runs nodetool rebuild -- dc1 over the same data,
// and sstableloader loads the load's sstables again, for the ratios.
func TestCassandraSidecarRebuild(t *testing.T) {
	need(t)
	if os.Getenv("SLUICE_INTEROP_LIVE") == "0" {
		t.Skip("not-run: SLUICE_INTEROP_LIVE=0")
	}
	begin := time.Now()
	root := filepath.Join(work, "sidecar-rebuild")
	storage, native := freePort(t, "tcp"), freePort(t, "tcp")
	nodes := []liveNode{{host: "127.0.0.1", dc: "dc1"}, {host: "127.0.0.2", dc: "dc2"}}
	sideBySide := os.Getenv("SLUICE_SIDECAR_NODETOOL_REBUILD") != "0"
	if sideBySide {
		nodes = append(nodes, liveNode{host: "127.0.0.3", dc: "dc3"})
	}
	for i := range nodes {
		n := &nodes[i]
		n.dir, n.jmx = filepath.Join(root, fmt.Sprintf("node%d", i+1)), freePort(t, "tcp")
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		bootstrap := i == 0
		yaml := cassandraConf{Cluster: "sluice-rebuild", Dir: n.dir, Host: n.host, Storage: storage, Native: native,
			Snitch: "GossipingPropertyFileSnitch", Bootstrap: &bootstrap}.yaml()
		startCassandraOn(t, n.dir, yaml, n.host, native, n.jmx, rackDC(t, n.dir, n.dc, "rack1"))
	}
	n1, n2 := nodes[0], nodes[1]
	c1 := n1.session(t, native)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var peers int
		if err := c1.Query(`SELECT COUNT(*) FROM system.peers_v2`).Scan(&peers); err != nil {
			t.Fatal(err)
		}
		if peers == len(nodes)-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 1 lists %d peers, want %d", peers, len(nodes)-1)
		}
		time.Sleep(time.Second)
	}
	t.Logf("%d Cassandra nodes up in %.1fs", len(nodes), time.Since(begin).Seconds())

	// The data, in dc1 only.
	parts, perPart, size := 2000, 5, 512
	if v, err := strconv.Atoi(os.Getenv("SLUICE_SIDECAR_REBUILD_PARTITIONS")); err == nil && v > 0 {
		parts = v
	}
	for _, stmt := range []string{
		`CREATE KEYSPACE rebuild WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}`,
		`CREATE TABLE rebuild.t (pk int, ck int, v text, PRIMARY KEY (pk, ck))`,
	} {
		if err := c1.Query(stmt).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	value := func(pk, ck int) string { // incompressible-ish: LZ4 keeps ~3/4 of it
		b := make([]byte, size*3/4)
		_, _ = rand.NewChaCha8([32]byte{byte(pk), byte(pk >> 8), byte(pk >> 16), byte(ck)}).Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	writeStart := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pk := w; pk < parts; pk += 8 {
				b := c1.NewBatch(gocql.UnloggedBatch)
				for ck := range perPart {
					b.Query(`INSERT INTO rebuild.t (pk, ck, v) VALUES (?, ?, ?)`, pk, ck, value(pk, ck))
				}
				if err := c1.ExecuteBatch(b); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, n1.nodetool()[0], append(n1.nodetool()[1:], "flush", "rebuild")...); err != nil {
		t.Fatal(err)
	}
	want := rows(t, c1)
	if len(want) != parts*perPart {
		t.Fatalf("node 1 returns %d rows, %d written", len(want), parts*perPart)
	}
	srcDir := dataFiles(t, filepath.Join(n1.data(), "rebuild"))
	var srcBytes int64
	for _, f := range srcDir {
		if fi, err := os.Stat(f); err == nil {
			srcBytes += fi.Size()
		}
	}
	t.Logf("wrote %d rows (%d partitions) in %.1fs; node 1 flushed %d sstable(s), %d Data.db bytes", len(want), parts,
		time.Since(writeStart).Seconds(), len(srcDir), srcBytes)

	// dc2 (and dc3) added to the replication: the new replicas hold nothing.
	alter := `ALTER KEYSPACE rebuild WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1, 'dc2': 1`
	if sideBySide {
		alter += `, 'dc3': 1`
	}
	if err := c1.Query(alter + `}`).Exec(); err != nil {
		t.Fatal(err)
	}
	c2 := n2.session(t, native)
	if got := rows(t, c2); len(got) != 0 {
		t.Fatalf("node 2 returns %d rows before the rebuild", len(got))
	}

	// A sidecar per node, gossiping (with a cluster key and node certificates of one CA); every
	// sidecar sees every node UP with its sidecar up.
	sides := newSidecarCluster(t, root, native)
	for _, n := range nodes {
		sides.add(t, n, n.data())
	}
	admins, tokens := sides.admins, sides.tokens
	for i := range nodes {
		waitSidecarsUp(t, i, admins[i], tokens[i], len(nodes))
	}
	admin2 := admins[1]
	t.Setenv(adminapi.TokenEnv, tokens[1])

	// The rebuild.
	rbStart := time.Now()
	out, err := sluice(t, "cassandra", "rebuild", "dc1", "--admin", admin2, "--json")
	wall := time.Since(rbStart)
	var res adminapi.CassandraRebuildResult
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil || err != nil {
		t.Fatalf("sluice cassandra rebuild: %v %v\n%s", err, jerr, out)
	}
	if res.State != adminapi.OpComplete || len(res.Failed) != 0 || res.SSTables == 0 || len(res.Imported) != 1 || res.Imported[0].From != "side1" {
		t.Fatalf("rebuild: %+v", res)
	}
	got := rows(t, c2)
	missing, differ := 0, 0
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing++
		case g != v:
			differ++
		}
	}
	if missing != 0 || differ != 0 || len(got) != len(want) {
		t.Errorf("after the rebuild node 2 returns %d rows at LOCAL_ONE: %d of %d missing, %d differ", len(got), missing, len(want), differ)
	}
	if ents, _ := os.ReadDir(filepath.Join(n2.dir, "staging")); len(ents) != 0 {
		t.Errorf("node 2's staging directory keeps %d entries", len(ents))
	}
	if holds, _ := filepath.Glob(filepath.Join(n1.data(), "rebuild", "t-*", catalog.SnapshotsDir, catalog.HoldPrefix+"*")); len(holds) != 0 {
		t.Errorf("holds left in node 1's table directory: %v", holds)
	}
	t.Logf("sluice cassandra rebuild dc1: %d range(s), %d sstable(s), %d bytes received and imported; op %.2fs, command %.2fs; "+
		"node 2 returns all %d rows at LOCAL_ONE", res.Ranges, res.SSTables, res.BytesReceived, res.WallSeconds, wall.Seconds(), len(got))

	testSidecarLoad(t, nodes, native, storage, admins[0], tokens[0], sideBySide)
	if !sideBySide {
		return
	}
	n3 := nodes[2]
	ntStart := time.Now()
	if out, err := run(t, n3.nodetool()[0], append(n3.nodetool()[1:], "rebuild", "--keyspace", "rebuild", "--", "dc1")...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ntWall := time.Since(ntStart)
	got3 := rows(t, n3.session(t, native))
	if len(got3) != len(want) {
		t.Errorf("after nodetool rebuild node 3 returns %d rows, want %d", len(got3), len(want))
	}
	t.Logf("nodetool rebuild --keyspace rebuild -- dc1 (node 3): %.2fs, %d rows; sluice cassandra rebuild / nodetool rebuild = %.2f; whole test %.1fs",
		ntWall.Seconds(), len(got3), wall.Seconds()/ntWall.Seconds(), time.Since(begin).Seconds())
}

// testSidecarLoad: sstables sluice writes (BIG oa and BTI da) for a keyspace replicated once
// over every node (SimpleStrategy, RF 1: each node owns a third of the ring) are loaded with
// `sluice cassandra load` through node 1's sidecar: each node's sidecar fetches the ranges its
// node owns from the load and imports them (nodetool import checks the node owns every
// token). Then SELECT COUNT(*) returns every row, each node's directory holds sstables, and the
// directory loaded from is as it was.
//
// With sideBySide, Cassandra's sstableloader (BulkLoader) loads the same sstables into a second
// table of the same schema, for the ratio; its failure is logged, not the test's.
func testSidecarLoad(t *testing.T, nodes []liveNode, native, storage int, admin, token string, sideBySide bool) {
	t.Helper()
	c1 := nodes[0].session(t, native)
	for _, stmt := range []string{
		`CREATE KEYSPACE loaded WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE loaded.stress (pk text, ck text, value blob, PRIMARY KEY (pk, ck))`,
	} {
		if err := c1.Query(stmt).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	genRoot := filepath.Join(nodes[0].dir, "to-load")
	var wantRows int64
	for i, v := range []string{"oa", "da"} {
		out, err := sluice(t, "sstable", "gen", "--out", genRoot, "--keyspace", "loaded", "--table", "stress", "--version", v,
			"--partitions", "1500", "--partition-size", "4KiB", "--row-size", "1KiB", "--seed", strconv.Itoa(500+i), "--json")
		if err != nil {
			t.Fatal(err)
		}
		var g struct{ Rows int64 }
		if err := json.Unmarshal([]byte(out), &g); err != nil {
			t.Fatal(err)
		}
		wantRows += g.Rows
	}
	before := dataFiles(t, genRoot)
	t.Setenv(adminapi.TokenEnv, token)
	start := time.Now()
	out, err := sluice(t, "cassandra", "load", genRoot, "--admin", admin, "--json")
	wall := time.Since(start)
	var res adminapi.CassandraRebuildResult
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil || err != nil {
		t.Fatalf("sluice cassandra load: %v %v\n%s", err, jerr, out)
	}
	if res.State != adminapi.OpComplete || len(res.Failed) != 0 || len(res.Imported) != len(nodes) {
		t.Fatalf("load: %+v", res)
	}
	var count int64
	if err := c1.Query(`SELECT COUNT(*) FROM loaded.stress`).Consistency(gocql.One).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != wantRows {
		t.Errorf("SELECT COUNT(*) after the load: %d, sluice wrote %d rows", count, wantRows)
	}
	per := make([]int, len(nodes))
	for i, n := range nodes {
		per[i] = len(dataFiles(t, filepath.Join(n.data(), "loaded")))
		if per[i] == 0 {
			t.Errorf("node %d holds no sstable of the load", i+1)
		}
		// A replica keeps its record of the loads it imported (sluice-load-received.json), for
		// resumes; nothing else stays.
		ents, _ := os.ReadDir(filepath.Join(n.dir, "staging"))
		ents = slices.DeleteFunc(ents, func(e os.DirEntry) bool { return e.Name() == "sluice-load-received.json" })
		if len(ents) != 0 {
			t.Errorf("node %d's staging directory keeps %d entries", i+1, len(ents))
		}
	}
	if after := dataFiles(t, genRoot); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("the loaded directory changed: %v, was %v", after, before)
	}
	t.Logf("sluice cassandra load: %d rows (2 sstables) to %d nodes (RF 1, SimpleStrategy): %d range(s), %d sstable(s) imported (per node %v), %d bytes; op %.2fs, command %.2fs; SELECT COUNT(*) = %d",
		wantRows, len(nodes), res.Ranges, res.SSTables, per, res.BytesReceived, res.WallSeconds, wall.Seconds(), count)
	if !sideBySide {
		return
	}
	if err := c1.Query(`CREATE TABLE loaded.stress2 (pk text, ck text, value blob, PRIMARY KEY (pk, ck))`).Exec(); err != nil {
		t.Fatal(err)
	}
	bulk := filepath.Join(nodes[0].dir, "bulk", "loaded", "stress2")
	copyTree(t, filepath.Dir(before[0]), bulk)
	start = time.Now()
	bout, err := run(t, filepath.Join(repo, "interop", "cassandra.sh"), "tool", "org.apache.cassandra.tools.BulkLoader",
		"-d", "127.0.0.1", "-p", strconv.Itoa(native), "-sp", strconv.Itoa(storage), "--no-progress", bulk)
	bwall := time.Since(start)
	if err != nil {
		t.Logf("sstableloader (BulkLoader) failed, no ratio: %v\n%s", err, tail(bout, 2000))
		return
	}
	var count2 int64
	if err := c1.Query(`SELECT COUNT(*) FROM loaded.stress2`).Consistency(gocql.One).Scan(&count2); err != nil {
		t.Fatal(err)
	}
	t.Logf("sstableloader (BulkLoader) of the same sstables: %.2fs, SELECT COUNT(*) = %d; sluice cassandra load / sstableloader = %.2f",
		bwall.Seconds(), count2, wall.Seconds()/bwall.Seconds())
}
