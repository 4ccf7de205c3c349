package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicedb/sluice/internal/adminapi"
	cass "github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// A JBOD node and a replacement, on live Cassandra 5.0: node 1 (127.0.0.1, dc1, 16 vnodes)
// holds rebuild.t {dc1: 1} (rows over CQL, flushed); node 2 (127.0.0.2, dc2, no bootstrap)
// has two data_file_directories. The keyspace gains dc2: 1 and `sluice cassandra rebuild dc1`
// on node 2's sidecar fills it: every row at LOCAL_ONE through node 2, sstables in both data
// directories, each in the one Cassandra's disk boundaries (computed here from the ring, as
// the sidecar does) give its first token: Cassandra put every sstable where sluice staged it
// for. Then node 2 is killed, and a sidecar for node 3 (127.0.0.3, dc2), whose Cassandra has
// not started, runs `sluice cassandra replace 127.0.0.2 --into DIR --native <node 1>`: the
// ring read from node 1, node 2's ranges fetched from node 1's sidecar (the other replica)
// into node 3's data directory. Node 3 then starts on it with auto_bootstrap: false,
// replace_address_first_boot and allow_unsafe_replace: every row at LOCAL_ONE through node 3.
func TestCassandraSidecarJBODAndReplace(t *testing.T) {
	need(t)
	if os.Getenv("SLUICE_INTEROP_LIVE") == "0" {
		t.Skip("not-run: SLUICE_INTEROP_LIVE=0")
	}
	begin := time.Now()
	root := filepath.Join(work, "sidecar-jbod")
	os.RemoveAll(root)
	storage, native := freePort(t, "tcp"), freePort(t, "tcp")
	nodes := []liveNode{{host: "127.0.0.1", dc: "dc1"}, {host: "127.0.0.2", dc: "dc2"}, {host: "127.0.0.3", dc: "dc2"}}
	for i := range nodes {
		n := &nodes[i]
		n.dir, n.jmx = filepath.Join(root, fmt.Sprintf("node%d", i+1)), freePort(t, "tcp")
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	data2 := filepath.Join(n2.dir, "data2")
	yamlOf := func(n liveNode, bootstrap bool) (string, string) {
		return cassandraConf{Cluster: "sluice-jbod", Dir: n.dir, Host: n.host, Storage: storage, Native: native,
			Snitch: "GossipingPropertyFileSnitch", Bootstrap: &bootstrap}.yaml(), rackDC(t, n.dir, n.dc, "rack1")
	}
	y1, p1 := yamlOf(n1, true)
	startCassandraOn(t, n1.dir, y1, n1.host, native, n1.jmx, p1)
	y2, p2 := yamlOf(n2, false)
	y2 = strings.Replace(y2, "data_file_directories: ["+n2.data()+"]", "data_file_directories: ["+n2.data()+", "+data2+"]", 1)
	startCassandraOn(t, n2.dir, y2, n2.host, native, n2.jmx, p2)

	c1 := n1.session(t, native)
	waitPeers(t, c1, 1)
	parts, perPart := 2000, 5
	for _, stmt := range []string{
		`CREATE KEYSPACE rebuild WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}`,
		`CREATE TABLE rebuild.t (pk int, ck int, v text, PRIMARY KEY (pk, ck))`,
	} {
		if err := c1.Query(stmt).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	for pk := range parts {
		for ck := range perPart {
			if err := c1.Query(`INSERT INTO rebuild.t (pk, ck, v) VALUES (?, ?, ?)`, pk, ck, fmt.Sprintf("v-%d-%d-%s", pk, ck, strings.Repeat("x", 200))).Exec(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := run(t, n1.nodetool()[0], append(n1.nodetool()[1:], "flush", "rebuild")...); err != nil {
		t.Fatal(err)
	}
	want := rows(t, c1)
	if err := c1.Query(`ALTER KEYSPACE rebuild WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1, 'dc2': 1}`).Exec(); err != nil {
		t.Fatal(err)
	}

	sides := newSidecarCluster(t, root, native)
	sides.add(t, n1, n1.data())
	sides.add(t, n2, n2.data()+", "+data2) // the sidecar's data directories are Cassandra's two, in its order
	admins, tokens := sides.admins, sides.tokens
	ringOf := func(i int, wantUp int) adminapi.CassandraRing {
		return waitSidecarsUp(t, i, admins[i], tokens[i], wantUp)
	}
	ringOf(0, 2)
	r2 := ringOf(1, 2)

	// The rebuild into the JBOD node.
	out, err := sluice(t, "cassandra", "rebuild", "dc1", "--admin", admins[1], "--json")
	var res adminapi.CassandraRebuildResult
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil || err != nil || res.State != adminapi.OpComplete || len(res.Failed) != 0 {
		t.Fatalf("sluice cassandra rebuild: %v %v\n%s", err, jerr, out)
	}
	s2 := n2.session(t, native)
	if got := rows(t, s2); !equalRows(got, want) {
		t.Errorf("after the rebuild node 2 returns %d rows at LOCAL_ONE, want the %d written", len(got), len(want))
	}
	s2.Close() // node 2 dies below
	bounds := diskBoundariesOf(t, r2, "rebuild")
	for d, dir := range []string{n2.data(), data2} {
		files := dataFiles(t, filepath.Join(dir, "rebuild"))
		if len(files) == 0 {
			t.Errorf("data directory %d (%s) received no sstable (boundaries %v)", d+1, dir, bounds)
		}
		for _, f := range files {
			tk, err := cass.FirstToken(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := cass.DiskFor(bounds, tk); got != d {
				t.Errorf("Cassandra put %s (first token %d) in data directory %d; sluice's boundaries %v say %d", f, tk, d+1, bounds, got+1)
			}
		}
		t.Logf("data directory %d: %d sstable(s)", d+1, len(files))
	}
	if ents, _ := os.ReadDir(filepath.Join(n2.dir, "staging")); len(ents) != 0 {
		t.Errorf("node 2's staging directory keeps %d entries", len(ents))
	}
	t.Logf("rebuild of the JBOD node: %d sstable(s), %d bytes; %.1fs into the test", res.SSTables, res.BytesReceived, time.Since(begin).Seconds())

	// Node 2 dies; its replacement's data directory is filled by node 1's sidecar.
	killCassandra(t, n2.dir)
	t.Setenv(adminapi.TokenEnv, tokens[0])
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var r adminapi.CassandraRing
		down := false
		if out, err := sluice(t, "cassandra", "ring", "--json", "--admin", admins[0]); err == nil && json.Unmarshal([]byte(out), &r) == nil {
			for _, cn := range r.Nodes {
				down = down || cn.Address == n2.host && cn.State != "UP"
			}
		}
		if down {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 1 does not see node 2 down: %+v", r)
		}
		time.Sleep(time.Second)
	}
	// The replacement's own sidecar, beside node 3 that has not started: it reads the ring from
	// node 1 (--native) and fills node 3's data directory.
	into := n3.data()
	if err := os.MkdirAll(into, 0o755); err != nil {
		t.Fatal(err)
	}
	admin3, token3 := sides.add(t, n3, into)
	t.Setenv(adminapi.TokenEnv, token3)
	var rp adminapi.CassandraRebuildResult
	rpStart := time.Now()
	for deadline := time.Now().Add(time.Minute); ; {
		out, err = sluice(t, "cassandra", "replace", n2.host, "--into", into, "--native", fmt.Sprintf("%s:%d", n1.host, native), "--admin", admin3, "--json")
		jerr := json.Unmarshal([]byte(out), &rp)
		if jerr == nil && err == nil && rp.State == adminapi.OpComplete && len(rp.Failed) == 0 && rp.SSTables > 0 {
			break
		}
		// Until side3 has proven side1 in gossip, the plan has no source: nothing was fetched.
		if time.Now().After(deadline) || rp.SSTables > 0 {
			t.Fatalf("sluice cassandra replace: %v %v\n%s", err, jerr, out)
		}
		time.Sleep(2 * time.Second)
		rpStart = time.Now()
	}
	if len(rp.Imported) == 0 || rp.Imported[0].From != "side1" {
		t.Errorf("replace sources: %+v", rp.Imported)
	}
	if left, _ := filepath.Glob(filepath.Join(into, ".sluice-replace-*")); len(left) != 0 {
		t.Errorf("the replace left %v", left)
	}
	t.Logf("replace: %d sstable(s), %d bytes into %s in %.1fs", rp.SSTables, rp.BytesReceived, into, time.Since(rpStart).Seconds())
	y3, p3 := yamlOf(n3, false)
	startCassandraOn(t, n3.dir, y3, n3.host, native, n3.jmx, p3,
		"-Dcassandra.replace_address_first_boot="+n2.host, "-Dcassandra.allow_unsafe_replace=true")
	c3 := n3.session(t, native)
	// The replacement learns the schema from its peers after it starts: until then the
	// keyspace does not exist for it, which is waited for like the rows.
	var got map[[2]int]string
	var rerr error
	for deadline := time.Now().Add(2 * time.Minute); ; {
		got, rerr = readRows(c3)
		if rerr == nil && equalRows(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if rerr != nil {
		t.Fatalf("the replacement's rows: %v", rerr)
	}
	if !equalRows(got, want) {
		t.Errorf("the replacement returns %d rows at LOCAL_ONE, want the %d written", len(got), len(want))
	}
	t.Logf("replacement node 3 returns all %d rows at LOCAL_ONE; whole test %.1fs", len(got), time.Since(begin).Seconds())
}

// killCassandra kills (SIGKILL) the Cassandra JVM this test started with storage directory
// dir: a node that dies.
func killCassandra(t *testing.T, dir string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), "-Dcassandra.storagedir="+dir) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("killing Cassandra %d: %v", pid, err)
		}
		t.Logf("killed Cassandra (pid %d, %s)", pid, dir)
		return
	}
	t.Fatalf("no Cassandra JVM with storage directory %s", dir)
}

// waitPeers waits until the node of c lists want peers.
func waitPeers(t *testing.T, c *gocql.Session, want int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var peers int
		if err := c.Query(`SELECT COUNT(*) FROM system.peers_v2`).Scan(&peers); err != nil {
			t.Fatal(err)
		}
		if peers == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node lists %d peers, want %d", peers, want)
		}
		time.Sleep(time.Second)
	}
}

func equalRows(a, b map[[2]int]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// diskBoundariesOf is what the sidecar computes for its node with two data directories: the
// ranges it replicates in keyspace, split as Cassandra's DiskBoundaryManager splits them.
func diskBoundariesOf(t *testing.T, r adminapi.CassandraRing, keyspace string) []int64 {
	t.Helper()
	snap := cass.Snapshot{Partitioner: r.Partitioner}
	var local cass.Node
	for _, n := range r.Nodes {
		cn := cass.Node{HostID: n.HostID, Address: n.Address, DC: n.DC, Rack: n.Rack, Tokens: n.Tokens, Local: n.Local, State: cass.HostState(n.State)}
		snap.Nodes = append(snap.Nodes, cn)
		if n.Local {
			local = cn
		}
	}
	for _, k := range r.Keyspaces {
		snap.Keyspaces = append(snap.Keyspaces, cass.Keyspace{Name: k.Name, Replication: k.Replication})
	}
	rg, _, err := snap.Ring()
	if err != nil {
		t.Fatal(err)
	}
	st, err := snap.Strategy(keyspace)
	if err != nil {
		t.Fatal(err)
	}
	var rs token.RangeSet
	for _, rr := range ring.RangeOwners(rg, st) {
		if slices.ContainsFunc(rr.Replicas, func(n ring.Node) bool { return n.Name == local.HostID }) {
			rs = append(rs, rr.Range)
		}
	}
	return cass.DiskBoundaries(rs, 2, len(local.Tokens) > 1)
}
