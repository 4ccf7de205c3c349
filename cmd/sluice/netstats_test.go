package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/stream"
)

// adminStub serves the admin API's routes from handlers keyed "METHOD /path".
func adminStub(t *testing.T, routes map[string]http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := routes[r.Method+" "+r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(adminapi.ErrorResponse{Error: "no such endpoint " + r.URL.Path})
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

var netstatsSessions = []stream.SessionStatus{
	{ID: "s1", Peer: "10.0.0.2:7400", Direction: stream.Sending, Keyspace: "ks", Table: "users", Operation: "bootstrap",
		State: "streaming", FilesDone: 1, FilesTotal: 4, BytesDone: 256 << 20, BytesTotal: 1 << 30, RateBytes: 64 << 20},
	{ID: "s2", Peer: "10.0.0.3:7400", Direction: stream.Receiving, Keyspace: "ks", Table: "events",
		State: "preparing", FilesTotal: 2, BytesTotal: 1000},
	{ID: "s3", Peer: "10.0.0.4:7400", Direction: stream.Receiving, Keyspace: "ks", Table: "users", Operation: "repair",
		State: "failed", Error: "digest mismatch in nb-3-big-Data.db", FilesDone: 2, FilesTotal: 3, BytesDone: 3 << 10, BytesTotal: 4 << 10, RateBytes: 999},
}

func TestNetstatsPrintsSessionsRatesETAsAndTotals(t *testing.T) {
	addr := adminStub(t, map[string]http.HandlerFunc{
		"GET /v1/streams": func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(adminapi.StreamsResponse{Sessions: netstatsSessions})
		},
	})
	code, out, errs := sluice(t, "netstats", "--admin", addr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	header := strings.Fields(lines[0])
	if strings.Join(header, " ") != "PEER DIRECTION OPERATION TABLE STATE FILES BYTES RATE ETA" {
		t.Fatalf("header %q", lines[0])
	}
	for i, wantFields := range [][]string{
		// 768 MiB left at 64 MiB/s: 12s.
		{"10.0.0.2:7400", "sending", "bootstrap", "ks.users", "streaming", "1/4", "256.0 MiB/1.0 GiB (25.0%)", "64.0 MiB/s", "12s"},
		// No rate yet: rate and ETA unknown.
		{"10.0.0.3:7400", "receiving", "-", "ks.events", "preparing", "0/2", "0 B/1000 B (0.0%)", "-", "-"},
		// A finished session's last rate means nothing.
		{"10.0.0.4:7400", "receiving", "repair", "ks.users", "failed", "2/3", "3.0 KiB/4.0 KiB (75.0%)", "-", "-"},
	} {
		// Columns are separated by at least two spaces; values contain single spaces.
		var got []string
		for _, f := range strings.Split(lines[i+1], "  ") {
			if f = strings.TrimSpace(f); f != "" {
				got = append(got, f)
			}
		}
		if strings.Join(got, "|") != strings.Join(wantFields, "|") {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, got, wantFields)
		}
	}
	// Totals: the active sessions' 768 MiB + 1000 B left at 64 MiB/s.
	if lines[4] != "Total: 3 sessions, 3/9 files, 256.0 MiB/1.0 GiB (25.0%), 64.0 MiB/s, ETA 13s" {
		t.Errorf("totals %q", lines[4])
	}
	if lines[5] != "Session s3 with 10.0.0.4:7400 (ks.users) failed: digest mismatch in nb-3-big-Data.db" {
		t.Errorf("error line %q", lines[5])
	}
}

func TestNetstatsJSONIsTheAdminAnswer(t *testing.T) {
	addr := adminStub(t, map[string]http.HandlerFunc{
		"GET /v1/streams": func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(adminapi.StreamsResponse{Sessions: netstatsSessions})
		},
	})
	code, out, errs := sluice(t, "netstats", "--json", "--admin", "http://"+addr+"/")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got adminapi.StreamsResponse
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 3 || got.Sessions[2] != netstatsSessions[2] {
		t.Fatalf("sessions %+v", got.Sessions)
	}
}

func TestNetstatsWithoutSessions(t *testing.T) {
	addr := adminStub(t, map[string]http.HandlerFunc{
		"GET /v1/streams": func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"sessions": []}`)) },
	})
	if code, out, errs := sluice(t, "netstats", "--admin", addr); code != 0 || out != "No streams.\n" {
		t.Fatalf("exit %d, %q, %s", code, out, errs)
	}
}

func TestNetstatsFailsNamingAnUnreachableOrBrokenEndpoint(t *testing.T) {
	dead := deadAddr(t)
	code, _, errs := sluice(t, "netstats", "--admin", dead)
	if code != 1 || !strings.Contains(errs, "admin endpoint "+dead+" unreachable") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	broken := adminStub(t, map[string]http.HandlerFunc{
		"GET /v1/streams": func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`<html>`)) },
	})
	if code, _, errs := sluice(t, "netstats", "--admin", broken); code != 1 || !strings.Contains(errs, "admin endpoint "+broken+": GET /v1/streams: bad answer") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, _, errs := sluice(t, "netstats", "--admin", "nocolon"); code != 2 || !strings.Contains(errs, "--admin") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestFormatting(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 100 << 20: "100.0 MiB", 3 << 40: "3.0 TiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	for _, tc := range []struct {
		left int64
		rate float64
		want string
	}{
		{100, 10, "10s"}, {101, 10, "11s"}, {3600 * 5, 5, "1h0m0s"}, {0, 10, "-"}, {-5, 10, "-"}, {100, 0, "-"},
		{1 << 62, 1e-9, "-"},
	} {
		if got := formatETA(tc.left, tc.rate); got != tc.want {
			t.Errorf("formatETA(%d, %v) = %q, want %q", tc.left, tc.rate, got, tc.want)
		}
	}
	for _, tc := range []struct {
		done, total int64
		want        string
	}{{0, 0, "0 B/0 B (-)"}, {1, 3, "1 B/3 B (33.3%)"}, {2048, 2048, "2.0 KiB/2.0 KiB (100.0%)"}} {
		if got := formatProgress(tc.done, tc.total); got != tc.want {
			t.Errorf("formatProgress(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
	if formatRate(0) != "-" || formatRate(1536) != "1.5 KiB/s" || formatLimit(0) != "unlimited" || formatLimit(1<<20) != "1.0 MiB/s" {
		t.Error("formatRate or formatLimit")
	}
}

// Peer-supplied strings (a failure reason, a peer's names) reach the operator's terminal
// escaped: an escape sequence in them is shown, not obeyed.
func TestNetstatsEscapesWhatPeersSent(t *testing.T) {
	hostile := []stream.SessionStatus{{ID: "s\x1b[2J", Peer: "10.0.0.9:7400", Direction: stream.Sending, Keyspace: "ks",
		Table: "t\u009b31m", State: "failed", Error: "reason\x1b]0;owned\x07\r\nfake line"}}
	addr := adminStub(t, map[string]http.HandlerFunc{
		"GET /v1/streams": func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(adminapi.StreamsResponse{Sessions: hostile})
		},
	})
	code, out, errs := sluice(t, "netstats", "--admin", addr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, r := range out {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)) {
			t.Fatalf("netstats printed control %U:\n%q", r, out)
		}
	}
	for _, want := range []string{`s\x1b[2J`, `t\u009b31m`, `reason\x1b]0;owned\a\r\nfake line`} {
		if !strings.Contains(out, want) {
			t.Errorf("netstats lacks %s:\n%s", want, out)
		}
	}
}
