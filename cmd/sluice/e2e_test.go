package main

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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// TestMain lets the test binary act as the sluice binary when SLUICE_BE_MAIN is set, so that
// end-to-end tests run real node processes without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_BE_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// Nodes keep their admin token files under the user's configuration directory; the
	// tests' nodes (and child processes) keep theirs in a directory of their own.
	dir, err := os.MkdirTemp("", "sluice-test-config")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort returns a loopback port that was free a moment ago for both TCP and UDP (for a
// child process's flags: a node binds its stream port for QUIC and, with transport tls or
// tcp, for its TCP data listener; memberlist binds its gossip port for both). It stays an
// ephemeral port, which another process may take before the child binds it.
func freePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			pc.Close()
			return port
		}
	}
	t.Fatal("no loopback port free for both TCP and UDP in 100 tries")
	return 0
}

// waitFor polls pred until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, pred func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !pred() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A node runs as its own process; `sluice stream fetch` pulls ranges from it; the fetched
// sstables verify and hold exactly the node's partitions in the ranges; netstats shows the
// session; SIGTERM stops the node cleanly.
func TestNodeProcessServesFetch(t *testing.T) {
	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "tls")
	for _, args := range [][]string{{"cert", "ca", "--dir", tlsDir}, {"cert", "node", "--dir", tlsDir, "--name", "n1"}, {"cert", "node", "--dir", tlsDir, "--name", "cli"}} {
		if code, _, errs := sluice(t, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	data := filepath.Join(dir, "n1")
	v, _ := version.ParseWritable("oa")
	res, err := gen.Generate(context.Background(), data, gen.Options{Version: v, Partitions: 300, PartitionSize: 8 << 10, RowSize: 1 << 10, Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	streamAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var logs bytes.Buffer
	node := exec.Command(os.Args[0], "run", "--name", "n1", "--data-dir", data, "--tls-dir", tlsDir,
		"--stream-addr", streamAddr, "--admin-addr", adminAddr, "--log-format", "json")
	node.Env = append(os.Environ(), "SLUICE_BE_MAIN=1")
	node.Stdout, node.Stderr = &logs, &logs
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- node.Wait() }()
	defer func() {
		if node.ProcessState == nil {
			_ = node.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("node logs:\n%s", logs.String())
		}
	}()
	waitFor(t, 10*time.Second, "the node's admin API", func() bool {
		var st struct{}
		return adminapi.NewClient(adminAddr, "", nil).Call(context.Background(), http.MethodGet, "/v1/status", nil, &st) == nil
	})

	spec := "(-9223372036854775808,-3000000000000000000],(4000000000000000000,7000000000000000000]"
	out := filepath.Join(dir, "fetched", "sluice", filepath.Base(gen.TableDir("", "sluice", "stress")))
	code, stdout, errs := sluice(t, "stream", "fetch", "--peer", streamAddr, "--keyspace", "sluice", "--table", "stress",
		"--ranges", spec, "--out", out, "--tls-dir", tlsDir, "--name", "cli", "--json")
	if code != 0 {
		t.Fatalf("fetch: exit %d: %s %s", code, stdout, errs)
	}
	var rep fetchReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	ranges, _ := token.ParseRanges(token.Murmur3, spec)
	want := map[string]bool{}
	parent, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	_ = parent.ScanPartitions(func(p *sstable.Partition) error {
		if ranges.Contains(p.Token) {
			want[string(p.Key)] = true
		}
		return nil
	})
	parent.Close()
	got := 0
	for _, s := range rep.SSTables {
		if code, out, _ := sluice(t, "sstable", "verify", "--extended", s.Path); code != 0 {
			t.Errorf("fetched %s: %s", s.Path, out)
		}
		tb, err := sstable.Open(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		_ = tb.ScanDataPartitions(func(p *sstable.Partition) error {
			if !want[string(p.Key)] {
				t.Errorf("fetched key %x is not in the ranges (or twice)", p.Key)
			}
			delete(want, string(p.Key))
			got++
			return nil
		})
		tb.Close()
	}
	if len(want) != 0 || got == 0 {
		t.Errorf("fetched %d partitions, %d of the ranges' missing", got, len(want))
	}

	code, stdout, _ = sluice(t, "netstats", "--admin", adminAddr, "--json")
	if code != 0 || !strings.Contains(stdout, "sending") {
		t.Errorf("netstats: exit %d: %s", code, stdout)
	}
	code, stdout, _ = sluice(t, "netstats", "--admin", adminAddr)
	if code != 0 || !strings.Contains(stdout, "complete") {
		t.Errorf("netstats table: exit %d: %s", code, stdout)
	}
	// Without the token even the metrics are refused; Prometheus scrapes with the token file.
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("metrics without the token: %d", resp.StatusCode)
	}
	tok, err := adminapi.Token(adminAddr, "")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+adminAddr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	metrics.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(metrics.String(), `sluice_stream_sessions_total{direction="out",outcome="complete"} 1`) {
		t.Errorf("metrics do not count the session:\n%s", grepLines(metrics.String(), "sluice_stream"))
	}

	if err := node.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("node exited with %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("node did not stop on SIGTERM")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
