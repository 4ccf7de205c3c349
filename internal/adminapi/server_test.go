package adminapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/stream"
)

// fakeBackend records what reached it.
type fakeBackend struct {
	Backend  // unimplemented methods panic: the test must not reach them
	cleanups []CleanupRequest
}

func (f *fakeBackend) StartCleanup(r CleanupRequest) (OpStatus, error) {
	f.cleanups = append(f.cleanups, r)
	if r.Keyspace == "busy" {
		return OpStatus{}, Conflict(errors.New("another operation is running"))
	}
	return OpStatus{ID: 1, Kind: OpCleanup, State: OpRunning}, nil
}
func (f *fakeBackend) Sessions() []stream.SessionStatus { return nil }
func (f *fakeBackend) Metrics() http.Handler            { return http.NotFoundHandler() }

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func serve(t *testing.T) (*fakeBackend, *Server) {
	b := &fakeBackend{}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7401}
	return b, NewServer(b, testToken, addr, "127.0.0.1:7401")
}

// Every rule of the guard, one request each; only the operator's request reaches the node.
func TestTheGuardLetsOnlyTheOperatorThrough(t *testing.T) {
	b, s := serve(t)
	for _, tc := range []struct {
		name, method, host, origin, ctype, auth string
		want                                    int
	}{
		{"operator", "POST", "127.0.0.1:7401", "", "application/json", "Bearer " + testToken, 200},
		{"operator by localhost, JSON with charset", "POST", "localhost:7401", "", "application/json; charset=utf-8", "Bearer " + testToken, 200},
		{"rebinding", "POST", "attacker.example:7401", "", "application/json", "Bearer " + testToken, 421},
		{"another port", "POST", "127.0.0.1:80", "", "application/json", "Bearer " + testToken, 421},
		{"page", "POST", "127.0.0.1:7401", "https://attacker.example", "text/plain", "", 403},
		{"page with null origin", "POST", "127.0.0.1:7401", "null", "application/json", "Bearer " + testToken, 403},
		{"no token", "POST", "127.0.0.1:7401", "", "application/json", "", 401},
		{"basic auth", "POST", "127.0.0.1:7401", "", "application/json", "Basic " + testToken, 401},
		{"form post", "POST", "127.0.0.1:7401", "", "application/x-www-form-urlencoded", "Bearer " + testToken, 415},
		{"no content type", "POST", "127.0.0.1:7401", "", "", "Bearer " + testToken, 415},
		{"GET of a POST route", "GET", "127.0.0.1:7401", "", "", "Bearer " + testToken, 405},
		{"PUT", "PUT", "127.0.0.1:7401", "", "application/json", "Bearer " + testToken, 405},
	} {
		r := httptest.NewRequest(tc.method, "http://"+tc.host+"/v1/ops/cleanup", strings.NewReader(`{}`))
		r.Host = tc.host
		for k, v := range map[string]string{"Origin": tc.origin, "Content-Type": tc.ctype, "Authorization": tc.auth} {
			if v != "" {
				r.Header.Set(k, v)
			}
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != tc.want || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %s, want %d", tc.name, w.Code, w.Header().Get("Content-Type"), w.Body, tc.want)
		}
		if w.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: a CORS header", tc.name)
		}
	}
	if len(b.cleanups) != 2 {
		t.Errorf("%d requests reached the node, want the operator's 2", len(b.cleanups))
	}
}

func TestRefusalsKeepTheirStatus(t *testing.T) {
	_, s := serve(t)
	for body, want := range map[string]int{`{"keyspace":"busy"}`: 409, `{"keyspace":"ks","extra":1}`: 400, `{} {}`: 400} {
		r := httptest.NewRequest("POST", "http://127.0.0.1:7401/v1/ops/cleanup", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("%s: %d %s, want %d", body, w.Code, w.Body, want)
		}
	}
}

// The token file is created 0600 in a 0700 directory, read back as it is, and refused once
// others may read it.
func TestTheTokenFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sluice", "admin-7401.token")
	tok, err := LoadOrCreateToken(p)
	if err != nil || len(tok) != 64 {
		t.Fatalf("%q %v", tok, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Dir(p)); fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v", fi.Mode())
	}
	if again, err := LoadOrCreateToken(p); err != nil || again != tok {
		t.Fatalf("second start: %q %v", again, err)
	}
	os.Chmod(p, 0o644)
	if _, err := LoadOrCreateToken(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable token file: %v", err)
	}
	if _, err := Token("127.0.0.1:7401", p); err == nil {
		t.Fatal("the client read a world-readable token file")
	}
}

func TestTheClientSendsTheTokenAndJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.token")
	tok, err := LoadOrCreateToken(p)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+tok || r.Header.Get("Content-Type") != "application/json" {
			writeError(w, 401, "no")
			return
		}
		writeJSON(w, 200, OpStatus{ID: 7})
	}))
	defer ts.Close()
	c := NewClient(strings.TrimPrefix(ts.URL, "http://"), p, nil)
	var st OpStatus
	if err := c.Call(context.Background(), http.MethodPost, "/v1/ops/bootstrap", nil, &st); err != nil || st.ID != 7 {
		t.Fatalf("%+v %v", st, err)
	}
}

// A listener on every interface answers to its addresses as IP literals (and localhost), but
// never to a name: rebinding needs one.
func TestAnUnspecifiedListenerAnswersToIPLiteralsOnly(t *testing.T) {
	h := adminHosts(&net.TCPAddr{IP: net.IPv4zero, Port: 7401}, "0.0.0.0:7401")
	for host, want := range map[string]bool{
		"10.0.0.5:7401": true, "[fe80::1]:7401": true, "localhost:7401": true,
		"10.0.0.5:80": false, "attacker.example:7401": false, "node1.internal:7401": false,
	} {
		if got := h.allows(host); got != want {
			t.Errorf("Host %q: %v, want %v", host, got, want)
		}
	}
}

// waitingBackend's operation 1 runs until ended is closed.
type waitingBackend struct {
	fakeBackend
	ended  chan struct{}
	waited []int
}

func (b *waitingBackend) WaitOp(ctx context.Context, id int) {
	b.waited = append(b.waited, id)
	select {
	case <-b.ended:
	case <-ctx.Done():
	}
}

func (b *waitingBackend) Ops() []OpStatus {
	select {
	case <-b.ended:
		return []OpStatus{{ID: 1, State: OpComplete}}
	default:
		return []OpStatus{{ID: 1, State: OpRunning}}
	}
}

// GET /v1/ops?wait=ID&wait_ms=N holds the request until the operation ends or N ms pass, then
// lists the operations; without wait it answers at once, and a malformed wait is a 400.
func TestOpsWaitForTheOperationToEnd(t *testing.T) {
	b := &waitingBackend{ended: make(chan struct{})}
	s := NewServer(b, testToken, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7401}, "127.0.0.1:7401")
	get := func(q string) (int, string) {
		r := httptest.NewRequest("GET", "http://127.0.0.1:7401/v1/ops"+q, nil)
		r.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	start := time.Now()
	if code, body := get("?wait=1&wait_ms=30"); code != 200 || !strings.Contains(body, OpRunning) || time.Since(start) < 30*time.Millisecond {
		t.Errorf("wait_ms=30 on a running operation: %d %s after %v", code, body, time.Since(start))
	}
	go func() { time.Sleep(20 * time.Millisecond); close(b.ended) }()
	if code, body := get("?wait=1&wait_ms=5000"); code != 200 || !strings.Contains(body, OpComplete) {
		t.Errorf("waiting for the end: %d %s", code, body)
	}
	if code, _ := get(""); code != 200 || len(b.waited) != 2 {
		t.Errorf("a plain GET: %d, %d waits (want 2, the plain one none)", code, len(b.waited))
	}
	for _, q := range []string{"?wait=x&wait_ms=1", "?wait=1", "?wait=1&wait_ms=-1"} {
		if code, _ := get(q); code != 400 {
			t.Errorf("%s: %d, want 400", q, code)
		}
	}
}
