package interop

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicedb/sluice/internal/adminapi"
)

// cpuTree is a process's CPU so far, its waited-for children's included (utime, stime, cutime,
// cstime of /proc/PID/stat: a sidecar's count includes the nodetool import JVMs it ran), and
// that of its live descendants (a sidecar's persistent JMX client).
func cpuTree(t *testing.T, pid int) time.Duration {
	t.Helper()
	d, err := statCPU(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return 0 // exited meanwhile: counted by its parent
	}
	if err != nil {
		t.Fatal(err)
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, c := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(c); err == nil {
				d += cpuTree(t, child)
			}
		}
	}
	return d
}

// statCPU is pid's user + system CPU, its waited-for children's included (utime, stime,
// cutime, cstime of /proc/PID/stat).
func statCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 on
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime: fields 14-17
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %v", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100, nil // USER_HZ
}

// cpuOf sums procCPU over running processes.
func cpuOf(t *testing.T, ps ...*proc) time.Duration {
	var d time.Duration
	for _, p := range ps {
		if p.running() {
			d += cpuTree(t, p.cmd.Process.Pid)
		}
	}
	return d
}

// timedCmd runs a command to its end; it returns the wall time and the process's own CPU (its
// waited-for children's included).
func timedCmd(t *testing.T, env []string, argv ...string) (wall, cpu time.Duration, out string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	var b strings.Builder
	cmd.Stdout, cmd.Stderr = &b, &b
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, tail(b.String(), 3000))
	}
	wall = time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return wall, cpu, b.String()
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// sideBySide is one measured pair.
type sideBySide struct {
	what                       string
	sluiceWall, sluiceCPU      time.Duration
	cassWall, cassCPU          time.Duration
	sluiceCassCPU, toolCassCPU time.Duration // the Cassandra JVMs' share of each CPU
	load                       string
}

// The sidecar's load and rebuild measured beside Cassandra's own tools on the same live
// cluster, in the same run (a benchmark: SLUICE_BENCH_SIDECAR=1, `make bench-sidecar`):
//
//   - load: a CQLSSTableWriter source (SLUICE_BENCH_SIDECAR_PARTITIONS x 10 rows of 1,000
//     characters, every partition in two of three writers' sstables; default 20,500
//     partitions, ~391 MiB) into the three dc1 nodes at RF 2 (16 vnodes: partial sstables to
//     every node): `sluice cassandra load` into loaded.bsrc, sstableloader into loaded.bref;
//   - rebuild: a keyspace replicated {dc1: 1} holding a second such source (loaded with
//     sluice, SLUICE_BENCH_SIDECAR_REBUILD_PARTITIONS, default 12,700: ~241 MiB on dc1), two
//     nodes joining without bootstrap, 127.0.0.4 in dc2 and 127.0.0.5 in dc3, the keyspace
//     altered to {dc1: 1, dc2: 1, dc3: 1}: `sluice cassandra rebuild dc1` on dc2's sidecar,
//     `nodetool rebuild --keyspace rb -- dc1` on dc3's node.
//
// SLUICE_BENCH_SIDECAR_REBUILD=0 measures the load alone; SLUICE_BENCH_SIDECAR_LOGS=1 prints the
// sidecars' log of the rebuild; SLUICE_SIDECAR_CPUPROFILE=DIR has
// every sidecar write a CPU profile there when it stops.
//
// Wall is each command's; CPU is the command's process (sstableloader's or nodetool's JVM,
// sluice's CLI) + every sidecar's (the nodetool import JVMs they run included) + every
// Cassandra JVM's, as deltas over the command. Autocompaction is off on the measured tables so
// one side's compactions do not run in the other's window. Rows are compared at ALL (load)
// and at LOCAL_ONE through each rebuilt node (rebuild).
func TestBenchSidecarLoadRebuild(t *testing.T) {
	need(t)
	if os.Getenv("SLUICE_BENCH_SIDECAR") != "1" {
		t.Skip("not-run: a benchmark (SLUICE_BENCH_SIDECAR=1, make bench-sidecar)")
	}
	parts, rbParts := 20500, 12700
	if v, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_SIDECAR_PARTITIONS")); err == nil && v > 0 {
		parts = v
	}
	if v, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_SIDECAR_REBUILD_PARTITIONS")); err == nil && v > 0 {
		rbParts = v
	}
	c := startLoadCluster(t, "bench-sidecar")
	all := c.session(-1, gocql.All)
	for _, stmt := range []string{
		`CREATE KEYSPACE loaded WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2}`,
		`CREATE TABLE loaded.bsrc (pk text, ck int, v text, PRIMARY KEY (pk, ck))`,
		`CREATE TABLE loaded.bref (pk text, ck int, v text, PRIMARY KEY (pk, ck))`,
		`CREATE KEYSPACE rb WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}`,
		`CREATE TABLE rb.t (pk text, ck int, v text, PRIMARY KEY (pk, ck))`,
	} {
		if err := all.Query(stmt).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.nodes {
		if out, err := run(t, n.nodetool()[0], append(n.nodetool()[1:], "disableautocompaction", "loaded")...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	src, rows := bulkSource(t, filepath.Join(c.root, "source"), "loaded", "bsrc", parts, 10, 1000, 3)
	c.t.Logf("import path: %s; data plane: %s", map[bool]string{true: "the persistent JMX client (jmx_address)", false: "nodetool import, one JVM per import"}[c.jmx],
		cmpOr(c.transport, "quic"))
	var srcBytes int64
	for _, f := range dirEntries(t, src) {
		if fi, err := os.Stat(filepath.Join(src, f)); err == nil {
			srcBytes += fi.Size()
		}
	}
	t.Logf("load source: %d sstables, %.1f MiB, %d rows", len(dataFiles(t, src)), float64(srcBytes)/(1<<20), rows)
	refDir := filepath.Join(c.root, "bulk", "loaded", "bref")
	linkTree(t, src, refDir)
	env := append(os.Environ(), adminapi.TokenEnv+"="+c.tokens[0])
	var results []sideBySide

	// load: sluice, then sstableloader.
	r := sideBySide{what: fmt.Sprintf("load, %.0f MiB (%d sstables) into 3 nodes at RF 2", float64(srcBytes)/(1<<20), len(dataFiles(t, src))), load: loadavg()}
	marks := c.logMarks()
	cass0, side0 := cpuOf(t, c.cass...), cpuOf(t, c.side...)
	wall, cli, out := timedCmd(t, env, bin, "cassandra", "load", src, "--admin", c.admins[0], "--json")
	r.sluiceCassCPU = cpuOf(t, c.cass...) - cass0
	r.sluiceWall, r.sluiceCPU = wall, cli+cpuOf(t, c.side...)-side0+r.sluiceCassCPU
	var lr adminapi.CassandraLoadResult
	if err := json.Unmarshal([]byte(out), &lr); err != nil || lr.State != adminapi.OpComplete {
		t.Fatalf("sluice cassandra load: %v %s", err, tail(out, 2000))
	}
	t.Logf("sluice cassandra load: %.1fs wall (op %.1fs), %d sstables imported %v, %d bytes sent; %s", wall.Seconds(), lr.WallSeconds, lr.SSTables,
		lr.ImportedPerNode, lr.BytesSent, c.loadPhases(marks))
	cass0 = cpuOf(t, c.cass...)
	wall, tool, _ := timedCmd(t, os.Environ(), filepath.Join(repo, "interop", "cassandra.sh"), "tool", "org.apache.cassandra.tools.BulkLoader",
		"-d", "127.0.0.1", "-p", strconv.Itoa(c.native), "-sp", strconv.Itoa(c.storage), "--no-progress", refDir)
	r.toolCassCPU = cpuOf(t, c.cass...) - cass0
	r.cassWall, r.cassCPU = wall, tool+r.toolCassCPU
	r.load += " → " + loadavg()
	results = append(results, r)
	r.log(t)
	sameCells(t, "load: loaded.bsrc (sluice) vs loaded.bref (sstableloader) at ALL", cells(t, all, "bref"), cells(t, all, "bsrc"))

	if os.Getenv("SLUICE_BENCH_SIDECAR_REBUILD") == "0" {
		t.Log(r.row())
		return
	}
	// rebuild: the data in dc1 (loaded by sluice, autocompaction off), then two new DCs.
	for _, n := range c.nodes {
		if out, err := run(t, n.nodetool()[0], append(n.nodetool()[1:], "disableautocompaction", "rb")...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	rbSrc, _ := bulkSource(t, filepath.Join(c.root, "rbsource"), "rb", "t", rbParts, 10, 1000, 3)
	if res, _, err := c.load(rbSrc); err != nil || res.State != adminapi.OpComplete {
		t.Fatalf("loading rb.t: %v %+v", err, res)
	}
	results = append(results, benchRebuild(t, c))

	t.Logf("| operation, data | sluice wall | sluice CPU (of it Cassandra) | Cassandra's tool wall | its CPU (of it Cassandra) | wall ratio | CPU ratio | load average |")
	for _, r := range results {
		t.Log(r.row())
	}
}

func (r sideBySide) row() string {
	return fmt.Sprintf("| %s | %.1f s | %.1f s (%.1f s) | %.1f s | %.1f s (%.1f s) | %.1fx | %.1fx | %s |", r.what, r.sluiceWall.Seconds(), r.sluiceCPU.Seconds(),
		r.sluiceCassCPU.Seconds(), r.cassWall.Seconds(), r.cassCPU.Seconds(), r.toolCassCPU.Seconds(),
		r.cassWall.Seconds()/r.sluiceWall.Seconds(), r.cassCPU.Seconds()/r.sluiceCPU.Seconds(), r.load)
}

func (r sideBySide) log(t *testing.T) { t.Log(r.row()) }

// logMarks is where each sidecar's log is now.
func (c *loadCluster) logMarks() []int {
	m := make([]int, len(c.side))
	for i, p := range c.side {
		m[i] = p.logs.Len()
	}
	return m
}

// loadPhases sums, over the sidecars' log lines since marks, the load's phases: the loader's
// verification and staging of the source, and per transfer the fetch (the sender's cut and the
// transfer), the strict verification, Cassandra's importer, the staging and confirmation (for
// a rebuild: per source and table, the fetch and the whole import). Transfers run four at a
// time, so the sums overlap in wall time.
func (c *loadCluster) loadPhases(marks []int) string {
	var verifySrc, stage, fetch, verify, imp, confirm float64
	n := 0
	for i, p := range c.side {
		logs := p.logs.String()
		if marks[i] > len(logs) {
			continue
		}
		for _, line := range strings.Split(logs[marks[i]:], "\n") {
			var l struct {
				Msg                 string  `json:"message"`
				Seconds             float64 `json:"seconds"`
				FetchSeconds        float64 `json:"fetch_seconds"`
				VerifySeconds       float64 `json:"verify_seconds"`
				ImportSeconds       float64 `json:"import_seconds"`
				StageConfirmSeconds float64 `json:"stage_confirm_seconds"`
			}
			if json.Unmarshal([]byte(line), &l) != nil {
				continue
			}
			switch l.Msg {
			case "load: source sstables verified":
				verifySrc += l.Seconds
			case "load: source sstables staged":
				stage += l.Seconds
			case "loaded: fetched and imported":
				n++
				fetch, verify, imp, confirm = fetch+l.FetchSeconds, verify+l.VerifySeconds, imp+l.ImportSeconds, confirm+l.StageConfirmSeconds
			case "rebuilt: fetched and imported": // the rebuild's: its import_seconds is the whole import
				n++
				fetch, imp = fetch+l.FetchSeconds, imp+l.ImportSeconds
			}
		}
	}
	return fmt.Sprintf("phases: sources verified %.1fs, staged %.1fs; over %d transfers (overlapping) fetch %.1fs, strict verify %.1fs, Cassandra's importer %.1fs, staging+confirmation %.1fs",
		verifySrc, stage, n, fetch, verify, imp, confirm)
}

// benchRebuild adds 127.0.0.4 (dc2) and 127.0.0.5 (dc3) without bootstrap, with sidecars,
// replicates rb to both and rebuilds dc2's node with sluice and dc3's with nodetool.
func benchRebuild(t *testing.T, c *loadCluster) sideBySide {
	var rbBytes int64
	files := 0
	for i := range c.nodes {
		for _, f := range c.liveDataOf(i, "rb", "t") {
			if fi, err := os.Stat(f); err == nil {
				rbBytes += fi.Size()
				files++
			}
		}
	}
	c.addNode("127.0.0.4", "dc2", false)
	c.addNode("127.0.0.5", "dc3", false)
	c.waitPeers(0, 4)
	c.addSidecar(3)
	c.addSidecar(4)
	for i := range c.nodes {
		c.waitRing(i, func(r adminapi.CassandraRing) bool { return c.upCount(r) == len(c.nodes) }, "five nodes UP with their sidecars")
	}
	if err := c.session(0, gocql.One).Query(`ALTER KEYSPACE rb WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1, 'dc2': 1, 'dc3': 1}`).Exec(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{3, 4} {
		n := c.nodes[i]
		if out, err := run(t, n.nodetool()[0], append(n.nodetool()[1:], "disableautocompaction", "rb")...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	r := sideBySide{what: fmt.Sprintf("rebuild dc1, %.0f MiB (%d sstables in dc1)", float64(rbBytes)/(1<<20), files), load: loadavg()}
	env := append(os.Environ(), adminapi.TokenEnv+"="+c.tokens[3])
	marks := c.logMarks()
	cass0, side0 := cpuOf(t, c.cass...), cpuOf(t, c.side...)
	wall, cli, out := timedCmd(t, env, bin, "cassandra", "rebuild", "dc1", "--keyspace", "rb", "--admin", c.admins[3], "--json")
	r.sluiceCassCPU = cpuOf(t, c.cass...) - cass0
	r.sluiceWall, r.sluiceCPU = wall, cli+cpuOf(t, c.side...)-side0+r.sluiceCassCPU
	var rr adminapi.CassandraRebuildResult
	if err := json.Unmarshal([]byte(out), &rr); err != nil || rr.State != adminapi.OpComplete {
		t.Fatalf("sluice cassandra rebuild: %v %s", err, tail(out, 2000))
	}
	if os.Getenv("SLUICE_BENCH_SIDECAR_LOGS") == "1" { // the sidecars' log of the rebuild, for its timeline
		for i, p := range c.side {
			if logs := p.logs.String(); marks[i] <= len(logs) {
				t.Logf("sidecar %d:\n%s", i+1, logs[marks[i]:])
			}
		}
	}
	t.Logf("sluice cassandra rebuild dc1: %.1fs wall (op %.1fs), %d ranges, %d sstables, %d bytes; %s", wall.Seconds(), rr.WallSeconds, rr.Ranges,
		rr.SSTables, rr.BytesReceived, c.loadPhases(marks))
	n5 := c.nodes[4]
	cass0 = cpuOf(t, c.cass...)
	wall, tool, _ := timedCmd(t, os.Environ(), append(n5.nodetool(), "rebuild", "--keyspace", "rb", "--", "dc1")...)
	r.toolCassCPU = cpuOf(t, c.cass...) - cass0
	r.cassWall, r.cassCPU = wall, tool+r.toolCassCPU
	r.load += " → " + loadavg()
	r.log(t)
	want := rbRows(t, c.nodes[0].session(t, c.native))
	sameCells(t, "rebuild: dc2 (sluice) at LOCAL_ONE", want, rbRows(t, c.nodes[3].session(t, c.native)))
	sameCells(t, "rebuild: dc3 (nodetool rebuild) at LOCAL_ONE", want, rbRows(t, n5.session(t, c.native)))
	return r
}

// rbRows reads rb.t through s: "pk/ck" → value digest@writetime.
func rbRows(t *testing.T, s *gocql.Session) map[string]string {
	t.Helper()
	out := map[string]string{}
	it := s.Query(`SELECT pk, ck, v, writetime(v) FROM rb.t`).PageSize(1000).Iter()
	var pk, v string
	var ck int
	var wt int64
	for it.Scan(&pk, &ck, &v, &wt) {
		out[pk+"/"+strconv.Itoa(ck)] = fmt.Sprintf("%x@%d", sha256.Sum256([]byte(v)), wt)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}
