package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/internal/adminapi"
)

func TestSetStreamThroughputPostsTheRates(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	addr := adminStub(t, map[string]http.HandlerFunc{
		"POST /v1/throughput": func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			bodies = append(bodies, string(b))
			mu.Unlock()
			var req adminapi.ThroughputRequest
			if err := json.Unmarshal(b, &req); err != nil || r.Header.Get("Content-Type") != "application/json" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			now := adminapi.Throughput{OutboundBytesPerSecond: 1, InboundBytesPerSecond: 2}
			if req.OutboundBytesPerSecond != nil {
				now.OutboundBytesPerSecond = *req.OutboundBytesPerSecond
			}
			if req.InboundBytesPerSecond != nil {
				now.InboundBytesPerSecond = *req.InboundBytesPerSecond
			}
			json.NewEncoder(w).Encode(now)
		},
	})
	for _, tc := range []struct {
		args       []string
		body, line string
	}{
		{[]string{"--outbound", "100MiB", "--inbound", "0"},
			`{"outbound_bytes_per_second":104857600,"inbound_bytes_per_second":0}`,
			"stream throughput: outbound 100.0 MiB/s, inbound unlimited"},
		{[]string{"--inbound", "64KiB/s"},
			`{"outbound_bytes_per_second":null,"inbound_bytes_per_second":65536}`,
			"stream throughput: outbound 1 B/s, inbound 64.0 KiB/s"},
	} {
		mu.Lock()
		bodies = nil
		mu.Unlock()
		code, out, errs := sluice(t, append([]string{"setstreamthroughput", "--admin", addr}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errs)
		}
		mu.Lock()
		got := strings.Join(bodies, "")
		mu.Unlock()
		if got != tc.body {
			t.Errorf("%v: body %s, want %s", tc.args, got, tc.body)
		}
		if strings.TrimSpace(out) != tc.line {
			t.Errorf("%v: printed %q", tc.args, out)
		}
	}
}

func TestSetStreamThroughputErrors(t *testing.T) {
	refusing := adminStub(t, map[string]http.HandlerFunc{
		"POST /v1/throughput": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(adminapi.ErrorResponse{Error: "outbound_bytes_per_second: negative"})
		},
	})
	dead := deadAddr(t)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--admin", dead, "--outbound", "1MiB"}, 1, "admin endpoint " + dead + " unreachable"},
		{[]string{"--admin", refusing, "--outbound", "1MiB"}, 1, "400 Bad Request: outbound_bytes_per_second: negative"},
		{[]string{"--admin", dead}, 1, "admin endpoint " + dead + " unreachable"},
		{[]string{"--admin", dead, "--outbound", "fast"}, 2, `--outbound "fast"`},
		{[]string{"--admin", dead, "--inbound", "-1"}, 2, `--inbound "-1"`},
		{[]string{"--admin", "http://", "--inbound", "1"}, 2, "--admin"},
	} {
		code, _, errs := sluice(t, append([]string{"setstreamthroughput"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d: %s", tc.args, code, errs)
		}
	}
}
