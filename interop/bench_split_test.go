package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicedb/sluice/internal/lib/fsx/fsxtest"
)

// TestBenchSplitAgainstSSTableSplit is a benchmark, not a check (SLUICE_BENCH_SPLIT=1, `make
// bench-cassandra`; never in `make interop`): Cassandra 5.0.7's `sstablesplit -s 128` and
// `sluice sstable split --ways 8` in its default mode, each on its own copy of one parent of
// SLUICE_BENCH_SIZE (default 1GiB, oa, LZ4 16 KiB, 64 KiB partitions) in a table a live node
// created, every page of the parent evicted before each run, each timed as a whole process
// from outside. sluice runs twice: on this ext4 (mode auto = copy) and on a loop-mounted XFS
// with reflink (mode auto = reflink, no Digest.crc32 by default). Its children must verify
// strictly and hold every partition of the parent. Prints the table docs/BENCHMARKS.md keeps.
func TestBenchSplitAgainstSSTableSplit(t *testing.T) {
	need(t)
	if os.Getenv("SLUICE_BENCH_SPLIT") == "" {
		t.Skip("not-run: a benchmark; set SLUICE_BENCH_SPLIT=1 (make bench-cassandra)")
	}
	size := os.Getenv("SLUICE_BENCH_SIZE")
	if size == "" {
		size = "1GiB"
	}
	dir := filepath.Join(work, "bench-split")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	// A live node creates the keyspace and table, then drains and stops: sstablesplit is an
	// offline tool that reads the schema from the node's system tables.
	storage, native, jmx := freePort(t, "tcp"), freePort(t, "tcp"), freePort(t, "tcp")
	node := startCassandra(t, dir, liveYAML(dir, storage, native), native, jmx)
	stop := func() { node.stop(syscall.SIGTERM, 60*time.Second) }
	cl := gocql.NewCluster("127.0.0.1")
	cl.Port, cl.Timeout, cl.ConnectTimeout = native, 30*time.Second, 30*time.Second
	s, err := cl.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE KEYSPACE bench WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE bench.stress (key text, c text, value blob, PRIMARY KEY (key, c))`,
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	stop()
	tables, _ := filepath.Glob(filepath.Join(dir, "data", "bench", "stress-*"))
	if len(tables) != 1 {
		t.Fatalf("table directories %v", tables)
	}
	tableDir := tables[0]

	// The parent, written once, kept outside the table directory; each run gets a copy.
	genOut := filepath.Join(dir, "gen")
	if _, err := sluice(t, "sstable", "gen", "--out", genOut, "--keyspace", "bench", "--table", "stress", "--size", size, "--version", "oa", "--seed", "7"); err != nil {
		t.Fatal(err)
	}
	parents, _ := filepath.Glob(filepath.Join(genOut, "bench", "stress-*", "oa-1-big-Data.db"))
	if len(parents) != 1 {
		t.Fatalf("generated %v", parents)
	}
	parentDir := filepath.Dir(parents[0])
	desc := describe(t, parents[0])

	type result struct {
		what        string
		wall, cpu   float64
		children    int
		partitions  int64
		readBytes   int64
		description string
	}
	var results []result

	// sstablesplit rewrites the parent into its own table directory and removes it.
	copyDir(t, parentDir, tableDir)
	dropCaches(t)
	cmd := exec.Command(filepath.Join(repo, "interop", "cassandra.sh"), "java",
		"-Dcassandra.config=file://"+filepath.Join(dir, "cassandra.yaml"), "-Dcassandra.storagedir="+dir,
		"org.apache.cassandra.tools.StandaloneSplitter", "-s", "128", "--no-snapshot", filepath.Join(tableDir, "oa-1-big-Data.db"))
	wall, cpu, out := timed(t, cmd)
	kids, _ := filepath.Glob(filepath.Join(tableDir, "*-Data.db"))
	results = append(results, result{what: "Cassandra 5.0.7 sstablesplit -s 128 (ext4)", wall: wall, cpu: cpu, children: len(kids),
		description: lastLine(out)})

	split := func(what, base string) {
		src := filepath.Join(base, "parent")
		copyDir(t, parentDir, src)
		outDir := filepath.Join(base, "children")
		dropCaches(t)
		cmd := exec.Command(bin, "--log-level", "warn", "sstable", "split", filepath.Join(src, "oa-1-big-Data.db"), "--ways", "8", "--out", outDir, "--json")
		wall, cpu, out := timed(t, cmd)
		var rep struct {
			Mode      string `json:"mode"`
			BytesRead int64  `json:"bytes_read"`
			Children  []struct {
				Path       string `json:"path"`
				Partitions int64  `json:"partitions"`
				Digest     bool   `json:"digest"`
			} `json:"children"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("%s: %v: %s", what, err, out)
		}
		r := result{what: what + ", mode " + rep.Mode, wall: wall, cpu: cpu, children: len(rep.Children), readBytes: rep.BytesRead}
		digests := 0
		for _, c := range rep.Children {
			r.partitions += c.Partitions
			if c.Digest {
				digests++
			}
			if o, err := sluice(t, "sstable", "verify", "--strict", c.Path); err != nil {
				t.Errorf("%s: child %s: %v: %s", what, c.Path, err, o)
			}
		}
		if r.partitions != desc.Partitions {
			t.Errorf("%s: children hold %d partitions, the parent %d", what, r.partitions, desc.Partitions)
		}
		r.description = fmt.Sprintf("%d of %d children with Digest.crc32", digests, len(rep.Children))
		results = append(results, r)
	}
	split("sluice split --ways 8 (ext4)", filepath.Join(dir, "ext4"))
	if os.Geteuid() == 0 {
		split("sluice split --ways 8 (XFS, reflink)", fsxtest.MountXFS(t, "4G"))
	}

	ref := results[0].wall
	t.Logf("parent: %s uncompressed, %d bytes on disk, %d partitions; cold cache before every run; whole processes timed from outside", size, desc.DataFileLength, desc.Partitions)
	t.Logf("| run | wall s | CPU s | children | vs sstablesplit | notes |")
	t.Logf("|---|---|---|---|---|---|")
	for _, r := range results {
		t.Logf("| %s | %.2f | %.2f | %d | %.1fx | %s |", r.what, r.wall, r.cpu, r.children, ref/r.wall, r.description)
	}
}

// timed runs cmd and returns its wall and CPU seconds (user + system, from its rusage) and
// its standard output; a failure fails the test.
func timed(t *testing.T, cmd *exec.Cmd) (wall, cpu float64, stdout []byte) {
	t.Helper()
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s\n%s", cmd.Args, err, tail(out.String(), 2000), tail(errs.String(), 4000))
	}
	wall = time.Since(start).Seconds()
	cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return wall, cpu, []byte(out.String())
}

// dropCaches writes back and evicts the page cache (root), so that every run reads its input
// from the device.
func dropCaches(t *testing.T) {
	t.Helper()
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o200); err != nil {
		t.Logf("page cache not dropped (runs are warm): %v", err)
	}
}

// copyDir copies every regular file of src into dst (created).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type described struct {
	Partitions     int64 `json:"partitions"`
	DataFileLength int64 `json:"data_file_length"`
}

func describe(t *testing.T, path string) described {
	t.Helper()
	out, err := sluice(t, "sstable", "describe", "--json", path)
	if err != nil {
		t.Fatalf("describe %s: %v: %s", path, err, out)
	}
	var d described
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("describe %s: %v", path, err)
	}
	return d
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
