package interop

import (
	"bytes"
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
// shards) has no input here: no available sstable has legacy shards and CQLSSTableWriter refuses
// counters, so it reports not-run.
func TestStreamFetchedReadByCassandra(t *testing.T) {
	need(t)
	fs := fixtures(t)
	names, tables := byTable(fs)
	// The data directories: the roots of the fixtures' <ks>/<table>-<id>/ trees.
	var dataArgs []string
	roots := map[string]bool{}
	for _, f := range fs {
		if root := filepath.Dir(filepath.Dir(filepath.Dir(f.Path))); !roots[root] {
			roots[root] = true
			dataArgs = append(dataArgs, "--data-dir", root)
		}
	}
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
		r, err := http.Get("http://" + adminAddr + "/v1/status")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node's admin API did not come up: %v\n%s", err, tail(logs.String(), 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}

	type fetch struct {
		table, spec string
		report      struct {
			SSTables []struct {
				Path string `json:"path"`
				Kind string `json:"kind"`
			} `json:"sstables"`
			Failed []string `json:"failed"`
		}
		err error
	}
	var fetches []*fetch
	for i, name := range names {
		fetches = append(fetches, &fetch{table: name, spec: sliceSpec})
		if i == 0 {
			fetches = append(fetches, &fetch{table: name, spec: fmt.Sprintf("(%d,%d]", int64(-1<<63), int64(-1<<63))})
		}
	}
	paths := []string{}
	for _, f := range fs {
		paths = append(paths, f.Path)
	}
	for i, f := range fetches {
		out := filepath.Join(work, "fetched", fmt.Sprint(i), "fx", filepath.Base(filepath.Dir(tables[f.table][0].Path)))
		stdout, err := sluice(t, "stream", "fetch", "--peer", streamAddr, "--keyspace", "fx", "--table", f.table,
			"--ranges", f.spec, "--out", out, "--tls-dir", tlsDir, "--name", "cli", "--json")
		if err == nil {
			err = json.Unmarshal([]byte(stdout), &f.report)
		}
		if err == nil && len(f.report.Failed) > 0 {
			err = fmt.Errorf("fetch failed for %v", f.report.Failed)
		}
		f.err = err
		for _, s := range f.report.SSTables {
			paths = append(paths, s.Path)
		}
	}
	views := cassandra(t, paths...)
	kinds, deadPrefix := map[string]int{}, 0
	for _, f := range fetches {
		name := f.table + "/" + map[bool]string{true: "whole-ring", false: "two-ranges"}[strings.HasPrefix(f.spec, fmt.Sprintf("(%d,%d]", int64(-1<<63), int64(-1<<63)))]
		t.Run(name, func(t *testing.T) {
			if f.err != nil {
				t.Fatal(f.err)
			}
			ranges, err := token.ParseRanges(token.Murmur3, f.spec)
			if err != nil {
				t.Fatal(err)
			}
			var want, got []string
			for _, p := range tables[f.table] {
				for k, d := range inRanges(t, views[p.Path], ranges) {
					want = append(want, k+" "+d)
				}
			}
			for _, s := range f.report.SSTables {
				kinds[s.Kind]++
				v := views[s.Path]
				if !v.readOK() || !v.metaOK() || !strings.HasPrefix(v.Basic, "ok") {
					t.Errorf("fetched %s sstable %s: read %s; metadata %s; sstableverify %s", s.Kind, s.Path, v.Read, v.Meta, v.Basic)
				}
				rowIndexOK(t, v)
				for _, p := range v.Parts {
					got = append(got, p.Key+" "+p.Digest)
				}
				// Like split's reflink/copy children: only a partial sstable starting with a
				// dead prefix fails sstableverify -e and Cassandra's sequential read.
				if ks := sluiceKeys(t, s.Path); len(ks) > 0 && ks[0].Position > 0 {
					deadPrefix++
					if v.scanAgrees() || !strings.Contains(v.Extended, "First row position from index != 0") {
						t.Errorf("fetched %s with a %d-byte dead prefix: sstableverify -e %q; sequential read %q", s.Path, ks[0].Position, v.Extended, v.Scan)
					}
				} else if !strings.HasPrefix(v.Extended, "ok") || !v.scanAgrees() {
					t.Errorf("fetched %s sstable %s: sstableverify -e %s; sequential read %s", s.Kind, s.Path, v.Extended, v.Scan)
				}
			}
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(want, "\n") != strings.Join(got, "\n") {
				t.Errorf("Cassandra's digests over the fetched sstables (%d) differ from the node's in the ranges (%d)", len(got), len(want))
			}
		})
	}
	t.Run("rows-path", func(t *testing.T) {
		t.Skip("not-run: the rows path needs an sstable zero-copy refuses (legacy counter shards); none of the available sstables has them and CQLSSTableWriter refuses counters")
	})
	t.Logf("fetched sstables by kind: %v; %d with a dead prefix", kinds, deadPrefix)
}
