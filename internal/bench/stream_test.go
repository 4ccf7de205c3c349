package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/tlsx"
)

// /proc/<pid>/stat: utime and stime are fields 14 and 15, counted after the command name,
// which may hold spaces and parentheses.
func TestParseProcStatCPU(t *testing.T) {
	tail := " S 1 2 3 4 5 6 7 8 9 10 150 25 0 0 20 0 12 0 100 0 0"
	for _, tc := range []struct {
		name, line string
		want       time.Duration
		bad        bool
	}{
		{"plain", "4242 (sluice)" + tail, 1750 * time.Millisecond, false},
		{"spaces and parens in the name", "4242 (a b) (c))" + tail, 1750 * time.Millisecond, false},
		{"no name", "4242 sluice" + tail, 0, true},
		{"truncated", "4242 (sluice) S 1 2 3", 0, true},
		{"not a number", "4242 (sluice) S 1 2 3 4 5 6 7 8 9 10 x 25", 0, true},
	} {
		got, err := parseProcStatCPU([]byte(tc.line))
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%s: %v, %v; want %v, error %v", tc.name, got, err, tc.want, tc.bad)
		}
	}
}

// A fetch that installed nothing because every sstable was refused is "not supported";
// any other failure is not.
func TestRefusedOnly(t *testing.T) {
	refused := "stream: sstable p@0+1 from h:1 (refused): stream: refused: sender: needs a rows re-serialisation"
	checksum := "stream: sstable p@0+1 from h:1 (checksum): stream: checksum mismatch"
	if why, ok := refusedOnly(fetchOutput{Failed: []string{refused, refused}}); !ok || why != "needs a rows re-serialisation" {
		t.Errorf("all refused: %q, %v", why, ok)
	}
	if _, ok := refusedOnly(fetchOutput{Failed: []string{refused, checksum}}); ok {
		t.Error("a checksum failure counted as not supported")
	}
	if _, ok := refusedOnly(fetchOutput{}); ok {
		t.Error("no failure counted as not supported")
	}
	installed := fetchOutput{Failed: []string{refused}}
	installed.SSTables = append(installed.SSTables, fetchedOutput{Kind: "partial", Bytes: 1})
	if _, ok := refusedOnly(installed); ok {
		t.Error("a fetch that installed something counted as not supported")
	}
}

// The checks compare (b) with (a) and hold every streaming receiver to the memory targets.
func TestStreamChecks(t *testing.T) {
	rows := []StreamRow{
		{Config: cfgRaw, Status: "ok", MBps: 200, ReceiverCPUPerGiB: 4, ReceiverHeapPerGiB: 100 << 20},
		{Config: cfgPartial, Status: "ok", MBps: 170, ReceiverCPUPerGiB: 5, ReceiverHeapPerGiB: 4 << 20, ReceiverPeakRSS: 300 << 20},
		{Config: cfgRows, Status: "not supported"},
		{Config: cfgEntire, Status: "ok", ReceiverHeapPerGiB: 9 << 20, ReceiverPeakRSS: 100 << 20},
	}
	var got []string
	for _, c := range streamChecks(rows) {
		got = append(got, c.Name+" "+map[bool]string{true: "met", false: "missed"}[c.Met])
	}
	want := []string{
		"(b) MB/s / (a) MB/s met",             // 0.85
		"(b) receiver CPU/GiB / (a)'s missed", // 1.25
		"b: receiver heap per GiB streamed met",
		"b: receiver peak RSS missed",
		"d: receiver heap per GiB streamed missed",
		"d: receiver peak RSS met",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestReadyLines(t *testing.T) {
	node := `{"level":"info","node":"n1","admin_addr":"127.0.0.1:2","stream_addr":"127.0.0.1:1","message":"node running"}`
	if a := nodeReadyAddr([]byte(node)); a != "127.0.0.1:1" {
		t.Errorf("node running line: %q", a)
	}
	if a := nodeReadyAddr([]byte(`{"message":"data directories ready","stream_addr":"x"}`)); a != "" {
		t.Errorf("other line: %q", a)
	}
	if a := rawReadyAddr([]byte(`{"addr":"127.0.0.1:9"}`)); a != "127.0.0.1:9" {
		t.Errorf("raw line: %q", a)
	}
	if a := rawReadyAddr([]byte(`not json`)); a != "" {
		t.Errorf("garbage: %q", a)
	}
}

// The raw TCP and TLS baselines move exactly the asked-for prefix of the file into the
// output file; the TLS one refuses a client without a certificate.
func TestRawTCPRoundTrip(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	want := make([]byte, 3<<20+17)
	for i := range want {
		want[i] = byte(i * 7)
	}
	if err := os.WriteFile(src, want, 0o644); err != nil {
		t.Fatal(err)
	}
	tlsDir := filepath.Join(dir, "tls")
	if err := tlsx.WriteCA(tlsDir, false); err != nil {
		t.Fatal(err)
	}
	ids := map[string]*tlsx.Identity{}
	for _, name := range []string{"s", "c"} {
		if err := tlsx.WriteNode(tlsDir, name, nil, false); err != nil {
			t.Fatal(err)
		}
		id, err := tlsx.Load(tlsDir, name)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	for _, tc := range []struct {
		name           string
		server, client *tls.Config
	}{
		{"tcp", nil, nil},
		{"tls", ids["s"].ServerConfig(), ids["c"].ClientConfig("127.0.0.1")},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		addrc := make(chan string, 1)
		done := make(chan error, 1)
		go func() { done <- RawTCPServe(ctx, src, "127.0.0.1:0", tc.server, func(a string) { addrc <- a }) }()
		addr := <-addrc
		out := filepath.Join(dir, "out-"+tc.name)
		res, err := RawTCPFetch(t.Context(), addr, int64(len(want)-5), out, tc.client)
		if err != nil || res.Bytes != int64(len(want)-5) || res.Wall <= 0 {
			t.Fatalf("%s: RawTCPFetch: %+v %v", tc.name, res, err)
		}
		got, err := os.ReadFile(out)
		if err != nil || !bytes.Equal(got, want[:len(want)-5]) {
			t.Errorf("%s: received %d bytes, not the file's first %d (%v)", tc.name, len(got), len(want)-5, err)
		}
		if tc.server != nil {
			anon := &tls.Config{RootCAs: tc.client.RootCAs, ServerName: tc.client.ServerName, MinVersion: tls.VersionTLS13}
			if res, err := RawTCPFetch(t.Context(), addr, 10, filepath.Join(dir, "anon"), anon); err == nil {
				t.Errorf("a client without a certificate fetched %+v", res)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: RawTCPServe: %v", tc.name, err)
		}
	}
}

// Over TLS, partial streaming is held to 80% of the raw Go TLS transfer.
func TestStreamChecksTLS(t *testing.T) {
	rows := []StreamRow{
		{Config: cfgRawTLS, Status: "ok", MBps: 1000, ReceiverCPUPerGiB: 1},
		{Config: cfgPartialTLS, Status: "ok", MBps: 790, ReceiverCPUPerGiB: 1, ReceiverHeapPerGiB: 1 << 20, ReceiverPeakRSS: 64 << 20},
	}
	var found bool
	for _, c := range streamChecks(rows) {
		if c.Name == "(h) MB/s / (g) MB/s" {
			found = true
			if c.Met || c.Measured != 0.79 {
				t.Errorf("check %+v: 79%% of raw TLS met an 80%% target", c)
			}
		}
		if c.Name == "g: receiver peak RSS" {
			t.Errorf("the raw TLS row is held to a receiver's memory targets: %+v", c)
		}
	}
	if !found {
		t.Errorf("no TLS throughput check in %+v", streamChecks(rows))
	}
}

// Over TCP, partial streaming is held to 60% of the raw TCP transfer.
func TestStreamChecksTCP(t *testing.T) {
	rows := []StreamRow{
		{Config: cfgRawTCP, Status: "ok", MBps: 1000, ReceiverCPUPerGiB: 1},
		{Config: cfgPartialTCP, Status: "ok", MBps: 590, ReceiverCPUPerGiB: 1, ReceiverHeapPerGiB: 1 << 20, ReceiverPeakRSS: 64 << 20},
	}
	var found bool
	for _, c := range streamChecks(rows) {
		if c.Name == "(f) MB/s / (e) MB/s" {
			found = true
			if c.Met || c.Measured != 0.59 {
				t.Errorf("check %+v: 59%% of raw TCP met a 60%% target", c)
			}
		}
	}
	if !found {
		t.Errorf("no TCP throughput check in %+v", streamChecks(rows))
	}
}

// With (i), the check compares its time per byte with (d)'s: the same bytes as one sstable.
func TestStreamChecksManySSTables(t *testing.T) {
	for _, tc := range []struct {
		many float64
		met  bool
	}{{80, true}, {60, false}} {
		rows := []StreamRow{
			{Config: cfgEntire, Status: "ok", MBps: 100},
			{Config: cfgMany, Status: "ok", MBps: tc.many},
		}
		var found bool
		for _, c := range streamChecks(rows) {
			if c.Name == "(i) time per byte / (d)'s" {
				found = true
				if c.Met != tc.met || c.Measured != 100/tc.many {
					t.Errorf("(i) at %v MB/s against 100: measured %v, met %v", tc.many, c.Measured, c.Met)
				}
			}
		}
		if !found {
			t.Errorf("no (i) check at %v MB/s", tc.many)
		}
	}
}
