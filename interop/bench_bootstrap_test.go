package interop

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicedb/sluice/internal/adminapi"
)

// TestBenchBootstrapAgainstCassandra is a benchmark, not a check (SLUICE_BENCH_BOOTSTRAP=1,
// `make bench-cassandra`; never in `make interop`): issue 22's target 1, a cold bootstrap of a
// second node with Cassandra 5.0.7's own streaming beside sluice moving the same ranges into it.
//
// Node 1 (127.0.2.1, 16 vnodes) holds four sstables Cassandra's CQLSSTableWriter wrote
// (SLUICE_BENCH_SIZE each, default 400MiB; oa, LZ4 16 KiB, 64 KiB partitions; imported into
// it), keyspace bench at RF 1. Node 2 (127.0.2.2, 16 vnodes) joins, four times, fresh each time:
//
//   - A, Cassandra: auto_bootstrap true. Timed from node 2's log: from "Executing streaming
//     plan for Bootstrap" to "state jump to NORMAL" (and to "All sessions completed", the
//     streaming alone). CPU of both JVMs and node 1's device reads over the same window.
//   - B, sluice: node 2 joins with auto_bootstrap false and A's tokens (initial_token), so it
//     owns the same ranges and holds nothing; then `sluice stream fetch` of exactly those ranges
//     from node 1's sidecar on the tls data plane (--sessions SLUICE_BENCH_SESSIONS, default
//     1) into node 2's staging directory, and `sluice cassandra import`
//     through node 2's sidecar (its JMX client, or nodetool with
//     SLUICE_BENCH_IMPORT=nodetool). Timed as the two whole commands. CPU: node 1's sidecar
//     (sender); the fetch command, node 2's sidecar with its JMX client and node 2's JVM
//     (receiver). Device reads of node 1's sidecar.
//
// Each side runs cold (sync and drop_caches before the timed window; A: before node 2 starts)
// and warm (node 1's Data.db files read once before); then B once more, cold, importing with
// nodetool import instead of the JMX client (SLUICE_BENCH_NODETOOL=0 leaves it out), for the
// import path's ratio. The table has compaction disabled, so node 1 keeps its four sstables
// and node 2 does nothing but the bootstrap or the import in the windows. After each run, node 2 alone (its own
// ranges, CONSISTENCY ONE) must return exactly the rows of those ranges, value for value, as
// node 1 returned them before node 2 existed. Reference for the device: dd of as many bytes as
// sluice sent, read sequentially from node 1's Data.db files, cold. Holds
// /tmp/sluice-cassandra-127.0.2.lock throughout. Prints the table docs/BENCHMARKS.md keeps.
func TestBenchBootstrapAgainstCassandra(t *testing.T) {
	need(t)
	if os.Getenv("SLUICE_BENCH_BOOTSTRAP") == "" {
		t.Skip("not-run: a benchmark; set SLUICE_BENCH_BOOTSTRAP=1 (make bench-cassandra)")
	}
	lockAddrs(t, "/tmp/sluice-cassandra-127.0.2.lock")
	size := int64(400 << 20)
	if s := os.Getenv("SLUICE_BENCH_SIZE"); s != "" {
		v, err := parseSize(s)
		if err != nil {
			t.Fatal(err)
		}
		size = v
	}
	importVia := "jmx"
	if os.Getenv("SLUICE_BENCH_IMPORT") == "nodetool" {
		importVia = "nodetool"
	}
	root := filepath.Join(work, "bench-bootstrap")
	storage, native := freePort(t, "tcp"), freePort(t, "tcp")
	n1 := &benchNode{host: "127.0.2.1", dir: filepath.Join(root, "node1"), jmx: freePort(t, "tcp"), storage: storage, native: native}

	// Node 1, the table, the data.
	n1.start(t, true, nil)
	c1 := n1.session(t)
	for _, q := range []string{
		`CREATE KEYSPACE bench WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		// No compaction: node 1 keeps its four sstables through every run (four of a size would
		// be compacted into one at once), and node 2 does no work but the bootstrap's or the
		// import's in the timed windows.
		`CREATE TABLE bench.stress (key text, c text, value blob, PRIMARY KEY (key, c)) WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16}
			AND compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}`,
	} {
		if err := c1.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	parts := int(size / (64 << 10))
	genStart := time.Now()
	src := filepath.Join(root, "BenchWriter.java")
	if err := os.WriteFile(src, []byte(benchWriterJava), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, filepath.Join(repo, "interop", "cassandra.sh"), "java", "-Xmx2g", src, filepath.Join(root, "gen"), "4", strconv.Itoa(parts))
	if err != nil {
		t.Fatalf("CQLSSTableWriter: %v\n%s", err, out)
	}
	dirs := strings.Fields(out)
	if len(dirs) != 4 {
		t.Fatalf("writer printed %q", out)
	}
	if o, err := run(t, n1.nodetool()[0], append(append(n1.nodetool()[1:], "import", "bench", "stress"), dirs...)...); err != nil {
		t.Fatalf("nodetool import: %v\n%s", err, o)
	}
	data1 := dataFiles(t, filepath.Join(n1.dir, "data", "bench"))
	var total int64
	for _, f := range data1 {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	if len(data1) != 4 {
		t.Fatalf("node 1 holds %d sstables after the import, want 4: %v", len(data1), data1)
	}
	t.Logf("CQLSSTableWriter: 4 sstables of %d partitions (64 KiB), %d Data.db bytes, written and imported into node 1 in %.1fs",
		parts, total, time.Since(genStart).Seconds())
	want := scanRows(t, c1, nil)
	if len(want.rows) != 4*parts*16 {
		t.Fatalf("node 1 returns %d rows, want %d", len(want.rows), 4*parts*16)
	}

	// Node 1's sidecar, serving its data on the tls plane, and the certificates.
	tlsDir := filepath.Join(root, "tls")
	for _, args := range [][]string{
		{"cert", "ca", "--dir", tlsDir},
		{"cert", "node", "--dir", tlsDir, "--name", "side1", "--host", "127.0.2.1"},
		{"cert", "node", "--dir", tlsDir, "--name", "side2", "--host", "127.0.2.2"},
	} {
		if o, err := sluice(t, args...); err != nil {
			t.Fatalf("%v: %v %s", args, err, o)
		}
	}
	side1 := startBenchSidecar(t, n1, "side1", tlsDir, importVia)

	var results []benchRun
	var tokens []string
	var sentBytes int64
	runs := []struct {
		side string
		cold bool
		via  string
	}{{"A", true, ""}, {"B", true, importVia}, {"A", false, ""}, {"B", false, importVia}}
	if importVia == "jmx" && os.Getenv("SLUICE_BENCH_NODETOOL") != "0" {
		// The import path before the JMX client, for its ratio: the same run with nodetool import.
		runs = append(runs, struct {
			side string
			cold bool
			via  string
		}{"B", true, "nodetool"})
	}
	for _, r := range runs {
		n2 := &benchNode{host: "127.0.2.2", dir: filepath.Join(root, fmt.Sprintf("node2-%s-%v%s", r.side, r.cold, r.via)), jmx: freePort(t, "tcp"), storage: storage, native: native}
		var res benchRun
		if r.side == "A" {
			res = benchCassandraBootstrap(t, n1, n2, data1, r.cold, tokens)
			if tokens == nil {
				tokens = n2.tokens(t)
			}
		} else {
			res = benchSluiceFetchImport(t, n1, n2, side1, tlsDir, tokens, data1, r.cold, r.via)
			if sentBytes == 0 {
				sentBytes = res.bytes
			}
		}
		res.cold = r.cold
		c2 := n2.session(t)
		ranges := n2.ownedRanges(t, c2)
		res.rowsOK = sameRows(t, res.what, want, scanRows(t, c2, ranges), ranges)
		results = append(results, res)
		t.Logf("%s, cold %v: %+v", res.what, res.cold, res)
		n2.leave(t, n1)
	}

	if now := dataFiles(t, filepath.Join(n1.dir, "data", "bench")); strings.Join(now, " ") != strings.Join(data1, " ") {
		t.Errorf("node 1's sstables changed during the runs: %v, were %v", now, data1)
	}
	// The device: as many bytes as sluice sent, sequentially from node 1's Data.db files, cold;
	// and written durably (what a receiver must do before it publishes) beside them.
	dd := ddSeconds(t, data1, sentBytes)
	ddWrite := ddWriteSeconds(t, root, sentBytes)

	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("node 1: 4 sstables, %d Data.db bytes (oa, LZ4 16 KiB, 64 KiB partitions), 16 vnodes per node; load average %s",
		total, strings.Join(strings.Fields(string(load))[:3], " "))
	t.Logf("| run | cache | wall s | stream s | import s (verify + Cassandra) | sender CPU s | receiver CPU s | sender device reads / bytes moved | rows equal |")
	t.Logf("|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		cache := "warm"
		if r.cold {
			cache = "cold"
		}
		imp, recv := "-", fmt.Sprintf("%.2f", r.receiverCPU)
		if r.fetchCPU > 0 {
			recv = fmt.Sprintf("%.2f (fetch %.2f)", r.receiverCPU, r.fetchCPU)
		}
		if r.importS > 0 {
			imp = fmt.Sprintf("%.2f (%.2f + %.2f)", r.importS, r.verifyS, r.cassandraS)
		}
		t.Logf("| %s | %s | %.2f | %.2f | %s | %.2f | %s | %d / %d = %.2fx | %v |", r.what, cache, r.wall, r.stream, imp, r.senderCPU, recv,
			r.senderRead, r.bytes, float64(r.senderRead)/math.Max(float64(r.bytes), 1), r.rowsOK)
	}
	t.Logf("dd of %d bytes from node 1's Data.db files, cold: %.2fs (%.1f MB/s)", sentBytes, dd, float64(sentBytes)/dd/1e6)
	ratio := func(a, b benchRun) float64 { return a.wall / b.wall }
	t.Logf("cold: Cassandra / sluice (fetch + import) = %.2fx (target >= 3x); warm: %.2fx (target >= 10x)",
		ratio(results[0], results[1]), ratio(results[2], results[3]))
	if len(results) > 4 {
		t.Logf("cold, import through nodetool instead: Cassandra / sluice = %.2fx; import %.2fs (nodetool) against %.2fs (JMX client)",
			ratio(results[0], results[4]), results[4].importS, results[1].importS)
	}
	t.Logf("sluice cold fetch / dd of the same bytes = %.2fx (target <= 1.5x); sender device reads / bytes sent = %.2fx cold, %.2fx warm (target <= 1.1x)",
		results[1].stream/dd, float64(results[1].senderRead)/float64(results[1].bytes), float64(results[3].senderRead)/float64(results[3].bytes))
	t.Logf("dd writing %d bytes durably (conv=fsync) on the receiver's file system: %.2fs (%.1f MB/s); sluice cold fetch / that = %.2fx, warm %.2fx; "+
		"the most a receiver that makes what it receives durable can reach: Cassandra cold / that write = %.2fx, warm %.2fx",
		sentBytes, ddWrite, float64(sentBytes)/ddWrite/1e6, results[1].stream/ddWrite, results[3].stream/ddWrite,
		results[0].wall/ddWrite, results[2].wall/ddWrite)
}

// ddWriteSeconds writes n bytes of zeros to a new file in dir with dd conv=fsync (written and
// made durable, as a receiver does before it publishes) and returns the wall seconds.
func ddWriteSeconds(t *testing.T, dir string, n int64) float64 {
	t.Helper()
	f := filepath.Join(dir, "dd-write-reference")
	defer os.Remove(f)
	start := time.Now()
	if o, err := run(t, "dd", "if=/dev/zero", "of="+f, "bs=1M", fmt.Sprintf("count=%d", n>>20), "conv=fsync"); err != nil {
		t.Fatal(err, o)
	}
	return time.Since(start).Seconds()
}

// benchRun is one timed run of one side.
type benchRun struct {
	what                   string
	cold                   bool
	wall, stream, importS  float64 // the timed window; its streaming (A) or fetch (B) part; B's import
	senderCPU, receiverCPU float64
	senderRead, bytes      int64   // sender device reads; bytes moved (A: Data.db bytes node 2 holds; B: bytes sent)
	verifyS, cassandraS    float64 // B's import: sluice's strict verification; Cassandra's import call
	fetchCPU               float64 // B: the fetch command's share of receiverCPU
	rowsOK                 bool
}

// importPhases reads the sidecar's "imported and confirmed" log line: the seconds of its
// strict verification and of Cassandra's import call.
func importPhases(t *testing.T, log string) (verify, cassandra float64) {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		var e struct {
			Message   string  `json:"message"`
			Verify    float64 `json:"verify_seconds"`
			Cassandra float64 `json:"cassandra_seconds"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Message == "imported and confirmed" {
			return e.Verify, e.Cassandra
		}
	}
	return 0, 0
}

// benchCassandraBootstrap runs side A: node 2 bootstraps from node 1.
// tokens, when set, are node 2's initial_token (the first run lets Cassandra pick them; the
// others take the same, so that every run moves the same ranges).
func benchCassandraBootstrap(t *testing.T, n1, n2 *benchNode, data1 []string, cold bool, tokens []string) benchRun {
	t.Helper()
	if cold {
		dropCaches(t)
	} else {
		readAll(t, data1)
	}
	// The node opens its CQL port only once it is NORMAL: the window is watched in its log while
	// it starts.
	up := n2.launch(t, true, tokens)
	start := n2.waitLog(t, "Executing streaming plan for Bootstrap", 5*time.Minute)
	c1, r1, c2 := procCPU(t, n1.pid), procReadBytes(t, n1.pid), procCPU(t, n2.pid)
	normal := n2.waitLog(t, "state jump to NORMAL", 30*time.Minute)
	c1b, r1b, c2b := procCPU(t, n1.pid), procReadBytes(t, n1.pid), procCPU(t, n2.pid)
	up()
	streamed, ok := n2.findLog(t, "All sessions completed")
	if !ok {
		b, _ := os.ReadFile(n2.log)
		t.Fatalf("node 2 bootstrapped without streaming (it did not know the table yet?):\n%s", tail(string(b), 6000))
	}
	var held int64
	for _, f := range dataFiles(t, filepath.Join(n2.dir, "data", "bench")) {
		if fi, err := os.Stat(f); err == nil {
			held += fi.Size()
		}
	}
	return benchRun{what: "A: Cassandra 5.0.7 bootstrap (streaming to NORMAL)", wall: normal.Sub(start.time).Seconds(),
		stream: streamed.Sub(start.time).Seconds(), senderCPU: c1b - c1, receiverCPU: c2b - c2, senderRead: r1b - r1, bytes: held}
}

// benchSluiceFetchImport runs side B: node 2 joins with the tokens, owning the ranges and
// holding nothing; sluice fetches those ranges from node 1's sidecar and imports them through
// node 2's.
// benchSessions is the fetch's --sessions: SLUICE_BENCH_SESSIONS, default 1 (2, as
// Cassandra's bootstrap keeps two files in flight, measured no faster here: one session is
// already at the loopback TLS ceiling, and two cut every parent into two children).
func benchSessions() string {
	if s := os.Getenv("SLUICE_BENCH_SESSIONS"); s != "" {
		return s
	}
	return "1"
}

func benchSluiceFetchImport(t *testing.T, n1, n2 *benchNode, side1 *benchSidecar, tlsDir string, tokens []string, data1 []string, cold bool, importVia string) benchRun {
	t.Helper()
	n2.start(t, false, tokens)
	side2 := startBenchSidecar(t, n2, "side2", tlsDir, importVia)
	c2 := n2.session(t)
	ranges := n2.ownedRanges(t, c2)
	var spec []string
	for _, r := range ranges {
		spec = append(spec, fmt.Sprintf("(%d,%d]", r[0], r[1]))
	}
	var count int64
	if err := c2.Query(`SELECT COUNT(*) FROM bench.stress WHERE token(key) > ? AND token(key) <= ?`, ranges[0][0], ranges[0][1]).Consistency(gocql.One).Scan(&count); err != nil || count != 0 {
		t.Fatalf("node 2 holds %d rows of its first range before the fetch (%v)", count, err)
	}
	staged := filepath.Join(n2.dir, "staging", "bench-fetch", "bench", "stress-"+tableID(t, c2))
	if cold {
		dropCaches(t)
	} else {
		readAll(t, data1)
	}
	s1cpu, s1read := procCPU(t, side1.pid), procReadBytes(t, side1.pid)
	s2cpu, n2cpu := procTreeCPU(t, side2.pid), procCPU(t, n2.pid)
	fetch := exec.Command(bin, "--log-level", "warn", "stream", "fetch", "--peer", side1.stream, "--keyspace", "bench", "--table", "stress",
		"--ranges", strings.Join(spec, ","), "--out", staged, "--tls-dir", tlsDir, "--name", "side2", "--transport", "tls", "--sessions", benchSessions(), "--json")
	fwall, fcpu, fout := timed(t, fetch)
	s1cpuB, s1readB := procCPU(t, side1.pid), procReadBytes(t, side1.pid)
	var rep struct {
		Bytes  int64    `json:"bytes_received"`
		Failed []string `json:"failed"`
	}
	if err := json.Unmarshal(fout, &rep); err != nil || len(rep.Failed) > 0 {
		t.Fatalf("stream fetch: %v %s", err, fout)
	}
	imp := exec.Command(bin, "cassandra", "import", "bench.stress", staged, "--admin", side2.admin, "--json")
	imp.Env = append(os.Environ(), adminapi.TokenEnv+"="+side2.token)
	iwall, icpu, iout := timed(t, imp)
	s2cpuB, n2cpuB := procTreeCPU(t, side2.pid), procCPU(t, n2.pid)
	var ir adminapi.CassandraImportResult
	if err := json.Unmarshal(iout, &ir); err != nil || len(ir.SSTables) == 0 {
		t.Fatalf("cassandra import: %v %s", err, iout)
	}
	side2.stop()
	verifyS, cassS := importPhases(t, filepath.Join(n2.dir, "sidecar.log"))
	return benchRun{verifyS: verifyS, cassandraS: cassS, fetchCPU: fcpu, what: "B: sluice stream fetch (tls, " + benchSessions() + " sessions) + cassandra import (" + importVia + ")", wall: fwall + iwall, stream: fwall, importS: iwall,
		senderCPU: s1cpuB - s1cpu, receiverCPU: fcpu + icpu + (s2cpuB - s2cpu) + (n2cpuB - n2cpu), senderRead: s1readB - s1read, bytes: rep.Bytes}
}

// benchNode is one Cassandra node of the benchmark.
type benchNode struct {
	host, dir                 string
	jmx, storage, native, pid int
	log                       string
	stop                      func()
	sessions                  []*gocql.Session
}

func (n *benchNode) nodetool() []string {
	return []string{filepath.Join(repo, "interop", "cassandra.sh"), "java", "org.apache.cassandra.tools.NodeTool", "-h", "127.0.0.1", "-p", strconv.Itoa(n.jmx)}
}

// start starts the node (its own directory; the seed is node 1) with INFO logging into
// node.log with millisecond timestamps, and waits for its CQL and JMX ports. Without
// bootstrap, tokens are its initial_token.
func (n *benchNode) start(t *testing.T, bootstrap bool, tokens []string) {
	t.Helper()
	n.launch(t, bootstrap, tokens)()
}

// launch starts the node as start does and returns the wait for its ports.
func (n *benchNode) launch(t *testing.T, bootstrap bool, tokens []string) (wait func()) {
	t.Helper()
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := cassandraConf{Cluster: "sluice-bench-bootstrap", Dir: n.dir, Host: n.host, Seed: "127.0.2.1", Storage: n.storage, Native: n.native,
		InitialToken: strings.Join(tokens, ","), Bootstrap: &bootstrap,
		Extra: "stream_throughput_outbound: 0MiB/s\nentire_sstable_stream_throughput_outbound: 0MiB/s\n"}.yaml()
	logback := filepath.Join(n.dir, "logback.xml")
	n.log = filepath.Join(n.dir, "node.log")
	writeCassandraYAML(t, n.dir, yaml)
	if err := os.WriteFile(logback, []byte(`<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>`+n.log+`</file>
    <encoder><pattern>%d{yyyy-MM-dd HH:mm:ss.SSS} %-5level [%thread] %logger{30} %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
`), 0o644); err != nil {
		t.Fatal(err)
	}
	props := []string{"-Dlogback.configurationFile=" + logback}
	if n.host == "127.0.2.1" {
		// The seed, alone: nothing to wait for. Node 2 waits for gossip to settle, so that it
		// knows node 1 and the schema before it computes what to stream.
		props = append(props, gossipSettle)
	}
	holdAddresses(t, n.host)
	p := cassandraProc(t, "Cassandra "+n.host, n.dir, n.jmx, props...)
	p.out, p.logFile = filepath.Join(n.dir, "stdout.log"), n.log
	p.start(t)
	n.pid = p.pid()
	n.stop = func() { p.stop(syscall.SIGTERM, 60*time.Second) }
	return func() {
		t.Helper()
		p.waitCassandra(t, n.host, n.native, n.jmx, 30*time.Minute, 0)
	}
}

// session is a CQL session through this node alone, CONSISTENCY ONE.
func (n *benchNode) session(t *testing.T) *gocql.Session {
	t.Helper()
	cc := gocql.NewCluster(n.host)
	cc.Port, cc.Timeout, cc.ConnectTimeout = n.native, 60*time.Second, 30*time.Second
	cc.Consistency = gocql.One
	cc.HostFilter = gocql.WhiteListHostFilter(n.host)
	cc.DisableInitialHostLookup = true
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	n.sessions = append(n.sessions, s)
	return s
}

// logLine is a line of node.log and its timestamp.
type logLine struct {
	time time.Time
	text string
}

func (l logLine) Sub(o time.Time) time.Duration { return l.time.Sub(o) }

// findLog is the first line of node.log that contains s.
func (n *benchNode) findLog(t *testing.T, s string) (logLine, bool) {
	t.Helper()
	f, err := os.Open(n.log)
	if err != nil {
		return logLine{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, s) && len(line) > 23 {
			if ts, err := time.ParseInLocation("2006-01-02 15:04:05.000", line[:23], time.Local); err == nil {
				return logLine{time: ts, text: line}, true
			}
		}
	}
	return logLine{}, false
}

// waitLog waits for the first line of node.log that contains s.
func (n *benchNode) waitLog(t *testing.T, s string, limit time.Duration) logLine {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if l, ok := n.findLog(t, s); ok {
			return l
		}
	}
	b, _ := os.ReadFile(n.log)
	t.Fatalf("%s: no %q in its log after %v:\n%s", n.host, s, limit, tail(string(b), 4000))
	return logLine{}
}

// tokens are the node's tokens, from system.local.
func (n *benchNode) tokens(t *testing.T) []string {
	t.Helper()
	var toks []string
	if err := n.session(t).Query(`SELECT tokens FROM system.local`).Scan(&toks); err != nil {
		t.Fatal(err)
	}
	sort.Slice(toks, func(i, j int) bool {
		a, _ := strconv.ParseInt(toks[i], 10, 64)
		b, _ := strconv.ParseInt(toks[j], 10, 64)
		return a < b
	})
	return toks
}

// ownedRanges are this node's ranges (left, right] in the ring, s being this node's own
// session; a range that wraps is split at the ring's end.
func (n *benchNode) ownedRanges(t *testing.T, s *gocql.Session) [][2]int64 {
	t.Helper()
	type tok struct {
		v    int64
		mine bool
	}
	var ring []tok
	add := func(toks []string, mine bool) {
		for _, x := range toks {
			v, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			ring = append(ring, tok{v, mine})
		}
	}
	mine := n.tokens(t)
	add(mine, true)
	it := s.Query(`SELECT tokens FROM system.peers_v2`).Iter()
	var toks []string
	for it.Scan(&toks) {
		add(toks, false)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if len(ring) == len(mine) {
		t.Fatalf("%s lists no peer", n.host)
	}
	sort.Slice(ring, func(i, j int) bool { return ring[i].v < ring[j].v })
	var out [][2]int64
	for i, r := range ring {
		if !r.mine {
			continue
		}
		if i == 0 {
			out = append(out, [2]int64{ring[len(ring)-1].v, math.MaxInt64}, [2]int64{math.MinInt64, r.v})
			continue
		}
		out = append(out, [2]int64{ring[i-1].v, r.v})
	}
	return out
}

// leave stops node 2 and takes it out of node 1's ring (nodetool assassinate: node 1 keeps its
// data), so that the next run's node 2 can take the address again.
func (n *benchNode) leave(t *testing.T, n1 *benchNode) {
	t.Helper()
	for _, s := range n.sessions {
		s.Close()
	}
	n.sessions = nil
	n.stop()
	if o, err := run(t, n1.nodetool()[0], append(n1.nodetool()[1:], "assassinate", n.host)...); err != nil {
		t.Fatalf("assassinate: %v %s", err, o)
	}
	c1 := n1.session(t)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		var peers int
		if err := c1.Query(`SELECT COUNT(*) FROM system.peers_v2`).Scan(&peers); err != nil {
			t.Fatal(err)
		}
		if peers == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 1 still lists %d peers", peers)
		}
	}
	time.Sleep(3 * time.Second) // gossip's quarantine of the address (2 x ring delay)
	if err := os.RemoveAll(n.dir); err != nil {
		t.Fatal(err)
	}
}

func tableID(t *testing.T, s *gocql.Session) string {
	t.Helper()
	var id gocql.UUID
	if err := s.Query(`SELECT id FROM system_schema.tables WHERE keyspace_name = 'bench' AND table_name = 'stress'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(id.String(), "-", "")
}

// benchRows is what a scan returned: (key, c) → FNV-64 of the value, and key → token.
type benchRows struct {
	rows   map[[2]string]uint64
	tokens map[string]int64
}

// scanRows reads bench.stress through s: everything, or only ranges.
func scanRows(t *testing.T, s *gocql.Session, ranges [][2]int64) benchRows {
	t.Helper()
	out := benchRows{rows: map[[2]string]uint64{}, tokens: map[string]int64{}}
	scan := func(q string, args ...any) {
		it := s.Query(q, args...).PageSize(500).Iter()
		var tok int64
		var key, c string
		var v []byte
		for it.Scan(&tok, &key, &c, &v) {
			h := fnv.New64a()
			h.Write(v)
			out.rows[[2]string{key, c}] = h.Sum64()
			out.tokens[key] = tok
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if ranges == nil {
		scan(`SELECT token(key), key, c, value FROM bench.stress`)
		return out
	}
	for _, r := range ranges {
		scan(`SELECT token(key), key, c, value FROM bench.stress WHERE token(key) > ? AND token(key) <= ?`, r[0], r[1])
	}
	return out
}

// sameRows reports whether got (node 2 over its ranges) is exactly the part of want (node 1's
// rows before node 2 existed) whose keys' tokens fall in ranges: every row, value for value,
// and nothing else.
func sameRows(t *testing.T, what string, want, got benchRows, ranges [][2]int64) bool {
	t.Helper()
	in := func(tok int64) bool {
		for _, r := range ranges {
			if tok > r[0] && tok <= r[1] {
				return true
			}
		}
		return false
	}
	expect, missing, differ := 0, 0, 0
	for k, h := range want.rows {
		if !in(want.tokens[k[0]]) {
			continue
		}
		expect++
		g, ok := got.rows[k]
		switch {
		case !ok:
			missing++
		case g != h:
			differ++
		}
	}
	ok := expect > 0 && missing == 0 && differ == 0 && len(got.rows) == expect
	if !ok {
		t.Errorf("%s: node 2 returns %d rows over its ranges, %d expected: %d missing, %d differ, %d unexpected", what, len(got.rows), expect,
			missing, differ, len(got.rows)-(expect-missing))
	}
	return ok
}

// lockAddrs holds the exclusive flock on path (see holdAddresses).
func lockAddrs(t *testing.T, path string) {
	t.Helper()
	holdLock(t, path)
}

var sizeRE = regexp.MustCompile(`^(\d+)(KiB|MiB|GiB)?$`)

func parseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("SLUICE_BENCH_SIZE %q: want e.g. 400MiB", s)
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	switch m[2] {
	case "KiB":
		v <<= 10
	case "MiB":
		v <<= 20
	case "GiB":
		v <<= 30
	}
	return v, nil
}

// procCPU is pid's user + system CPU seconds, its waited-for children's included.
func procCPU(t *testing.T, pid int) float64 {
	t.Helper()
	d, err := statCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d.Seconds()
}

// procTreeCPU is procCPU of pid and of every live descendant (the sidecar's JMX client).
func procTreeCPU(t *testing.T, pid int) float64 { return cpuTree(t, pid).Seconds() }

// procReadBytes is /proc/PID/io's read_bytes: what pid caused to be read from the device.
func procReadBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "read_bytes: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	t.Fatalf("/proc/%d/io has no read_bytes", pid)
	return 0
}

// readAll reads files once (the warm runs).
func readAll(t *testing.T, files []string) {
	t.Helper()
	for _, f := range files {
		if o, err := run(t, "cat", f); err != nil {
			t.Fatal(err, o[:0])
		}
	}
}

// ddSeconds drops the caches and reads n bytes with dd, n/len(files) sequentially from the
// start of each file, the files one after the other; it returns the wall seconds.
func ddSeconds(t *testing.T, files []string, n int64) float64 {
	t.Helper()
	dropCaches(t)
	per := n / int64(len(files)) / (1 << 20)
	start := time.Now()
	for _, f := range files {
		if o, err := run(t, "dd", "if="+f, "of=/dev/null", "bs=1M", fmt.Sprintf("count=%d", per)); err != nil {
			t.Fatal(err, o)
		}
	}
	return time.Since(start).Seconds()
}

// benchSidecar is a `sluice run` beside one benchmark node.
type benchSidecar struct {
	pid                  int
	stream, admin, token string
	stop                 func()
}

// startBenchSidecar runs the sidecar of n: standalone (no gossip), tls data plane, imports
// through the JMX client (importVia jmx) or nodetool.
func startBenchSidecar(t *testing.T, n *benchNode, name, tlsDir, importVia string) *benchSidecar {
	t.Helper()
	s := &benchSidecar{stream: fmt.Sprintf("%s:%d", n.host, freePort(t, "udp")), admin: fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp")),
		token: filepath.Join(n.dir, "admin.token")}
	conf := sidecarConf{Name: name, TLSDir: tlsDir, Stream: s.stream, Admin: s.admin, Token: s.token, Transport: "tls",
		Host: n.host, Native: n.native, Data: filepath.Join(n.dir, "data"), Staging: filepath.Join(n.dir, "staging")}
	if importVia == "jmx" {
		conf.JMX = n.jmx
	} else {
		conf.NodetoolJSON = nodetoolJSON(n.jmx)
	}
	side := sidecarProc(t, n.dir, conf, nil)
	side.out = filepath.Join(n.dir, "sidecar.log")
	side.start(t)
	s.pid = side.pid()
	s.stop = func() { side.stop(syscall.SIGINT, 15*time.Second) }
	tokenFile := s.token
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if _, err := os.Stat(tokenFile); err == nil {
			c := exec.Command(bin, "cassandra", "ring", "--json", "--admin", s.admin)
			c.Env = append(os.Environ(), adminapi.TokenEnv+"="+tokenFile)
			if out, err := c.Output(); err == nil && strings.Contains(string(out), n.host) {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(n.dir, "sidecar.log"))
			t.Fatalf("sidecar %s not ready:\n%s", name, tail(string(b), 4000))
		}
	}
	if importVia == "jmx" {
		time.Sleep(2 * time.Second) // the JMX client's start, which the sidecar begins at once
	}
	return s
}
