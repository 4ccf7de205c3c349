package interop

import (
	"encoding/json"
	"fmt"
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

// The sidecar's JMX client against a live Cassandra 5.0.7 node (127.0.2.1): with
// cassandra.jmx_address set, `sluice cassandra import` goes through one persistent client JVM
// (the class embedded in the sluice binary) instead of nodetool. An import of sstables sluice
// wrote lands (SELECT COUNT(*) counts every row) and Cassandra's own log shows the options it
// ran with: digest re-read off (verifySSTables=false), token check on, level and repaired state
// reset, caches invalidated, a move not a copy. The client is one process across imports; killed,
// the next import starts another and succeeds. A damaged sstable is refused before Cassandra
// sees it.
func TestCassandraSidecarJMXImport(t *testing.T) {
	need(t)
	if os.Getenv("SLUICE_INTEROP_LIVE") == "0" {
		t.Skip("not-run: SLUICE_INTEROP_LIVE=0")
	}
	lockAddrs(t, "/tmp/sluice-cassandra-127.0.2.lock")
	root := filepath.Join(work, "sidecar-jmx")
	n := &benchNode{host: "127.0.2.1", dir: filepath.Join(root, "node1"), jmx: freePort(t, "tcp"), storage: freePort(t, "tcp"), native: freePort(t, "tcp")}
	n.start(t, true, nil)
	s := n.session(t)
	for _, q := range []string{
		`CREATE KEYSPACE jmxks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE jmxks.stress (pk text, ck text, value blob, PRIMARY KEY (pk, ck))`,
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	gen := func(seed int) (dir string, rows int64) {
		t.Helper()
		out := filepath.Join(root, fmt.Sprintf("gen%d", seed))
		o, err := sluice(t, "sstable", "gen", "--out", out, "--keyspace", "jmxks", "--table", "stress", "--version", "oa",
			"--partitions", "500", "--partition-size", "4KiB", "--row-size", "1KiB", "--seed", strconv.Itoa(seed), "--json")
		if err != nil {
			t.Fatal(err)
		}
		var g struct{ Rows int64 }
		if err := json.Unmarshal([]byte(o), &g); err != nil {
			t.Fatal(err)
		}
		dirs, _ := filepath.Glob(filepath.Join(out, "jmxks", "stress-*"))
		if len(dirs) != 1 {
			t.Fatalf("gen wrote %v", dirs)
		}
		return dirs[0], g.Rows
	}
	count := func() int64 {
		t.Helper()
		var c int64
		if err := s.Query(`SELECT COUNT(*) FROM jmxks.stress`).Consistency(gocql.One).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}

	tlsDir := filepath.Join(root, "tls")
	for _, args := range [][]string{{"cert", "ca", "--dir", tlsDir}, {"cert", "node", "--dir", tlsDir, "--name", "side1", "--host", "127.0.2.1"}} {
		if o, err := sluice(t, args...); err != nil {
			t.Fatalf("%v: %v %s", args, err, o)
		}
	}
	side := startBenchSidecar(t, n, "side1", tlsDir, "jmx")
	imp := func(dir string) (adminapi.CassandraImportResult, error) {
		t.Helper()
		c := exec.Command(bin, "cassandra", "import", "jmxks.stress", dir, "--admin", side.admin, "--json")
		c.Env = append(os.Environ(), adminapi.TokenEnv+"="+side.token)
		out, err := c.CombinedOutput()
		var r adminapi.CassandraImportResult
		if err == nil {
			err = json.Unmarshal(out, &r)
		}
		if err != nil {
			return r, fmt.Errorf("%v: %s", err, out)
		}
		return r, nil
	}

	dirA, rowsA := gen(11)
	r, err := imp(dirA)
	if err != nil || len(r.SSTables) != 1 || r.Nodetool != "" {
		t.Fatalf("import through the JMX client: %+v %v", r, err)
	}
	if got := count(); got != rowsA {
		t.Fatalf("SELECT COUNT(*) after the import: %d, want %d", got, rowsA)
	}
	opts, ok := n.findLog(t, "Loading new SSTables for jmxks/stress")
	if !ok {
		t.Fatal("Cassandra's log has no import of jmxks.stress")
	}
	for _, want := range []string{"resetLevel=true", "clearRepaired=true", "verifySSTables=false", "verifyTokens=true",
		"invalidateCaches=true", "extendedVerify=false", "copyData=false"} {
		if !strings.Contains(strings.ReplaceAll(opts.text, " ", ""), want) { // 5.0.7 prints "copyData= false"
			t.Errorf("Cassandra imported with %q, want %s", opts.text, want)
		}
	}
	clients := jmxClients(t, side.pid)
	if len(clients) != 1 {
		t.Fatalf("the sidecar runs %d JMX clients, want 1", len(clients))
	}

	// The client dies; the next import starts another.
	if err := syscall.Kill(clients[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	dirB, rowsB := gen(12)
	if r, err := imp(dirB); err != nil || len(r.SSTables) != 1 {
		t.Fatalf("import after the client was killed: %+v %v", r, err)
	}
	if got := count(); got != rowsA+rowsB {
		t.Fatalf("SELECT COUNT(*) after the second import: %d, want %d", got, rowsA+rowsB)
	}
	again := jmxClients(t, side.pid)
	if len(again) != 1 || again[0] == clients[0] {
		t.Errorf("JMX clients after the restart: %v (the killed one was %d)", again, clients[0])
	}

	// A damaged sstable never reaches Cassandra.
	dirC, _ := gen(13)
	data, _ := filepath.Glob(filepath.Join(dirC, "*-Data.db"))
	b, err := os.ReadFile(data[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x20
	if err := os.WriteFile(data[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := imp(dirC); err == nil || !strings.Contains(err.Error(), "verification") {
		t.Errorf("a damaged sstable: %v", err)
	}
	if got := count(); got != rowsA+rowsB {
		t.Errorf("SELECT COUNT(*) after the refused import: %d, want %d", got, rowsA+rowsB)
	}
}

// jmxClients are the pids of the sidecar's JMX client processes (its children running
// SluiceJMX).
func jmxClients(t *testing.T, sidecar int) []int {
	t.Helper()
	var out []int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out = out[:0]
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", sidecar))
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			for _, c := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(c)
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				if strings.Contains(string(cmd), "SluiceJMX") {
					out = append(out, pid)
				}
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			return out
		}
	}
}
