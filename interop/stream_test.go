package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
)

func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		return pc.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A sluice node process serves the Cassandra-written fixture tables; `sluice stream fetch`
// pulls two ranges of each table (partial sstables: verbatim chunk runs plus rebuilt
// components) and the whole ring of one (entire sstables). Cassandra reads every fetched
// sstable through its index, its metadata check and sstableverify pass (sstableverify -e and
// the sequential read too unless it starts with a dead prefix, as split's children), and the multiset of Cassandra's
// per-partition digests over the fetched sstables equals the one over the node's sstables in the
// ranges (a table's sstables may share keys). The rows path (zero-copy refused: legacy counter
// shards, rows re-serialised) has no natural input here — no available sstable has legacy shards
// and CQLSSTableWriter refuses counters — so four fixture tables are copied with the Statistics
// flag hasLegacyCounterShards set (the data is untouched; Cassandra's reads ignore the flag)
// and fetched by the rows path.
// oneRangeSpec is the middle of the ring: one run of each parent's chunks.
const oneRangeSpec = "(-3000000000000000000,3000000000000000000]"

func TestStreamFetchedReadByCassandra(t *testing.T) {
	need(t)
	fs := fixtures(t)
	names, tables := byTable(fs)
	// The data directories: the roots of the fixtures' <ks>/<table>-<id>/ trees, and one more
	// for the rows path (below).
	var dataArgs []string
	roots := map[string]bool{}
	for _, f := range fs {
		if root := filepath.Dir(filepath.Dir(filepath.Dir(f.Path))); !roots[root] {
			roots[root] = true
			dataArgs = append(dataArgs, "--data-dir", root)
		}
	}
	rowsRoot, rowsTables := rowsPathCopies(t, tables)
	dataArgs = append(dataArgs, "--data-dir", rowsRoot)
	tlsDir := filepath.Join(work, "stream-tls")
	for _, args := range [][]string{{"cert", "ca", "--dir", tlsDir}, {"cert", "node", "--dir", tlsDir, "--name", "n1"}, {"cert", "node", "--dir", tlsDir, "--name", "cli"}} {
		if _, err := sluice(t, args...); err != nil {
			t.Fatal(err)
		}
	}
	streamAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t, "udp"))
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	var logs bytes.Buffer
	node := exec.Command(bin, append(append([]string{"run", "--name", "n1"}, dataArgs...), "--tls-dir", tlsDir,
		"--stream-addr", streamAddr, "--admin-addr", adminAddr, "--log-format", "json")...)
	node.Stdout, node.Stderr = &logs, &logs
	// The node writes its admin token under XDG_CONFIG_HOME; the test reads it from there.
	cfgHome := filepath.Join(work, "stream-config")
	node.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfgHome)
	_, adminPort, _ := net.SplitHostPort(adminAddr)
	admin := adminapi.NewClient(adminAddr, filepath.Join(cfgHome, "sluice", "admin-"+adminPort+".token"), nil)
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = node.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = node.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = node.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("node logs:\n%s", tail(logs.String(), 4000))
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var st adminapi.Status
		err := admin.Call(context.Background(), http.MethodGet, "/v1/status", nil, &st)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node's admin API did not come up: %v\n%s", err, tail(logs.String(), 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}

	type fetch struct {
		ks, table, spec string
		report          struct {
			SSTables []struct {
				Path             string `json:"path"`
				Kind             string `json:"kind"`
				Runs             int    `json:"runs"`
				FillerPartitions int64  `json:"filler_partitions"`
			} `json:"sstables"`
			Failed []string `json:"failed"`
		}
		err error
	}
	var fetches []*fetch
	for i, name := range names {
		fetches = append(fetches, &fetch{ks: "fx", table: name, spec: sliceSpec})
		// One range: one-run partials, whose head the receiver fills.
		fetches = append(fetches, &fetch{ks: "fx", table: name, spec: oneRangeSpec})
		if i == 0 {
			fetches = append(fetches, &fetch{ks: "fx", table: name, spec: fmt.Sprintf("(%d,%d]", int64(-1<<63), int64(-1<<63))})
		}
	}
	for name := range rowsTables {
		fetches = append(fetches, &fetch{ks: "fxrows", table: name, spec: sliceSpec})
	}
	sort.Slice(fetches, func(i, j int) bool { return fetches[i].ks < fetches[j].ks })
	for name, fx := range rowsTables {
		tables["rows:"+name] = fx
	}
	paths := map[string]string{} // path -> its own ranges
	for _, f := range fs {
		paths[f.Path] = ""
	}
	for _, fx := range rowsTables {
		for _, f := range fx {
			paths[f.Path] = ""
		}
	}
	fillers := map[string]map[string]bool{}
	for i, f := range fetches {
		src := tables[f.table]
		if f.ks == "fxrows" {
			src = tables["rows:"+f.table]
		}
		out := filepath.Join(work, "fetched", fmt.Sprint(i), f.ks, filepath.Base(filepath.Dir(src[0].Path)))
		stdout, err := sluice(t, "stream", "fetch", "--peer", streamAddr, "--keyspace", f.ks, "--table", f.table,
			"--ranges", f.spec, "--out", out, "--tls-dir", tlsDir, "--name", "cli", "--json")
		if err == nil {
			err = json.Unmarshal([]byte(stdout), &f.report)
		}
		if err == nil && len(f.report.Failed) > 0 {
			err = fmt.Errorf("fetch failed for %v", f.report.Failed)
		}
		f.err = err
		for _, s := range f.report.SSTables {
			paths[s.Path] = f.spec
			fillers[s.Path] = fillersOf(t, s.Path)
		}
	}
	views := cassandraEach(t, paths)
	kinds, filled := map[string]int{}, 0
	for _, f := range fetches {
		name := f.table + "/" + map[bool]string{true: "whole-ring", false: "two-ranges"}[strings.HasPrefix(f.spec, fmt.Sprintf("(%d,%d]", int64(-1<<63), int64(-1<<63)))]
		if f.spec == oneRangeSpec {
			name = f.table + "/one-range"
		}
		src := tables[f.table]
		if f.ks == "fxrows" {
			name, src = f.table+"/rows-path", tables["rows:"+f.table]
		}
		t.Run(name, func(t *testing.T) {
			if f.err != nil {
				t.Fatal(f.err)
			}
			ranges, err := token.ParseRanges(token.Murmur3, f.spec)
			if err != nil {
				t.Fatal(err)
			}
			var want, got []string
			for _, p := range src {
				for k, d := range inRanges(t, views[p.Path], ranges) {
					want = append(want, k+" "+d)
				}
			}
			for _, s := range f.report.SSTables {
				kinds[s.Kind]++
				if f.ks == "fxrows" && s.Kind != "rows" {
					t.Errorf("fetched %s as %s: a parent with legacy counter shards must come by the rows path", s.Path, s.Kind)
				}
				v := views[s.Path]
				// Every fetched sstable, entire, partial (one run or many) or rows, is an ordinary
				// sstable to every Cassandra reader.
				for _, bad := range cassandraNative(t, v, s.Path, ranges, fillers[s.Path]) {
					t.Error(bad)
				}
				if n := int64(len(fillers[s.Path])); n != s.FillerPartitions {
					t.Errorf("fetched %s: keys marks %d filler partitions, fetch --json says %d", s.Path, n, s.FillerPartitions)
				}
				filled += len(fillers[s.Path])
				rowIndexOK(t, v)
				for _, p := range v.Parts {
					got = append(got, p.Key+" "+p.Digest)
				}
			}
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(want, "\n") != strings.Join(got, "\n") {
				t.Errorf("Cassandra's digests over the fetched sstables (%d) differ from the node's in the ranges (%d)", len(got), len(want))
			}
		})
	}
	t.Logf("fetched sstables by kind: %v; %d filler partitions", kinds, filled)
}

// rowsPathCopies copies four fixture tables into keyspace fxrows of a new data directory with
// hasLegacyCounterShards set in every Statistics.db (rewritten with sluice's Statistics codec,
// CRCs recomputed), so the node must send them by the rows path.
func rowsPathCopies(t *testing.T, tables map[string][]fixture) (string, map[string][]fixture) {
	t.Helper()
	root := filepath.Join(work, "rowsdata")
	out := map[string][]fixture{}
	for _, name := range []string{"wide_big_lz4", "statics_bti_lz4", "collections_big_lz4", "deletions_bti_snappy"} {
		for _, f := range tables[name] {
			dir := filepath.Join(root, "fxrows", filepath.Base(filepath.Dir(f.Path)))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			prefix := strings.TrimSuffix(filepath.Base(f.Path), "Data.db")
			ents, err := os.ReadDir(filepath.Dir(f.Path))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), prefix) {
					b, err := os.ReadFile(filepath.Join(filepath.Dir(f.Path), e.Name()))
					if err == nil {
						err = os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			copyPath := filepath.Join(dir, filepath.Base(f.Path))
			tb, err := sstable.Open(copyPath)
			if err != nil {
				t.Fatal(err)
			}
			tb.Statistics.Stats.HasLegacyCounterShards = true
			b := tb.Statistics.Append(nil, tb.Version())
			statsPath := tb.Path(descriptor.Statistics)
			tb.Close()
			if err := os.WriteFile(statsPath, b, 0o644); err != nil {
				t.Fatal(err)
			}
			g := f
			g.Path = copyPath
			out[name] = append(out[name], g)
		}
	}
	return root, out
}
