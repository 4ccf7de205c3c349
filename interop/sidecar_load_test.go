package interop

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/sstable/token"
)

// loadCluster is three Cassandra 5.0 nodes in dc1 (127.0.0.1-3, 16 vnodes each, -Xmx1g), each
// with a sluice sidecar, the sidecars gossiping; nodes and sidecars can be stopped and started
// again.
type loadCluster struct {
	t               *testing.T
	root            string
	storage, native int
	nodes           []liveNode
	cass            []*proc
	side            []*proc
	admins, tokens  []string
	tlsDir, keyFile string
	seed            string
	jmx             bool   // imports through the persistent JMX client
	transport       string // the sidecars' stream data plane; "" is the default (quic)
}

// startLoadCluster starts the three dc1 nodes and their sidecars (SLUICE_INTEROP_LIVE=0
// skips). With SLUICE_SIDECAR_JMX=1 the sidecars import through sluice's persistent JMX
// client (cassandra.jmx_address) instead of a nodetool JVM per import;
// SLUICE_SIDECAR_TRANSPORT sets their stream data plane (quic, tls, tcp).
func startLoadCluster(t *testing.T, name string) *loadCluster {
	t.Helper()
	if os.Getenv("SLUICE_INTEROP_LIVE") == "0" {
		t.Skip("not-run: SLUICE_INTEROP_LIVE=0")
	}
	begin := time.Now()
	c := &loadCluster{t: t, root: filepath.Join(work, name), storage: freePort(t, "tcp"), native: freePort(t, "tcp"),
		jmx: os.Getenv("SLUICE_SIDECAR_JMX") == "1", transport: os.Getenv("SLUICE_SIDECAR_TRANSPORT")}
	for i := range 3 {
		c.addNode(fmt.Sprintf("127.0.0.%d", i+1), "dc1", true) // one at a time: a node joins before the next starts
	}
	c.waitPeers(0, 2)
	t.Logf("3 Cassandra nodes up in %.1fs", time.Since(begin).Seconds())

	c.tlsDir = filepath.Join(c.root, "tls")
	if _, err := sluice(t, "cert", "ca", "--dir", c.tlsDir); err != nil {
		t.Fatal(err)
	}
	c.keyFile = filepath.Join(c.root, "cluster.key")
	if err := os.WriteFile(c.keyFile, []byte("00112233445566778899aabbccddeeff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.seed = fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	for i := range c.nodes {
		c.addSidecar(i)
	}
	for i := range c.nodes {
		c.waitRing(i, func(r adminapi.CassandraRing) bool { return c.upCount(r) == len(c.nodes) }, "every node UP with its sidecar up")
	}
	return c
}

// waitPeers waits until node i lists want peers.
func (c *loadCluster) waitPeers(i, want int) {
	t := c.t
	t.Helper()
	s := c.nodes[i].session(t, c.native)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var peers int
		if err := s.Query(`SELECT COUNT(*) FROM system.peers_v2`).Scan(&peers); err != nil {
			t.Fatal(err)
		}
		if peers == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d lists %d peers, want %d", i+1, peers, want)
		}
		time.Sleep(time.Second)
	}
}

// addNode configures and starts a Cassandra node on host in dc (16 vnodes; bootstrap: whether
// it streams its ranges when it joins).
func (c *loadCluster) addNode(host, dc string, bootstrap bool) {
	t := c.t
	t.Helper()
	n := liveNode{host: host, dc: dc, dir: filepath.Join(c.root, "node"+host[strings.LastIndexByte(host, '.')+1:]), jmx: freePort(t, "tcp")}
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeCassandraYAML(t, n.dir, cassandraConf{Cluster: "sluice-load", Dir: n.dir, Host: n.host, Storage: c.storage, Native: c.native,
		Snitch: "GossipingPropertyFileSnitch", Bootstrap: &bootstrap}.yaml())
	holdAddresses(t, n.host)
	p := cassandraProc(t, "cassandra "+n.host, n.dir, n.jmx, gossipSettle, rackDC(t, n.dir, dc, "rack1"))
	c.nodes, c.cass = append(c.nodes, n), append(c.cass, p)
	c.startNode(len(c.nodes) - 1)
}

// addSidecar configures and starts node i's sidecar, side<i+1>, gossiping with side1.
func (c *loadCluster) addSidecar(i int) {
	t := c.t
	t.Helper()
	n := c.nodes[i]
	sname := fmt.Sprintf("side%d", i+1)
	if _, err := sluice(t, "cert", "node", "--dir", c.tlsDir, "--name", sname); err != nil {
		t.Fatal(err)
	}
	g := c.seed
	if i > 0 {
		g = fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	}
	admin := fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	token := filepath.Join(n.dir, "admin.token")
	conf := sidecarConf{Name: sname, TLSDir: c.tlsDir, Stream: fmt.Sprintf("127.0.0.1:%d", freePort(t, "udp")), Admin: admin, Token: token,
		Transport: c.transport, Gossip: g, Seed: c.seed, KeyFile: c.keyFile, Host: n.host, Native: c.native, Data: n.data(),
		NodetoolJSON: nodetoolJSON(n.jmx), Staging: c.staging(i), Refresh: "2s"}
	if c.jmx {
		conf.JMX = n.jmx
	}
	var args []string
	if dir := os.Getenv("SLUICE_SIDECAR_CPUPROFILE"); dir != "" { // a CPU profile per sidecar, written when it stops
		args = append(args, "--cpu-profile", filepath.Join(dir, sname+".pprof"))
	}
	p := startSidecar(t, n.dir, conf, nil, args...)
	c.side, c.admins, c.tokens = append(c.side, p), append(c.admins, admin), append(c.tokens, token)
}

func (c *loadCluster) staging(i int) string { return filepath.Join(c.nodes[i].dir, "staging") }

// startNode starts Cassandra node i and waits for its CQL and JMX ports. On a loaded machine a
// joining node can give up on a seed that is slow to answer gossip; it is started again
// (twice at most).
func (c *loadCluster) startNode(i int) {
	t := c.t
	t.Helper()
	p, n := c.cass[i], c.nodes[i]
	start := time.Now()
	p.start(t)
	p.waitCassandra(t, n.host, c.native, n.jmx, 4*time.Minute, 2)
	t.Logf("Cassandra %s up in %.1fs", n.host, time.Since(start).Seconds())
}

func (c *loadCluster) upCount(r adminapi.CassandraRing) int {
	up := 0
	for _, cn := range r.Nodes {
		if cn.State == "UP" && cn.Sidecar == adminapi.SidecarUp {
			up++
		}
	}
	return up
}

// ring is sidecar i's view of the ring.
func (c *loadCluster) ring(i int) (adminapi.CassandraRing, error) {
	var r adminapi.CassandraRing
	out, err := c.cli(i, "cassandra", "ring", "--json")
	if err == nil {
		err = json.Unmarshal([]byte(out), &r)
	}
	return r, err
}

// waitRing waits (2 minutes at most) until sidecar i's ring satisfies ok.
func (c *loadCluster) waitRing(i int, ok func(adminapi.CassandraRing) bool, what string) adminapi.CassandraRing {
	c.t.Helper()
	var r adminapi.CassandraRing
	var err error
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if r, err = c.ring(i); err == nil && ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("side%d: waited 2 minutes for %s: %v %+v", i+1, what, err, r)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// cli runs a sluice command against sidecar i's admin API.
func (c *loadCluster) cli(i int, args ...string) (string, error) {
	cmd := exec.Command(bin, append(args, "--admin", c.admins[i])...)
	cmd.Env = append(os.Environ(), adminapi.TokenEnv+"="+c.tokens[i])
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("sluice %s: %v: %s", strings.Join(args, " "), err, tail(errb.String(), 3000))
	}
	return out.String(), nil
}

// load runs `sluice cassandra load args... --json` through sidecar 1; the result is parsed
// whether or not the command failed (it prints its summary either way).
func (c *loadCluster) load(args ...string) (adminapi.CassandraLoadResult, time.Duration, error) {
	c.t.Helper()
	start := time.Now()
	out, err := c.cli(0, append(append([]string{"cassandra", "load"}, args...), "--json")...)
	wall := time.Since(start)
	var res adminapi.CassandraLoadResult
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil && err == nil {
		c.t.Fatalf("sluice cassandra load: %v\n%s", jerr, out)
	}
	return res, wall, err
}

// session is a CQL session through every node at consistency cl, or through node i alone
// (i >= 0).
func (c *loadCluster) session(i int, cl gocql.Consistency) *gocql.Session {
	t := c.t
	t.Helper()
	var hosts []string
	for j, n := range c.nodes {
		if i < 0 || i == j {
			hosts = append(hosts, fmt.Sprintf("%s:%d", n.host, c.native))
		}
	}
	cc := gocql.NewCluster(hosts...)
	cc.Timeout, cc.ConnectTimeout = 60*time.Second, 30*time.Second
	cc.Consistency = cl
	if i >= 0 {
		cc.HostFilter = gocql.WhiteListHostFilter(c.nodes[i].host)
	}
	return cqlSession(t, cc)
}

// cells reads every row of loaded.<table> through s: "pk/ck" → value@writetime.
func cells(t *testing.T, s *gocql.Session, table string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var err error
	for range 3 { // a coordinator's read timeout under load is retried
		out = map[string]string{}
		it := s.Query(`SELECT pk, ck, v, writetime(v) FROM loaded.` + table).PageSize(1000).Iter()
		var pk, v string
		var ck int
		var wt int64
		for it.Scan(&pk, &ck, &v, &wt) {
			out[pk+"/"+strconv.Itoa(ck)] = fmt.Sprintf("%x@%d", sha256.Sum256([]byte(v)), wt)
		}
		if err = it.Close(); err == nil {
			return out
		}
		time.Sleep(2 * time.Second)
	}
	t.Fatalf("reading loaded.%s: %v", table, err)
	return nil
}

// sameCells reports how got differs from want (missing, differing, extra rows).
func sameCells(t *testing.T, what string, want, got map[string]string) bool {
	t.Helper()
	missing, differ, extra := 0, 0, 0
	var example string
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing++
			example = cmpOr(example, "missing "+k)
		case g != v:
			differ++
			example = cmpOr(example, "differs "+k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra++
			example = cmpOr(example, "extra "+k)
		}
	}
	if missing+differ+extra > 0 || len(want) == 0 {
		t.Errorf("%s: %d rows, want %d: %d missing, %d differ, %d extra (%s)", what, len(got), len(want), missing, differ, extra, example)
		return false
	}
	return true
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// replicated is, per node address, the ranges it replicates at RF 2 in one DC and rack
// (NetworkTopologyStrategy's walk: a range's replicas are the owner of its right token and the
// next distinct node clockwise), from a sidecar's ring read.
func replicated(t *testing.T, r adminapi.CassandraRing) map[string]token.RangeSet {
	t.Helper()
	type tok struct {
		v     int64
		owner string
	}
	var all []tok
	for _, n := range r.Nodes {
		for _, v := range n.Tokens {
			all = append(all, tok{v, n.Address})
		}
	}
	slices.SortFunc(all, func(a, b tok) int { return cmp.Compare(a.v, b.v) })
	out := map[string]token.RangeSet{}
	for i, cur := range all {
		prev := all[(i+len(all)-1)%len(all)]
		rg := token.Range{Left: token.Token{Kind: token.KindMurmur3, Long: prev.v}, Right: token.Token{Kind: token.KindMurmur3, Long: cur.v}}
		out[cur.owner] = append(out[cur.owner], rg)
		for k := 1; k < len(all); k++ {
			if next := all[(i+k)%len(all)]; next.owner != cur.owner {
				out[next.owner] = append(out[next.owner], rg)
				break
			}
		}
	}
	return out
}

// keyLines lists the partitions of one sstable (sluice sstable keys --json).
func keyLines(t *testing.T, data string) (keys []string, toks []int64, fillers int) {
	t.Helper()
	out, err := sluice(t, "sstable", "keys", "--json", data)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var k struct {
			Key    string `json:"key"`
			Token  string `json:"token"`
			Filler bool   `json:"filler"`
		}
		if err := json.Unmarshal(sc.Bytes(), &k); err != nil {
			t.Fatalf("sstable keys %s: %v", data, err)
		}
		if k.Filler {
			fillers++
			continue
		}
		v, err := strconv.ParseInt(k.Token, 10, 64)
		if err != nil {
			t.Fatalf("sstable keys %s: token %q", data, k.Token)
		}
		keys, toks = append(keys, k.Key), append(toks, v)
	}
	return keys, toks, fillers
}

// liveData lists the Data.db files of loaded.<table> in node i's data directory.
func (c *loadCluster) liveData(i int, table string) []string { return c.liveDataOf(i, "loaded", table) }

// liveDataOf lists the Data.db files of keyspace.table in node i's data directory.
func (c *loadCluster) liveDataOf(i int, keyspace, table string) []string {
	m, _ := filepath.Glob(filepath.Join(c.nodes[i].data(), keyspace, table+"-*", "*-Data.db"))
	return m
}

// bulkSource writes the CQLSSTableWriter source (interop/harness Bulk.java) into dir as
// <keyspace>/<table>-<id>/ and returns that directory and the distinct rows.
func bulkSource(t *testing.T, dir, keyspace, table string, partitions, rows, size, writers int) (string, int) {
	t.Helper()
	out, err := harness(t, "bulk", "--out", dir, "--keyspace", keyspace, "--table", table, "--partitions", strconv.Itoa(partitions),
		"--rows", strconv.Itoa(rows), "--value-size", strconv.Itoa(size), "--writers", strconv.Itoa(writers), "--seed", "23")
	if err != nil {
		t.Fatal(err)
	}
	var data []string
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "SSTABLE "); ok {
			data = append(data, p)
		}
	}
	if len(data) < 2 {
		t.Fatalf("the bulk source has %d sstables, want several:\n%s", len(data), out)
	}
	return filepath.Dir(data[0]), partitions * rows
}

// linkTree hard-links the regular files of src into dst (created).
func linkTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range dirEntries(t, src) {
		if err := os.Link(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// sstableloader loads dir (…/loaded/<table>) with Cassandra's BulkLoader through node 1; it
// returns the wall time and the tool's CPU.
func (c *loadCluster) sstableloader(dir string) (wall, cpu time.Duration) {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(repo, "interop", "cassandra.sh"), "tool", "org.apache.cassandra.tools.BulkLoader",
		"-d", "127.0.0.1", "-p", strconv.Itoa(c.native), "-sp", strconv.Itoa(c.storage), "--no-progress", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("sstableloader: %v\n%s", err, tail(out.String(), 3000))
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// stagingLeft lists what node i's staging directory holds besides the replica's record of
// imported load transfers (state, not a leftover).
func (c *loadCluster) stagingLeft(i int) []string {
	var left []string
	ents, _ := os.ReadDir(c.staging(i))
	for _, e := range ents {
		if e.Name() != "sluice-load-received.json" {
			left = append(left, e.Name())
		}
	}
	return left
}

// The load drill on live Cassandra 5.0.7: three nodes in dc1 (127.0.0.1-3, 16 vnodes, one
// sidecar each), keyspace loaded at NetworkTopologyStrategy {dc1: 2}, so every node receives
// partial sstables. A CQLSSTableWriter source of several overlapping sstables (every partition
// in two writers' sstables, the later writer's cells winning) is loaded twice:
// Cassandra's sstableloader into loaded.ref and `sluice cassandra load` into loaded.src, two
// tables of one schema in one keyspace (same replication, same ring, so each node's share is
// the same; loading into one table after a truncate would leave nothing to compare with). The
// sluice load is of a tree holding the source twice, as loaded.src and loaded.src2.
//
//   - The sidecar is killed (SIGKILL, with what it runs) once its journal records a confirmed
//     transfer; the command fails. Restarted, the same command resumes: it sends only what
//     was not confirmed (resumed > 0), completes, leaves no staging directory and no journal,
//     and nodes 2 and 3 hold no sstable twice (byte-identical Data.db: a cut imported twice).
//   - Rows of loaded.src equal loaded.ref's (value and writetime) at ALL, and at ONE through
//     each node alone; each node's sstables of loaded.src hold exactly the source partitions
//     whose tokens it replicates (none other, none missing); nodetool compact succeeds on every
//     node and the rows are equal again.
//   - Cassandra node 3 stopped: a load into loaded.down fails naming 127.0.0.3, the others
//     import their share; node 3 back, the same command sends node 3's share alone and rows
//     equal loaded.ref's at ALL.
//   - A source sstable with a flipped byte in a Data.db chunk: the load fails, refusing that
//     file by path (what was wrong in the message), and loaded.gen holds exactly the other
//     sstable's partitions. With the damaged sstable removed, the same command resumes and
//     completes, sending nothing again.
//
// SLUICE_SIDECAR_LOAD_PARTITIONS sizes the source (default 3,000 partitions of 5 rows of
// 1,000 characters, ~30 MB written; make drills-cassandra uses more).
func TestCassandraSidecarLoad(t *testing.T) {
	need(t)
	begin := time.Now()
	c := startLoadCluster(t, "sidecar-load")
	parts := 3000
	if v, err := strconv.Atoi(os.Getenv("SLUICE_SIDECAR_LOAD_PARTITIONS")); err == nil && v > 0 {
		parts = v
	}
	all := c.session(-1, gocql.All)
	for _, stmt := range []string{
		`CREATE KEYSPACE loaded WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2}`,
		`CREATE TABLE loaded.src (pk text, ck int, v text, PRIMARY KEY (pk, ck))`,
		`CREATE TABLE loaded.src2 (pk text, ck int, v text, PRIMARY KEY (pk, ck))`,
		`CREATE TABLE loaded.ref (pk text, ck int, v text, PRIMARY KEY (pk, ck))`,
		`CREATE TABLE loaded.down (pk text, ck int, v text, PRIMARY KEY (pk, ck))`,
		`CREATE TABLE loaded.gen (pk text, ck text, value blob, PRIMARY KEY (pk, ck))`,
	} {
		if err := all.Query(stmt).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	gstart := time.Now()
	src, rowsWritten := bulkSource(t, filepath.Join(c.root, "source"), "loaded", "src", parts, 5, 1000, 3)
	srcFiles := dataFiles(t, src)
	var srcBytes int64
	for _, f := range dirEntries(t, src) {
		if fi, err := os.Stat(filepath.Join(src, f)); err == nil {
			srcBytes += fi.Size()
		}
	}
	t.Logf("CQLSSTableWriter source: %d sstables, %d bytes, %d rows, in %.1fs", len(srcFiles), srcBytes, rowsWritten, time.Since(gstart).Seconds())
	ring := c.waitRing(0, func(r adminapi.CassandraRing) bool { return c.upCount(r) == 3 }, "the ring")

	// The reference: sstableloader of the same sstables into loaded.ref.
	refDir := filepath.Join(c.root, "bulk", "loaded", "ref")
	linkTree(t, src, refDir)
	// The load is of a tree of two tables of the same source (loaded.src and loaded.src2): six
	// transfers, four at a time, so that when the first is confirmed others have not started.
	tree := filepath.Dir(filepath.Dir(src))
	linkTree(t, src, filepath.Join(tree, "loaded", "src2-"+strings.TrimPrefix(filepath.Base(src), "src-")))
	bwall, _ := c.sstableloader(refDir)
	want := cells(t, all, "ref")
	if len(want) != rowsWritten {
		t.Fatalf("sstableloader's table holds %d rows at ALL, the source %d", len(want), rowsWritten)
	}
	t.Logf("sstableloader: %.1fs, %d rows", bwall.Seconds(), len(want))

	// The load, its sidecar killed once a transfer is confirmed.
	journal := filepath.Join(c.staging(0), "sluice-load-journal.json")
	type outcome struct {
		res adminapi.CassandraLoadResult
		err error
	}
	first := make(chan outcome, 1)
	go func() {
		out, err := c.cli(0, "cassandra", "load", tree, "--json")
		var res adminapi.CassandraLoadResult
		_ = json.Unmarshal([]byte(out), &res)
		first <- outcome{res, err}
	}()
	confirmed := 0
	for deadline := time.Now().Add(5 * time.Minute); confirmed == 0; {
		var j struct{ Done map[string]any }
		if b, err := os.ReadFile(journal); err == nil && json.Unmarshal(b, &j) == nil {
			confirmed = len(j.Done)
		}
		select {
		case o := <-first:
			t.Fatalf("the load ended before a transfer was journaled (nothing to kill mid-load): %v %+v", o.err, o.res)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no transfer journaled in 5 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.side[0].stop(syscall.SIGKILL, 0)
	o := <-first
	if o.err == nil && o.res.State == adminapi.OpComplete {
		t.Fatalf("the load completed although its sidecar was killed: %+v", o.res)
	}
	t.Logf("side1 killed (SIGKILL) with %d transfer(s) journaled; the command: %v", confirmed, o.err)
	c.side[0].start(t)
	c.waitRing(0, func(r adminapi.CassandraRing) bool { return c.upCount(r) == 3 }, "side1 back")
	res, wall, err := c.load(tree)
	if err != nil || res.State != adminapi.OpComplete || len(res.Failed) != 0 {
		t.Fatalf("the resumed load: %v %+v", err, res)
	}
	if res.Resumed == 0 || res.Resumed < confirmed {
		t.Errorf("the resumed load skipped %d transfer(s), the journal had %d confirmed", res.Resumed, confirmed)
	}
	if res.SSTables == 0 || res.Resumed >= 6 {
		t.Errorf("the resumed load sent nothing (%d of 6 transfers done before): the sidecar was not killed mid-load", res.Resumed)
	}
	t.Logf("resumed load: %.1fs, %d transfer(s) confirmed earlier not sent, %d sstable(s) imported now (per node %v), %d bytes sent",
		wall.Seconds(), res.Resumed, res.SSTables, res.ImportedPerNode, res.BytesSent)
	if _, err := os.Stat(journal); err == nil {
		t.Error("the completed load left its journal")
	}
	for i := range c.nodes {
		if left := c.stagingLeft(i); len(left) != 0 {
			t.Errorf("node %d's staging directory keeps %v", i+1, left)
		}
		seen := map[[32]byte]string{}
		for _, f := range c.liveData(i, "src") {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // compacted away meanwhile
			}
			sum := sha256.Sum256(b)
			if prev, ok := seen[sum]; ok {
				// Node 1's own import dies with its sidecar; Cassandra may have finished it
				// unrecorded, and the resume imported the cut again (identical cells: no row
				// changes). Nodes 2 and 3 record every import they confirm.
				if i == 0 {
					t.Logf("node 1 holds one cut twice (%s, %s): its import was cut short by the kill", filepath.Base(prev), filepath.Base(f))
				} else {
					t.Errorf("node %d imported one cut twice: %s and %s are byte-identical", i+1, prev, f)
				}
			}
			seen[sum] = f
		}
	}
	if after := dataFiles(t, src); !slices.Equal(after, srcFiles) {
		t.Errorf("the source directory changed: %v, was %v", after, srcFiles)
	}

	// Rows: at ALL, then at ONE through each node alone.
	sameCells(t, "sluice cassandra load vs sstableloader, at ALL", want, cells(t, all, "src"))
	sameCells(t, "loaded.src2 (the same source, in the same load) vs sstableloader, at ALL", want, cells(t, all, "src2"))
	for i := range c.nodes {
		sameCells(t, fmt.Sprintf("at ONE through %s alone", c.nodes[i].host), want, cells(t, c.session(i, gocql.One), "src"))
	}

	// Each node holds exactly the partitions it replicates.
	srcKeys := map[string]int64{}
	for _, f := range srcFiles {
		keys, toks, _ := keyLines(t, f)
		for k, key := range keys {
			srcKeys[key] = toks[k]
		}
	}
	repl := replicated(t, ring)
	for i, n := range c.nodes {
		held := map[string]bool{}
		outside, fillers := 0, 0
		for _, f := range c.liveData(i, "src") {
			keys, toks, fl := keyLines(t, f)
			fillers += fl
			for k, key := range keys {
				held[key] = true
				if !repl[n.host].Contains(token.Token{Kind: token.KindMurmur3, Long: toks[k]}) {
					outside++
				}
			}
		}
		missing := 0
		for key, tk := range srcKeys {
			if repl[n.host].Contains(token.Token{Kind: token.KindMurmur3, Long: tk}) && !held[key] {
				missing++
			}
		}
		if outside != 0 || missing != 0 || len(held) == 0 {
			t.Errorf("node %s holds %d partitions: %d outside the ranges it replicates, %d it replicates missing", n.host, len(held), outside, missing)
		} else {
			t.Logf("node %s: %d sstables, %d partitions, every one in its ranges, none missing (%d empty filler partitions)", n.host,
				len(c.liveData(i, "src")), len(held), fillers)
		}
	}

	// Compaction.
	for i, n := range c.nodes {
		if out, err := run(t, n.nodetool()[0], append(n.nodetool()[1:], "compact", "loaded", "src")...); err != nil {
			t.Errorf("nodetool compact on %s: %v\n%s", n.host, err, out)
		}
		if k := len(c.liveData(i, "src")); k != 1 {
			t.Logf("node %s holds %d sstables of loaded.src after nodetool compact", n.host, k)
		}
	}
	sameCells(t, "after nodetool compact, at ALL", want, cells(t, all, "src"))

	testLoadNodeDown(t, c, src, want)
	testLoadCorruptSource(t, c, all)
	t.Logf("whole drill %.1fs", time.Since(begin).Seconds())
}

// testLoadNodeDown: Cassandra node 3 stopped, a load into loaded.down reports it and
// completes the rest; node 3 back, the same command sends what is missing.
func testLoadNodeDown(t *testing.T, c *loadCluster, src string, want map[string]string) {
	downDir := filepath.Join(c.root, "down", "loaded", "down")
	linkTree(t, src, downDir)
	c.cass[2].stop(syscall.SIGTERM, time.Minute)
	c.waitRing(0, func(r adminapi.CassandraRing) bool {
		for _, n := range r.Nodes {
			if n.Address == "127.0.0.3" {
				return n.State != "UP"
			}
		}
		return false
	}, "node 3 DOWN")
	res, _, err := c.load(downDir)
	if err == nil || res.State != adminapi.OpFailed || len(res.Failed) == 0 {
		t.Fatalf("a load with node 3 down: %v %+v", err, res)
	}
	for _, f := range res.Failed {
		if f.To != "127.0.0.3" || !strings.Contains(f.Error, "127.0.0.3") || !strings.Contains(f.Error, "DOWN") {
			t.Errorf("a failure that does not name node 3 down: %+v", f)
		}
	}
	if res.ImportedPerNode["side1"] == 0 || res.ImportedPerNode["side2"] == 0 {
		t.Errorf("with node 3 down, nodes 1 and 2 imported %v", res.ImportedPerNode)
	}
	t.Logf("node 3 down: the load failed naming it (%d transfer(s), e.g. %q); imported %v", len(res.Failed), res.Failed[0].Error, res.ImportedPerNode)

	c.startNode(2)
	c.waitRing(0, func(r adminapi.CassandraRing) bool { return c.upCount(r) == 3 }, "node 3 back with its sidecar")
	res2, wall, err := c.load(downDir)
	if err != nil || res2.State != adminapi.OpComplete || len(res2.Failed) != 0 {
		t.Fatalf("the load again with node 3 back: %v %+v", err, res2)
	}
	for name, k := range res2.ImportedPerNode {
		if name != "side3" && k > 0 {
			t.Errorf("the resumed load sent %d sstable(s) to %s again", k, name)
		}
	}
	if res2.Resumed == 0 || res2.ImportedPerNode["side3"] == 0 {
		t.Errorf("the resumed load: %d transfer(s) skipped, imported %v", res2.Resumed, res2.ImportedPerNode)
	}
	t.Logf("node 3 back: the same load resumed in %.1fs, %d transfer(s) not sent again, imported %v", wall.Seconds(), res2.Resumed, res2.ImportedPerNode)
	sameCells(t, "loaded.down after the resumed load, at ALL", want, cells(t, c.session(-1, gocql.All), "down"))
}

// testLoadCorruptSource: two sstables, one with a flipped byte in a Data.db chunk: the load
// refuses it by path, and the table holds exactly the other's partitions.
func testLoadCorruptSource(t *testing.T, c *loadCluster, all *gocql.Session) {
	dir := filepath.Join(c.root, "corrupt")
	var rows [2]int64
	for i, seed := range []string{"41", "42"} {
		out, err := sluice(t, "sstable", "gen", "--out", dir, "--keyspace", "loaded", "--table", "gen", "--version", "oa",
			"--partitions", "400", "--partition-size", "4KiB", "--row-size", "1KiB", "--seed", seed, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var g struct{ Rows int64 }
		if err := json.Unmarshal([]byte(out), &g); err != nil {
			t.Fatal(err)
		}
		rows[i] = g.Rows
	}
	files := dataFiles(t, dir)
	if len(files) != 2 {
		t.Fatalf("gen wrote %v", files)
	}
	good, bad := files[0], files[1]
	b, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0x01 // inside a compressed chunk: its CRC no longer matches
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	goodKeys, _, _ := keyLines(t, good)
	badKeys, _, _ := keyLines(t, bad)
	res, _, err := c.load(filepath.Dir(good))
	if err == nil || res.State != adminapi.OpFailed {
		t.Fatalf("a load with a corrupt sstable succeeded: %+v", res)
	}
	if len(res.Refused) != 1 || res.Refused[0].SSTable != bad || !strings.Contains(res.Refused[0].Error, bad) {
		t.Fatalf("refused %+v, want %s by name", res.Refused, bad)
	}
	if len(res.Failed) != 1 {
		t.Errorf("failed %+v: want the refused sstable alone (every transfer of the good one completes)", res.Failed)
	}
	var count int64
	if err := all.Query(`SELECT COUNT(*) FROM loaded.gen`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	heldKeys := map[string]bool{}
	it := all.Query(`SELECT DISTINCT pk FROM loaded.gen`).Iter()
	var pk string
	for it.Scan(&pk) {
		heldKeys[fmt.Sprintf("%x", pk)] = true
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	fromBad := 0
	for _, k := range badKeys {
		if heldKeys[k] && !slices.Contains(goodKeys, k) {
			fromBad++
		}
	}
	if count != rows[0] || len(heldKeys) != len(goodKeys) || fromBad != 0 {
		t.Errorf("loaded.gen holds %d rows in %d partitions (%d only the corrupt sstable has); the good sstable has %d rows in %d partitions",
			count, len(heldKeys), fromBad, rows[0], len(goodKeys))
	}
	t.Logf("corrupt source: refused %s (%s); the other sstable loaded: %d rows, %d imported per node %v", filepath.Base(bad),
		tail(res.Refused[0].Error, 200), count, res.SSTables, res.ImportedPerNode)

	// The operator removes the damaged sstable and runs the load again: it resumes, nothing
	// is sent twice, and it completes.
	for _, f := range dirEntries(t, filepath.Dir(bad)) {
		if strings.HasPrefix(f, strings.TrimSuffix(filepath.Base(bad), "Data.db")) {
			if err := os.Remove(filepath.Join(filepath.Dir(bad), f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	again, _, err := c.load(filepath.Dir(good))
	if err != nil || again.State != adminapi.OpComplete || again.SSTables != 0 || again.Resumed != 3 {
		t.Errorf("the load again without the damaged sstable: %v; %d sstables sent, %d transfers resumed (want 0 and 3)", err, again.SSTables, again.Resumed)
	}
}
