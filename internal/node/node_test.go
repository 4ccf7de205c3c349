package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
	"github.com/sluicedb/sluice/stream"
)

// fakeStream is a StreamServer that binds a real TCP listener, so a test can see it closed.
type fakeStream struct {
	ln       net.Listener
	cfg      StreamConfig
	cat      stream.Catalog
	sessions []stream.SessionStatus
	fail     error // returned by Serve at once when set

	mu   sync.Mutex
	sets [][2]int64
}

func (f *fakeStream) Serve(ctx context.Context) error {
	defer f.ln.Close()
	if f.fail != nil {
		return f.fail
	}
	<-ctx.Done()
	return ctx.Err() // as stream.Server does; the node takes it for a clean stop
}

func (f *fakeStream) Addr() net.Addr                   { return f.ln.Addr() }
func (f *fakeStream) Sessions() []stream.SessionStatus { return f.sessions }
func (f *fakeStream) SetThroughput(out, in int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets = append(f.sets, [2]int64{out, in})
}

func (f *fakeStream) throughputCalls() [][2]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][2]int64(nil), f.sets...)
}

// hook returns a NewStreamServerFunc that binds cfg.Addr and stores the server in *fs.
func hook(t *testing.T, fs **fakeStream, sessions []stream.SessionStatus, fail error) NewStreamServerFunc {
	return func(cfg StreamConfig, cat stream.Catalog, log zerolog.Logger) (StreamServer, error) {
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			return nil, err
		}
		f := &fakeStream{ln: ln, cfg: cfg, cat: cat, sessions: sessions, fail: fail}
		*fs = f
		return f, nil
	}
}

func testConfig(t *testing.T) Config {
	return Config{
		Name:       "n1",
		DataDirs:   []string{t.TempDir()},
		StreamAddr: "127.0.0.1:0",
		AdminAddr:  "127.0.0.1:0",
		TLSDir:     t.TempDir(),
	}
}

type running struct {
	node   *Node
	cancel context.CancelFunc
	done   chan error
}

// start runs a node until the test ends and waits until it is ready.
func start(t *testing.T, opts Options) *running {
	t.Helper()
	n, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{node: n, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	select {
	case <-n.Ready():
	case err := <-r.done:
		t.Fatalf("Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("node not ready after 10s")
	}
	return r
}

func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
		return nil
	}
}

func (r *running) url(path string) string {
	return "http://" + r.node.AdminAddr().String() + path
}

// call makes a request and decodes a JSON answer into out (when not nil); it returns the code.
func call(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// The operator's request: the node's token, JSON for a change.
	tok, err := AdminToken(req.URL.Host, "")
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); out != nil && ct != "application/json" {
		t.Fatalf("%s %s: content type %q", method, url, ct)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, b)
		}
	}
	return resp.StatusCode
}

func generate(t *testing.T, root, keyspace, table string, seed uint64) gen.Result {
	t.Helper()
	v, err := version.ParseWritable("nb")
	if err != nil {
		t.Fatal(err)
	}
	res, err := gen.Generate(context.Background(), root, gen.Options{
		Version: v, Partitions: 20, PartitionSize: 4096, RowSize: 1024, Seed: seed,
		Keyspace: keyspace, Table: table,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if e.Type().IsRegular() {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			n += fi.Size()
		}
	}
	return n
}

func TestStatusListsTheTablesOfEveryDataDirectory(t *testing.T) {
	cfg := testConfig(t)
	missing := filepath.Join(t.TempDir(), "created", "at", "start")
	cfg.DataDirs = append(cfg.DataDirs, missing)
	a := generate(t, cfg.DataDirs[0], "ks1", "users", 1)
	b := generate(t, cfg.DataDirs[0], "ks1", "users", 2)
	c := generate(t, cfg.DataDirs[0], "ks2", "events", 3)
	if a.Desc.Dir != b.Desc.Dir {
		t.Fatalf("one table, two directories: %s %s", a.Desc.Dir, b.Desc.Dir)
	}
	// An sstable without its TOC is not live and is not counted.
	if err := os.Remove(c.Desc.Path(descriptor.TOC)); err != nil {
		t.Fatal(err)
	}
	var fs *fakeStream
	r := start(t, Options{Config: cfg, NewStreamServer: hook(t, &fs, nil, nil)})
	if fi, err := os.Stat(missing); err != nil || !fi.IsDir() {
		t.Fatalf("missing data directory not created: %v", err)
	}

	var s Status
	if code := call(t, "GET", r.url("/v1/status"), "", &s); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if s.Name != "n1" || s.AdminAddr != r.node.AdminAddr().String() || s.StreamAddr != fs.Addr().String() ||
		!s.Streaming || s.Transport != string(TransportQUIC) || len(s.DataDirs) != 2 || s.UptimeSeconds < 0 || s.Started.IsZero() {
		t.Fatalf("status %+v", s)
	}
	_, _, usersID, _ := descriptor.TableDir(a.Desc.Dir)
	_, _, eventsID, _ := descriptor.TableDir(c.Desc.Dir)
	want := []TableStatus{
		{Keyspace: "ks1", Table: "users", ID: usersID, Dirs: []string{a.Desc.Dir}, SSTables: 2, Bytes: dirBytes(t, a.Desc.Dir)},
		{Keyspace: "ks2", Table: "events", ID: eventsID, Dirs: []string{c.Desc.Dir}, SSTables: 0, Bytes: 0},
	}
	if len(s.Tables) != len(want) {
		t.Fatalf("tables %+v", s.Tables)
	}
	for i := range want {
		got := s.Tables[i]
		if got.Keyspace != want[i].Keyspace || got.Table != want[i].Table || got.ID != want[i].ID ||
			got.SSTables != want[i].SSTables || got.Bytes != want[i].Bytes || strings.Join(got.Dirs, ",") != strings.Join(want[i].Dirs, ",") {
			t.Errorf("table %d: got %+v want %+v", i, got, want[i])
		}
	}
}

func TestTheHookGetsTheConfigWithDefaultsTheCatalogAndTheMetrics(t *testing.T) {
	cfg := testConfig(t)
	cfg.Throughput.InboundBytesPerSecond = 5 << 20
	var fs *fakeStream
	r := start(t, Options{Config: cfg, NewStreamServer: hook(t, &fs, nil, nil)})
	want := StreamConfig{
		Name: "n1", Addr: "127.0.0.1:0", TLSDir: cfg.TLSDir, Transport: TransportQUIC,
		Throughput: Throughput{InboundBytesPerSecond: 5 << 20},
		Timeouts:   Timeouts{Idle: DefaultIdleTimeout, Handshake: DefaultHandshakeTimeout, Keepalive: DefaultKeepalive},
		Memory:     Memory{MaxInFlightBytes: DefaultMaxInFlightBytes},
		Metrics:    r.node.Metrics(),
	}
	got := fs.cfg
	if got.Authorize == nil || got.Protocols[peerrpc.ALPN] == nil {
		t.Fatal("hook config lacks the node's authorizer or peer protocol")
	}
	got.Authorize, got.Protocols = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hook config %+v\nwant %+v", fs.cfg, want)
	}
	if fs.cat != stream.Catalog(r.node.Catalog()) {
		t.Fatal("hook did not get the node's catalog")
	}
	if got := r.node.StreamAddr(); got == nil || got.String() != fs.Addr().String() {
		t.Fatalf("StreamAddr %v", got)
	}
}

func TestStreamsReturnsTheServersSessions(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	sessions := []stream.SessionStatus{
		{ID: "s1", Peer: "10.0.0.2:7400", Direction: stream.Sending, Keyspace: "ks", Table: "t", Operation: "bootstrap",
			State: "streaming", FilesDone: 1, FilesTotal: 3, BytesDone: 100, BytesTotal: 300, RateBytes: 50, Started: now, Updated: now},
		{ID: "s2", Peer: "10.0.0.3:7400", Direction: stream.Receiving, Keyspace: "ks", Table: "u", State: "failed", Error: "digest mismatch"},
	}
	var fs *fakeStream
	r := start(t, Options{Config: testConfig(t), NewStreamServer: hook(t, &fs, sessions, nil)})
	var got StreamsResponse
	if code := call(t, "GET", r.url("/v1/streams"), "", &got); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if len(got.Sessions) != 2 || got.Sessions[0] != sessions[0] || got.Sessions[1] != sessions[1] {
		t.Fatalf("sessions %+v", got.Sessions)
	}
}

func TestWithoutAStreamServerTheNodeServesStatusAndNoSessions(t *testing.T) {
	r := start(t, Options{Config: testConfig(t)})
	var got map[string]json.RawMessage
	if code := call(t, "GET", r.url("/v1/streams"), "", &got); code != http.StatusOK || string(got["sessions"]) != "[]" {
		t.Fatalf("streams %d %s", code, got["sessions"])
	}
	var s Status
	if code := call(t, "GET", r.url("/v1/status"), "", &s); code != http.StatusOK || s.Streaming || s.StreamAddr != "127.0.0.1:0" {
		t.Fatalf("status %d %+v", code, s)
	}
	if r.node.StreamAddr() != nil {
		t.Fatal("StreamAddr without a stream server")
	}
	if err := r.node.SetThroughput(Throughput{OutboundBytesPerSecond: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestThroughputReachesTheServerAndTheGauges(t *testing.T) {
	cfg := testConfig(t)
	cfg.Throughput = Throughput{OutboundBytesPerSecond: 7, InboundBytesPerSecond: 9}
	var fs *fakeStream
	r := start(t, Options{Config: cfg, NewStreamServer: hook(t, &fs, nil, nil)})
	if !strings.Contains(metricsText(t, r), `sluice_stream_throughput_limit_bytes_per_second{direction="out"} 7`) {
		t.Fatal("start-up limits not in the gauges")
	}

	var got Throughput
	if code := call(t, "POST", r.url("/v1/throughput"), `{"outbound_bytes_per_second": 104857600, "inbound_bytes_per_second": 0}`, &got); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if got != (Throughput{OutboundBytesPerSecond: 100 << 20}) {
		t.Fatalf("answer %+v", got)
	}
	// One field alone changes only its direction.
	if code := call(t, "POST", r.url("/v1/throughput"), `{"inbound_bytes_per_second": 2048}`, &got); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	want := Throughput{OutboundBytesPerSecond: 100 << 20, InboundBytesPerSecond: 2048}
	if got != want {
		t.Fatalf("answer %+v", got)
	}
	if calls := fs.throughputCalls(); len(calls) != 2 || calls[0] != [2]int64{100 << 20, 0} || calls[1] != [2]int64{100 << 20, 2048} {
		t.Fatalf("server saw %v", calls)
	}
	if code := call(t, "GET", r.url("/v1/throughput"), "", &got); code != http.StatusOK || got != want {
		t.Fatalf("GET throughput %d %+v", code, got)
	}
	text := metricsText(t, r)
	for _, line := range []string{
		`sluice_stream_throughput_limit_bytes_per_second{direction="out"} 1.048576e+08`,
		`sluice_stream_throughput_limit_bytes_per_second{direction="in"} 2048`,
	} {
		if !strings.Contains(text, line) {
			t.Errorf("metrics lack %s", line)
		}
	}

	for _, body := range []string{
		``, `{}`, `nonsense`, `{"outbound_bytes_per_second": -1}`, `{"inbound_bytes_per_second": "fast"}`,
		`{"outbound": 1}`, `{"outbound_bytes_per_second": 1} {}`, `[1]`,
		`{"outbound_bytes_per_second": ` + strings.Repeat("1", 64<<10) + `}`,
	} {
		var e ErrorResponse
		if code := call(t, "POST", r.url("/v1/throughput"), body, &e); code != http.StatusBadRequest || e.Error == "" {
			t.Errorf("%.40q: %d %q", body, code, e.Error)
		}
	}
	if calls := fs.throughputCalls(); len(calls) != 2 {
		t.Fatalf("a bad request reached the server: %v", calls)
	}
}

func TestUnknownPathsAndMethodsGetJSONErrors(t *testing.T) {
	r := start(t, Options{Config: testConfig(t)})
	var e ErrorResponse
	if code := call(t, "GET", r.url("/v1/nothing"), "", &e); code != http.StatusNotFound || !strings.Contains(e.Error, "/v1/nothing") {
		t.Fatalf("%d %q", code, e.Error)
	}
	if code := call(t, "DELETE", r.url("/v1/status"), "", &e); code != http.StatusMethodNotAllowed || e.Error == "" {
		t.Fatalf("%d %q", code, e.Error)
	}
}

func metricsText(t *testing.T, r *running) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.url("/metrics"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := AdminToken(req.URL.Host, "")
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return string(b)
}

func TestMetricsServesTheStreamCollectorsInPrometheusText(t *testing.T) {
	r := start(t, Options{Config: testConfig(t)})
	m := r.node.Metrics()
	m.BytesStreamed.WithLabelValues(DirOut, KindPartial).Add(4096)
	m.FilesStreamed.WithLabelValues(DirIn, KindRows).Inc()
	m.SlicesRefused.WithLabelValues("overloaded").Inc()
	m.CRCFailures.Inc()
	m.DigestFailures.Add(2)
	m.Sessions.WithLabelValues(DirIn, OutcomeFailed).Inc()
	text := metricsText(t, r)
	for _, line := range []string{
		`# TYPE sluice_stream_bytes_total counter`,
		`sluice_stream_bytes_total{direction="out",kind="partial"} 4096`,
		`sluice_stream_bytes_total{direction="in",kind="entire"} 0`,
		`sluice_stream_files_total{direction="in",kind="rows"} 1`,
		`sluice_stream_refused_slices_total{reason="overloaded"} 1`,
		`sluice_stream_crc_failures_total 1`,
		`sluice_stream_digest_failures_total 2`,
		`sluice_stream_sessions_total{direction="in",outcome="failed"} 1`,
		`sluice_stream_sessions_total{direction="out",outcome="complete"} 0`,
		`sluice_stream_throughput_limit_bytes_per_second{direction="in"} 0`,
		`sluice_gossip_rejected_total{reason="bad_signature"} 0`,
		`go_goroutines `,
	} {
		if !strings.Contains(text, line+"") {
			t.Errorf("metrics lack %q", line)
		}
	}
	// Two nodes in one process have registries of their own.
	r2 := start(t, Options{Config: testConfig(t)})
	if strings.Contains(metricsText(t, r2), `sluice_stream_crc_failures_total 1`) {
		t.Fatal("registries are shared")
	}
}

func TestStartRemovesLeftoversOfInterruptedInstallsAndOldSnapshots(t *testing.T) {
	cfg := testConfig(t)
	res := generate(t, cfg.DataDirs[0], "ks", "t", 1)
	dir := res.Desc.Dir
	before := dirBytes(t, dir)
	leftover := filepath.Join(dir, fsx.TempPrefix+"abc-nb-2-big-Data.db")
	if err := os.WriteFile(leftover, []byte("half a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, catalog.SnapshotsDir, catalog.HoldPrefix+"0123456789abcdef")
	operator := filepath.Join(dir, catalog.SnapshotsDir, "before-upgrade")
	for _, d := range []string{stale, operator} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(res.Desc.Path(descriptor.Data), filepath.Join(d, res.Desc.Filename(descriptor.Data))); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncBuffer
	start(t, Options{Config: cfg, Logger: zerolog.New(&logs)})
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover still there: %v", err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale stream snapshot still there: %v", err)
	}
	if _, err := os.Stat(operator); err != nil {
		t.Fatalf("an operator's snapshot was touched: %v", err)
	}
	if after := dirBytes(t, dir); after != before {
		t.Fatalf("the live sstable changed: %d bytes, was %d", after, before)
	}
	if !strings.Contains(logs.String(), filepath.Base(leftover)) || !strings.Contains(logs.String(), `"node":"n1"`) {
		t.Fatalf("removal not logged:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer the node's goroutines may log into while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestCancellingTheContextShutsDownCleanly(t *testing.T) {
	var fs *fakeStream
	r := start(t, Options{Config: testConfig(t), NewStreamServer: hook(t, &fs, nil, nil)})
	admin, streamAddr := r.node.AdminAddr().String(), fs.Addr().String()
	for _, a := range []string{admin, streamAddr} {
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatalf("%s not listening: %v", a, err)
		}
		c.Close()
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, a := range []string{admin, streamAddr} {
		if c, err := net.Dial("tcp", a); err == nil {
			c.Close()
			t.Errorf("%s still listening after Run returned", a)
		}
	}
	if err := r.node.Run(context.Background()); !errors.Is(err, ErrAlreadyRun) {
		t.Fatalf("second Run: %v", err)
	}
}

func TestAFailingStreamServerStopsTheNode(t *testing.T) {
	boom := errors.New("boom")
	var fs *fakeStream
	n, err := New(Options{Config: testConfig(t), NewStreamServer: hook(t, &fs, nil, boom)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Run(context.Background()) }()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return")
	}
	if c, err := net.Dial("tcp", n.AdminAddr().String()); err == nil {
		c.Close()
		t.Fatal("admin still listening")
	}
}

func TestAHookErrorFailsRun(t *testing.T) {
	boom := errors.New("no certificate")
	n, err := New(Options{Config: testConfig(t), NewStreamServer: func(StreamConfig, stream.Catalog, zerolog.Logger) (StreamServer, error) {
		return nil, boom
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Run: %v", err)
	}
	if n.AdminAddr() != nil {
		t.Fatal("not ready, yet an admin address")
	}
}

// A fetch names its table with Cassandra identifiers only: a traversal is refused before any
// directory is made, wherever the request came from.
func TestAFetchOfATraversalNameCreatesNothing(t *testing.T) {
	cfg := testConfig(t)
	r := start(t, Options{Config: cfg})
	outside := filepath.Join(filepath.Dir(cfg.DataDirs[0]), "escaped")
	for _, req := range []FetchOpRequest{
		{Source: "n2", Peer: "127.0.0.1:1", Keyspace: "../../../.." + outside, Table: "x", TableID: strings.Repeat("0", 32), Ranges: "(0,1]"},
		{Source: "n2", Peer: "127.0.0.1:1", Keyspace: "ks", Table: "../x", TableID: strings.Repeat("0", 32), Ranges: "(0,1]"},
	} {
		_, err := r.node.Fetch(context.Background(), req)
		var br badRequest
		if !errors.As(err, &br) {
			t.Errorf("Fetch %s.%s: %v, want a bad request", req.Keyspace, req.Table, err)
		}
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v", outside, err)
	}
	ents, _ := os.ReadDir(cfg.DataDirs[0])
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("the data directory gained %s", e.Name())
		}
	}
}
