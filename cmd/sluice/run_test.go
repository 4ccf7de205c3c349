package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/node"
)

func parseRunFlags(t *testing.T, args ...string) (node.Config, error) {
	t.Helper()
	var rf runFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	addRunFlags(fs, &rf)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return runConfig(fs, rf)
}

func TestRunFlagsOverrideTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	doc := "name: from-file\ndata_dirs: [d1, d2]\nstream_addr: 10.0.0.1:7400\nadmin_addr: 127.0.0.1:9000\n" +
		"tls_dir: tls\nthroughput: {inbound_bytes_per_second: 5}\ntransport: tcp\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	fileCfg := node.Config{
		Name: "from-file", DataDirs: []string{filepath.Join(dir, "d1"), filepath.Join(dir, "d2")},
		StreamAddr: "10.0.0.1:7400", AdminAddr: "127.0.0.1:9000", TLSDir: filepath.Join(dir, "tls"),
		Throughput: adminapi.Throughput{InboundBytesPerSecond: 5}, Transport: node.TransportTCP,
	}
	cfg, err := parseRunFlags(t, "--config", path)
	if err != nil || !reflect.DeepEqual(cfg, fileCfg) {
		t.Fatalf("file alone: %+v, %v", cfg, err)
	}

	cfg, err = parseRunFlags(t, "--config", path, "--name", "from-flag", "--data-dir", "/x", "--data-dir", "/y",
		"--stream-addr", ":7500", "--admin-addr", "127.0.0.1:7501", "--tls-dir", "/certs")
	if err != nil {
		t.Fatal(err)
	}
	want := fileCfg
	want.Name, want.DataDirs, want.StreamAddr, want.AdminAddr, want.TLSDir = "from-flag", []string{"/x", "/y"}, ":7500", "127.0.0.1:7501", "/certs"
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("overridden:\n%+v\nwant\n%+v", cfg, want)
	}

	// Without a file the flags are the whole configuration.
	cfg, err = parseRunFlags(t, "--name", "n", "--data-dir", "/d", "--tls-dir", "/t")
	if err != nil || !reflect.DeepEqual(cfg, node.Config{Name: "n", DataDirs: []string{"/d"}, TLSDir: "/t"}) {
		t.Fatalf("flags alone: %+v, %v", cfg, err)
	}
}

func TestRunRejectsABadConfigurationAsUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: n\nthroughput: {outbound: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"run", "--data-dir", dir, "--tls-dir", dir}, "name: required"},
		{[]string{"run", "--name", "a b", "--data-dir", dir, "--tls-dir", dir}, "config: name:"},
		{[]string{"run", "--name", "n", "--data-dir", dir, "--tls-dir", dir, "--admin-addr", "nowhere"}, "config: admin_addr:"},
		{[]string{"run", "--config", bad}, "field outbound not found"},
		{[]string{"run", "--config", filepath.Join(dir, "missing.yaml")}, "no such file"},
	} {
		code, _, errs := sluice(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d: %s", tc.args, code, errs)
		}
	}
}

// sluice run serves the admin API that netstats and setstreamthroughput talk to, and stops
// cleanly when its context ends (as on SIGINT).
func TestRunServesTheAdminAPIUntilCancelled(t *testing.T) {
	data, tls := t.TempDir(), t.TempDir()
	for _, args := range [][]string{{"cert", "ca", "--dir", tls, "--force"}, {"cert", "node", "--dir", tls, "--name", "n1"}} {
		if code, _, errs := sluice(t, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	admin := deadAddr(t)
	root := newRootCmd()
	var out, errb lockedBuffer // the node logs from several goroutines
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"--log-format", "json", "run", "--name", "n1", "--data-dir", data, "--tls-dir", tls,
		"--stream-addr", "127.0.0.1:0", "--admin-addr", admin})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	c, err := newAdminClient(admin)
	if err != nil {
		t.Fatal(err)
	}
	var st adminapi.Status
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := c.call(ctx, http.MethodGet, "/v1/status", nil, &st)
		if err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run returned %v: %s", err, errb.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin API not up after 10s: %v", err)
		}
	}
	if st.Name != "n1" || st.AdminAddr != admin || len(st.DataDirs) != 1 || st.DataDirs[0] != data {
		t.Fatalf("status %+v", st)
	}
	var streams adminapi.StreamsResponse
	if err := c.call(ctx, http.MethodGet, "/v1/streams", nil, &streams); err != nil || len(streams.Sessions) != 0 {
		t.Fatalf("streams %+v, %v", streams, err)
	}
	out5 := int64(5 << 20)
	var now adminapi.Throughput
	if err := c.call(ctx, http.MethodPost, "/v1/throughput", adminapi.ThroughputRequest{OutboundBytesPerSecond: &out5}, &now); err != nil ||
		now != (adminapi.Throughput{OutboundBytesPerSecond: 5 << 20}) {
		t.Fatalf("throughput %+v, %v", now, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not stop")
	}
	if err := c.call(context.Background(), http.MethodGet, "/v1/status", nil, &st); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("admin API still answering after run stopped: %v", err)
	}
	if !strings.Contains(errb.String(), `"message":"node stopped"`) {
		t.Fatalf("log:\n%s", errb.String())
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
