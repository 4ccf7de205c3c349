package main

// Hostile peers against a real node process: each test is one finding of issue 14, played
// on loopback by a Go program holding exactly the keys the attacker is assumed to hold.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/lib/tlsx"
	nodepkg "github.com/sluicedb/sluice/internal/node"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
	"github.com/sluicedb/sluice/stream"
	"github.com/sluicedb/sluice/wire"
)

// victim is one node process with membership (a cluster of one) holding sluice.stress, and
// the key material an attacker might have: the gossip key, certificates of the cluster CA
// (node "peer", client "app") and of another CA ("mallory").
type victim struct {
	dir, tlsDir, evilDir string
	data                 string // the node's data directory
	tableDir             string
	stream, admin        string
	gossip               string
	key                  []byte
	proc                 *exec.Cmd
}

// startVictim starts the node; extra is appended to its YAML configuration.
func startVictim(t *testing.T, extra ...string) *victim {
	t.Helper()
	dir := t.TempDir()
	v := &victim{dir: dir, tlsDir: filepath.Join(dir, "tls"), evilDir: filepath.Join(dir, "evil"), data: filepath.Join(dir, "data")}
	for _, args := range [][]string{
		{"cert", "ca", "--dir", v.tlsDir}, {"cert", "node", "--dir", v.tlsDir, "--name", "n1"},
		{"cert", "node", "--dir", v.tlsDir, "--name", "peer"}, {"cert", "node", "--dir", v.tlsDir, "--name", "peer2"},
		{"cert", "client", "--dir", v.tlsDir, "--name", "app"},
		{"cert", "ca", "--dir", v.evilDir}, {"cert", "node", "--dir", v.evilDir, "--name", "mallory"},
	} {
		if code, _, errs := sluice(t, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	ver, _ := version.ParseWritable("nb")
	res, err := gen.Generate(context.Background(), v.data, gen.Options{Version: ver, Partitions: 200, PartitionSize: 4 << 10,
		RowSize: 1 << 10, Seed: 3, Keyspace: "sluice", Table: "stress"})
	if err != nil {
		t.Fatal(err)
	}
	v.tableDir = res.Desc.Dir
	v.key = make([]byte, 32)
	rand.Read(v.key)
	keyFile := filepath.Join(dir, "cluster.key")
	if err := os.WriteFile(keyFile, v.key, 0o600); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; !v.start(t, keyFile, extra); attempt++ {
		if attempt == 3 {
			t.Fatalf("the node lost a port it was given %d times", attempt)
		}
	}
	return v
}

// start writes the node's configuration with ports free a moment ago and starts it; it
// returns once the node's ring is up, or false when the node exited because one of its ports
// was taken meanwhile (they are ephemeral ports: any process's outgoing connection may get
// one between freePort and the node's bind).
func (v *victim) start(t *testing.T, keyFile string, extra []string) bool {
	t.Helper()
	v.stream = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	v.admin = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	v.gossip = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf(`name: n1
data_dirs: [%s]
stream_addr: %s
admin_addr: %s
tls_dir: %s
gossip_addr: %s
cluster_key_file: %s
num_tokens: 4
keyspaces:
  sluice: {class: SimpleStrategy, replication_factor: 1}
timeouts: {idle: 3s, keepalive: 1s, handshake: 3s}
%s
`, v.data, v.stream, v.admin, v.tlsDir, v.gossip, keyFile, strings.Join(extra, "\n"))
	cfgFile := filepath.Join(v.dir, "sluice.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	proc := exec.Command(os.Args[0], "run", "--config", cfgFile, "--log-format", "json")
	proc.Env = append(os.Environ(), "SLUICE_BE_MAIN=1")
	proc.Stdout, proc.Stderr = logs, logs
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	v.proc = proc
	exited := make(chan struct{})
	go func() { proc.Wait(); close(exited) }()
	t.Cleanup(func() {
		proc.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			proc.Process.Kill()
			<-exited
		}
		if t.Failed() || os.Getenv("SLUICE_TEST_LOGS") != "" {
			t.Logf("node logs:\n%s", logs.String())
		}
	})
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var r adminapi.RingView
		err := adminapi.NewClient(v.admin, "", nil).Call(context.Background(), http.MethodGet, "/v1/ring?load=false", nil, &r)
		if err == nil && r.State == "NORMAL" && len(r.Tokens) == 4 {
			return true
		}
		select {
		case <-exited:
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "address already in use") {
					t.Logf("a port of the node was taken before it bound it; starting it again on others: %s", line)
					return false
				}
			}
			t.Fatalf("the node exited while starting: %s", proc.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the node's ring")
		}
	}
}

func (v *victim) admin_(t *testing.T, method, path string, body, out any) error {
	t.Helper()
	return adminapi.NewClient(v.admin, "", nil).Call(context.Background(), method, path, body, out)
}

func (v *victim) liveSSTables(t *testing.T) []string {
	t.Helper()
	toc, _ := filepath.Glob(filepath.Join(v.tableDir, "*-TOC.txt"))
	return toc
}

// Finding 1: a member holding the gossip key but no certificate of the cluster CA (here one
// from another CA, served at the stream address it announces) claims the ring with 1,500
// tokens. It never owns a range: status lists it as refused, the node still owns the whole
// ring, and a cleanup keeps every sstable. A set over the plausibility cap is refused too.
func TestHostileGossipMemberNeverOwnsTokens(t *testing.T) {
	v := startVictim(t)
	before := v.liveSSTables(t)

	// The impostor serves the peer protocol with a certificate of its own CA.
	evil, err := tlsx.Load(v.evilDir, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	stc := evil.ServerConfig()
	stc.NextProtos = []string{peerrpc.ALPN, wire.ALPN}
	stc.ClientAuth = tls.RequireAnyClientCert
	ln, err := quic.ListenAddr("127.0.0.1:0", stc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			c.CloseWithError(0, "")
		}
	}()

	join := func(name string, n int, streamAddr string) *gossip.Gossip {
		g, err := gossip.New(gossip.Config{Name: name, BindAddr: "127.0.0.1:0", Seeds: []string{v.gossip}, ClusterKey: v.key, Label: "sluice",
			Meta: gossip.NodeMeta{StreamAddr: streamAddr, AdminAddr: streamAddr, DC: "dc1", Rack: "rack1"}, Log: zerolog.Nop()}.ForTests())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Start(ctx); err != nil {
			t.Fatal(err)
		}
		toks := make([]int64, n)
		for i := range toks {
			toks[i] = math.MinInt64 + 1 + int64(i)*(math.MaxInt64/int64(n))*2
		}
		if err := g.SetTokens(toks); err != nil && n <= gossip.MaxTokensPerNode {
			t.Fatal(err)
		}
		if err := g.SetMeta(gossip.NodeMeta{StreamAddr: streamAddr, AdminAddr: streamAddr, DC: "dc1", Rack: "rack1", State: ring.Normal}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Shutdown() })
		return g
	}
	join("mallory", 1500, ln.Addr().String())

	var view adminapi.RingView
	waitFor(t, 20*time.Second, "the node to judge mallory", func() bool {
		if v.admin_(t, http.MethodGet, "/v1/ring?load=false", nil, &view) != nil {
			return false
		}
		for _, m := range view.Members {
			if m.Name == "mallory" && m.Identity == "refused" {
				return true
			}
		}
		return false
	})
	for _, m := range view.Members {
		switch m.Name {
		case "mallory":
			if m.Ownership != 0 || !strings.Contains(m.IdentityError, "certificate") {
				t.Errorf("mallory: ownership %v, identity error %q", m.Ownership, m.IdentityError)
			}
		case "n1":
			if math.Abs(m.Ownership-1) > 1e-9 {
				t.Errorf("n1 owns %v of the ring with an impostor about", m.Ownership)
			}
		}
	}
	for _, tk := range view.Tokens {
		if tk.Node != "n1" {
			t.Fatalf("ring holds a token of %s", tk.Node)
		}
	}
	code, out, errs := sluice(t, "status", "--admin", v.admin)
	if code != 0 || !strings.Contains(out, "identity of mallory refused") {
		t.Errorf("status: exit %d: %s %s", code, out, errs)
	}

	// A cleanup now has nothing to drop.
	var st adminapi.OpStatus
	if err := v.admin_(t, http.MethodPost, "/v1/ops/cleanup", adminapi.CleanupRequest{}, &st); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the cleanup", func() bool {
		var ops adminapi.OpsResponse
		if v.admin_(t, http.MethodGet, "/v1/ops", nil, &ops) != nil {
			return false
		}
		for _, o := range ops.Ops {
			if o.ID == st.ID && o.State != adminapi.OpRunning {
				st = o
				return true
			}
		}
		return false
	})
	if st.State != adminapi.OpComplete {
		t.Fatalf("cleanup: %+v", st)
	}
	for _, c := range st.Cleanup {
		if c.Action != adminapi.CleanupKept {
			t.Errorf("cleanup %s: %s (kept %d of %d)", c.SSTable, c.Action, c.Kept, c.Partitions)
		}
	}
	if after := v.liveSSTables(t); len(after) != len(before) {
		t.Errorf("sstables %d before, %d after the cleanup", len(before), len(after))
	}

	// Over the plausibility cap, even a proven member would be refused; gossip refuses to
	// announce such a set at all.
	g, err := gossip.New(gossip.Config{Name: "greedy", BindAddr: "127.0.0.1:0", ClusterKey: v.key, Label: "sluice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetTokens(make([]int64, gossip.MaxTokensPerNode+1)); !errors.Is(err, gossip.ErrInvalidTokens) {
		t.Errorf("a set of %d tokens: %v", gossip.MaxTokensPerNode+1, err)
	}
}

// Finding 2: the admin API answers only its operator. A page's cross-origin text/plain POST,
// a DNS-rebinding Host, a request without the token, a change without JSON, and a name that
// climbs out of the data directory are all refused, and nothing is created.
func TestHostileAdminRequestsAreRefused(t *testing.T) {
	v := startVictim(t)
	tok, err := adminapi.Token(v.admin, "")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(mustTokenFile(t, v.admin)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi.Mode(), err)
	}
	do := func(host, origin, ctype, auth, path, body string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+v.admin+path, strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		for k, val := range map[string]string{"Origin": origin, "Content-Type": ctype, "Authorization": auth} {
			if val != "" {
				req.Header.Set(k, val)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: a CORS header", path)
		}
		return resp.StatusCode
	}
	bearer := "Bearer " + tok
	for _, tc := range []struct {
		name                      string
		host, origin, ctype, auth string
		want                      int
	}{
		{"a web page's simple POST", "", "http://evil.example", "text/plain", "", http.StatusForbidden},
		{"a page with a guessed token", "", "http://evil.example", "application/json", bearer, http.StatusForbidden},
		{"DNS rebinding", "evil.example:" + strings.Split(v.admin, ":")[1], "", "application/json", bearer, http.StatusMisdirectedRequest},
		{"no token", "", "", "application/json", "", http.StatusUnauthorized},
		{"a wrong token", "", "", "application/json", "Bearer " + strings.Repeat("0", len(tok)), http.StatusUnauthorized},
		{"text/plain with the token", "", "", "text/plain", bearer, http.StatusUnsupportedMediaType},
	} {
		if got := do(tc.host, tc.origin, tc.ctype, tc.auth, "/v1/ops/cleanup", "{}"); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// What nodes asked of each other is not on the admin API any more.
	if got := do("", "", "application/json", bearer, "/v1/ops/fetch", `{"keyspace":"x"}`); got != http.StatusNotFound {
		t.Errorf("POST /v1/ops/fetch: %d, want 404", got)
	}

	// Names: a traversal is a 400 and creates nothing.
	outside := filepath.Join(v.dir, "escaped")
	for _, body := range []string{
		fmt.Sprintf(`{"keyspace":"../../../..%s","table":"x","dir":%q}`, outside, v.tableDir),
		fmt.Sprintf(`{"keyspace":"sluice","table":"../../x","dir":%q}`, v.tableDir),
	} {
		if got := do("", "", "application/json", bearer, "/v1/ops/import", body); got != http.StatusBadRequest {
			t.Errorf("import %s: %d, want 400", body, got)
		}
	}
	if got := do("", "", "application/json", bearer, "/v1/ops/repair", `{"keyspace":"sluice","table":"a/b"}`); got != http.StatusBadRequest {
		t.Errorf("repair of a/b: %d, want 400", got)
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists: %v", outside, err)
	}
	if code, _, errs := sluice(t, "import", "--admin", v.admin, "sluice.../x", v.tableDir); code != 2 {
		t.Errorf("sluice import of a bad name: exit %d: %s", code, errs)
	}

	// The operator's CLI needs no flags beyond the address; with none it prints the limits.
	code, out, errs := sluice(t, "setstreamthroughput", "--admin", v.admin)
	if code != 0 || !strings.Contains(out, "outbound unlimited, inbound unlimited") {
		t.Errorf("setstreamthroughput: exit %d: %s %s", code, out, errs)
	}
	code, out, _ = sluice(t, "setstreamthroughput", "--admin", v.admin, "--json")
	var th adminapi.Throughput
	if code != 0 || json.Unmarshal([]byte(out), &th) != nil {
		t.Errorf("setstreamthroughput --json: exit %d: %s", code, out)
	}
}

func mustTokenFile(t *testing.T, addr string) string {
	p, err := adminapi.DefaultTokenFile(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// holdSession opens a stream session as certificate name and stops after the Hello and
// StreamRequest, reading nothing more: a peer that pins a session slot.
func (v *victim) holdSession(t *testing.T, name string) *quic.Conn {
	t.Helper()
	return v.holdSessionOf(t, name, "(-9223372036854775808,9223372036854775807]")
}

// holdSessionOf is holdSession for a request of the ranges spec.
func (v *victim) holdSessionOf(t *testing.T, name, spec string) *quic.Conn {
	t.Helper()
	id, err := tlsx.Load(v.tlsDir, name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, v.stream, id.ClientConfig("127.0.0.1"), &quic.Config{KeepAlivePeriod: 500 * time.Millisecond, MaxIdleTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := token.ParseRanges(token.Murmur3, spec)
	var b []byte
	b = wire.AppendMessage(b, &wire.Hello{MinVersion: wire.MinVersion, MaxVersion: wire.MaxVersion, Node: name})
	req := &wire.StreamRequest{Operation: wire.OpFetch, Keyspace: "sluice", Table: "stress", Ranges: stream.EncodeRanges(rs)}
	rand.Read(req.SessionID[:])
	b = wire.AppendMessage(b, req)
	if _, err := ctrl.Write(b); err != nil {
		t.Fatal(err)
	}
	return conn
}

// fetchAs runs `sluice stream fetch` with certificate name; it returns the exit code and
// stderr.
func (v *victim) fetchAs(t *testing.T, name string, flags ...string) (int, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "sluice", filepath.Base(v.tableDir))
	code, _, errs := sluice(t, append([]string{"stream", "fetch", "--peer", v.stream, "--keyspace", "sluice", "--table", "stress",
		"--ranges", "(0,1000000000000000000]", "--out", out, "--tls-dir", v.tlsDir, "--name", name}, flags...)...)
	return code, errs
}

// Findings 3 and 4: one certificate holder cannot take every session slot (a per-peer cap
// below the node-wide one; a session of a request it already streams supersedes that one,
// issue 21), its idle sessions end at the idle timeout although its QUIC
// keepalives continue, an oversized control frame is refused from its header, a Hello that
// names another node than the certificate is refused, and a client certificate fetches
// nothing the configuration does not allow and cannot call peer operations.
func TestHostilePeerCannotLockOutOthersOrActBeyondItsRole(t *testing.T) {
	v := startVictim(t)
	held := []*quic.Conn{v.holdSession(t, "peer"), v.holdSession(t, "peer")}
	waitFor(t, 10*time.Second, "both sessions admitted", func() bool {
		var st adminapi.StreamsResponse
		if v.admin_(t, http.MethodGet, "/v1/streams", nil, &st) != nil {
			return false
		}
		n := 0
		for _, s := range st.Sessions {
			if s.State != "complete" && s.State != "failed" {
				n++
			}
		}
		return n == 2
	})
	// A third session of another request is refused with the per-peer limit.
	extra := v.holdSessionOf(t, "peer", "(0,1000]")
	select {
	case <-extra.Context().Done():
		var ae *quic.ApplicationError
		if err := context.Cause(extra.Context()); !errors.As(err, &ae) || !strings.Contains(ae.ErrorMessage, "per-peer") {
			t.Errorf("third session of one peer closed with %v, want the per-peer limit", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a third session of one peer was admitted")
	}
	// A third session of the same request (a receiver killed mid-fetch, resuming) takes the
	// place of the oldest one at once, instead of waiting for its idle timeout: the peer still
	// holds two.
	again := v.holdSession(t, "peer")
	select {
	case <-held[0].Context().Done():
		var ae *quic.ApplicationError
		if err := context.Cause(held[0].Context()); !errors.As(err, &ae) || !strings.Contains(ae.ErrorMessage, "superseded") {
			t.Errorf("the oldest session closed with %v, want superseded", err)
		}
	case <-time.After(2 * time.Second):
		t.Error("a session of the same request did not supersede the oldest one at once")
	}
	select {
	case <-again.Context().Done():
		t.Errorf("the superseding session was closed: %v", context.Cause(again.Context()))
	case <-time.After(200 * time.Millisecond):
	}
	held = []*quic.Conn{held[1], again}
	// Another certificate still gets in while peer holds its slots.
	if code, errs := v.fetchAs(t, "peer2"); code != 0 {
		t.Fatalf("another peer's fetch while one peer holds its slots: exit %d: %s", code, errs)
	}
	// The held sessions read nothing: they end at the idle timeout (3s), keepalives or not.
	for i, c := range held {
		select {
		case <-c.Context().Done():
		case <-time.After(15 * time.Second):
			t.Errorf("held session %d outlived the idle timeout", i)
		}
	}

	// An oversized control frame is refused from its header alone.
	id, _ := tlsx.Load(v.tlsDir, "peer")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, v.stream, id.ClientConfig("127.0.0.1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, _ := conn.OpenStreamSync(ctx)
	// Type Hello, then a body length of 60 MiB (uvarint), then nothing.
	hdr := []byte{byte(wire.MsgHello)}
	for n := uint64(60 << 20); ; n >>= 7 {
		if n < 0x80 {
			hdr = append(hdr, byte(n))
			break
		}
		hdr = append(hdr, byte(n)|0x80)
	}
	ctrl.Write(hdr)
	select {
	case <-conn.Context().Done():
	case <-ctx.Done():
		t.Error("a 60 MiB control frame header did not end the session")
	}

	// A Hello naming another node than the certificate.
	res, err := stream.Fetch(context.Background(), stream.Config{Node: "n1"}, mustLoad(t, v.tlsDir, "peer").ClientConfig("127.0.0.1"),
		stream.FetchRequest{Peer: v.stream, Keyspace: "sluice", Table: "stress", Ranges: mustRanges(t, "(0,1]"), Dir: filepath.Join(t.TempDir(), "stress-00000000000000000000000000000000")}, nil)
	var se *stream.SessionError
	if !errors.As(err, &se) || se.Code != wire.CodeUnauthorized {
		t.Errorf("Hello as n1 with peer's certificate: %v %v, want unauthorized", res, err)
	}

	// A client certificate: no fetch of a keyspace not in client_fetch_keyspaces, no peer
	// operations.
	if code, errs := v.fetchAs(t, "app"); code == 0 || !strings.Contains(errs, "client_fetch_keyspaces") {
		t.Errorf("client certificate fetch: exit %d: %s", code, errs)
	}
	c := &peerrpc.Client{ID: mustLoad(t, v.tlsDir, "app")}
	if err := c.Call(context.Background(), v.stream, "n1", "load", nil, nil); err == nil {
		t.Error("a client certificate called a peer operation")
	}
	// A node certificate may call; a traversal name is refused and creates nothing.
	pc := &peerrpc.Client{ID: mustLoad(t, v.tlsDir, "peer")}
	var l nodepkg.LoadResponse
	if err := pc.Call(context.Background(), v.stream, "n1", "load", nil, &l); err != nil || l.LoadBytes == 0 {
		t.Errorf("peer load: %v %+v", err, l)
	}
	var pe *peerrpc.Error
	err = pc.Call(context.Background(), v.stream, "n1", "fetch",
		nodepkg.FetchOpRequest{Source: "n1", Keyspace: "../../tmp", Table: "x", TableID: strings.Repeat("0", 32), Ranges: "(0,1]"}, nil)
	if !errors.As(err, &pe) || (pe.Code != peerrpc.CodeUnauthorized && pe.Code != peerrpc.CodeBadRequest) {
		t.Errorf("peer fetch of a traversal by a non-member: %v", err)
	}
	// Calling n1 by another name fails the handshake: the node proves it is n1.
	if err := pc.Call(context.Background(), v.stream, "n2", "load", nil, nil); !errors.Is(err, tlsx.ErrWrongName) {
		t.Errorf("calling n1 as n2: %v, want ErrWrongName", err)
	}
}

func mustLoad(t *testing.T, dir, name string) *tlsx.Identity {
	t.Helper()
	id, err := tlsx.Load(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustRanges(t *testing.T, s string) token.RangeSet {
	t.Helper()
	rs, err := token.ParseRanges(token.Murmur3, s)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// Finding 5: a connection flood on the TCP data plane while the node is out of descriptors
// makes its accepts fail; the accept loop backs off and serves the next fetch once the flood
// is gone (it used to stop at the first error, for good).
func TestHostileConnectionFloodDoesNotStopTheTCPDataPlane(t *testing.T) {
	v := startVictim(t, "transport: tcp")
	pid := v.proc.Process.Pid
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	tight := unix.Rlimit{Cur: uint64(len(fds) + 8), Max: old.Max}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &tight, nil); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	var flood []net.Conn
	for i := 0; i < 64; i++ {
		c, err := net.DialTimeout("tcp", v.stream, time.Second)
		if err != nil {
			break
		}
		flood = append(flood, c)
	}
	time.Sleep(500 * time.Millisecond) // the node's accepts hit the limit
	for _, c := range flood {
		c.Close()
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &old, nil); err != nil {
		t.Fatal(err)
	}
	if code, errs := v.fetchAs(t, "peer", "--transport", "tcp"); code != 0 {
		t.Fatalf("fetch over the TCP data plane after a flood: exit %d: %s", code, errs)
	}
}

// Finding 6: a symlinked component in a data directory (pointing at a secret of the node's
// host) is never served: the fetch of that table fails, and the secret's bytes are nowhere
// in what the peer received.
func TestHostileSymlinkedComponentIsNeverServed(t *testing.T) {
	v := startVictim(t)
	secret := filepath.Join(v.dir, "secret")
	marker := []byte("SECRET-KEY-MATERIAL-0123456789")
	if err := os.WriteFile(secret, bytes.Repeat(marker, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	filters, _ := filepath.Glob(filepath.Join(v.tableDir, "*-Filter.db"))
	if len(filters) == 0 {
		t.Fatal("no Filter.db")
	}
	for _, f := range filters {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, f); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "sluice", filepath.Base(v.tableDir))
	code, _, errs := sluice(t, "stream", "fetch", "--peer", v.stream, "--keyspace", "sluice", "--table", "stress",
		"--ranges", "(-9223372036854775808,9223372036854775807]", "--out", out, "--tls-dir", v.tlsDir, "--name", "peer")
	if code == 0 || !strings.Contains(errs, "not a regular file") {
		t.Errorf("fetch of a table with a symlinked component: exit %d: %s", code, errs)
	}
	filepath.Walk(filepath.Dir(out), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, marker) {
				t.Errorf("%s holds the secret", p)
			}
		}
		return nil
	})
}
