package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/lib/tlsx"
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

// A pair run's check divides each run's MB/s on the small-partition parent by the same run's
// on the reference parent, and holds the median of those ratios to 0.80, the runs' spread
// beside it; a run that did not go through on both parents is left out.
func TestPairCheck(t *testing.T) {
	ok := func(mb int64, seconds float64) streamSample {
		return streamSample{status: "ok", bytes: mb * 1e6, wall: secondsDuration(seconds)}
	}
	for _, tc := range []struct {
		name      string
		small     []streamSample
		ref       []streamSample
		perRun    []float64
		med       float64
		min, max  float64
		met, none bool
	}{
		{name: "odd runs: the middle ratio",
			small:  []streamSample{ok(100, 1), ok(100, 2), ok(100, 1)}, // 100, 50, 100 MB/s
			ref:    []streamSample{ok(100, 1), ok(100, 1), ok(125, 1)}, // 100, 100, 125 MB/s
			perRun: []float64{1, 0.5, 0.8}, med: 0.8, min: 0.5, max: 1, met: true},
		{name: "even runs: the mean of the two middle ratios",
			small:  []streamSample{ok(90, 1), ok(70, 1), ok(60, 1), ok(100, 1)},
			ref:    []streamSample{ok(100, 1), ok(100, 1), ok(100, 1), ok(100, 1)},
			perRun: []float64{0.9, 0.7, 0.6, 1}, med: 0.8, min: 0.6, max: 1, met: true},
		{name: "just under the target",
			small:  []streamSample{ok(79, 1), ok(200, 1)},
			ref:    []streamSample{ok(100, 1), ok(250, 1)},
			perRun: []float64{0.79, 0.8}, med: 0.795, min: 0.79, max: 0.8, met: false},
		{name: "a failed run is not a ratio",
			small:  []streamSample{ok(50, 1), {status: "failed"}, ok(90, 1)},
			ref:    []streamSample{ok(100, 1), ok(100, 1), ok(100, 1)},
			perRun: []float64{0.5, 0.9}, med: 0.7, min: 0.5, max: 0.9, met: false},
		{name: "no run on both parents", small: []streamSample{{status: "not supported"}}, ref: []streamSample{ok(1, 1)}, none: true},
	} {
		c, found := pairCheck(cfgPartialTLS, "512 B", "64 KiB", tc.small, tc.ref)
		if found == tc.none {
			t.Errorf("%s: check found %v: %+v", tc.name, found, c)
			continue
		}
		if tc.none {
			continue
		}
		near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
		same := len(c.PerRun) == len(tc.perRun)
		for i := 0; same && i < len(c.PerRun); i++ {
			same = near(c.PerRun[i], tc.perRun[i])
		}
		if !same || !near(c.Measured, tc.med) || !near(c.RunMin, tc.min) || !near(c.RunMax, tc.max) || c.Met != tc.met {
			t.Errorf("%s: %+v; want runs %v, median %v, min %v, max %v, met %v", tc.name, c, tc.perRun, tc.med, tc.min, tc.max, tc.met)
		}
		if c.Name != "(h) 512 B MB/s / (h) 64 KiB MB/s" || c.Target != ">= 0.80" || c.Unit != "x" {
			t.Errorf("%s: named %q, target %q %q", tc.name, c.Name, c.Target, c.Unit)
		}
	}
}

// The two fetches of a pair swap places every other run; a group of one runs as it is.
func TestRunOrder(t *testing.T) {
	for _, tc := range []struct {
		n, run int
		want   string
	}{{2, 0, "[0 1]"}, {2, 1, "[1 0]"}, {2, 2, "[0 1]"}, {1, 1, "[0]"}} {
		if got := fmt.Sprint(runOrder(tc.n, tc.run)); got != tc.want {
			t.Errorf("runOrder(%d, %d) = %s, want %s", tc.n, tc.run, got, tc.want)
		}
	}
}

// The command line's options are refused before anything is generated: a pair run needs two
// different partition sizes (64 KiB is the default parent's) and no many-sstables row.
func TestStreamOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    StreamOptions
		bad  string // part of the error; "" for valid options
	}{
		{"defaults", StreamOptions{}, ""},
		{"one parent of small partitions", StreamOptions{PartitionSize: 512, Transport: "tls"}, ""},
		{"pair", StreamOptions{PartitionSize: 512, ReferencePartitionSize: 64 << 10, Transport: "tls"}, ""},
		{"pair against the default parent", StreamOptions{ReferencePartitionSize: 512}, ""},
		{"unknown transport", StreamOptions{Transport: "udp"}, "--transport"},
		{"one sstable", StreamOptions{SSTables: 1}, "--sstables 1"},
		{"negative partition size", StreamOptions{PartitionSize: -1}, "--partition-size"},
		{"reference over 1GiB", StreamOptions{ReferencePartitionSize: 1<<30 + 1}, "--reference-partition-size"},
		{"reference equal to the parent's", StreamOptions{PartitionSize: 512, ReferencePartitionSize: 512}, "nothing to compare"},
		{"64KiB reference against the default parent", StreamOptions{ReferencePartitionSize: 64 << 10}, "nothing to compare"},
		{"pair with many sstables", StreamOptions{PartitionSize: 512, ReferencePartitionSize: 64 << 10, SSTables: 8}, "--sstables"},
		{"BTI against BIG", StreamOptions{PartitionSize: 512, Version: "da", ReferenceVersion: "oa", Transport: "tcp"}, ""},
		{"BTI against BIG, both partition sizes", StreamOptions{PartitionSize: 512, ReferencePartitionSize: 512, Version: "da", ReferenceVersion: "nb"}, ""},
		{"same version named twice", StreamOptions{PartitionSize: 512, ReferencePartitionSize: 512, Version: "oa"}, "nothing to compare"},
		{"unknown format", StreamOptions{Version: "zz"}, "--format"},
		{"unknown reference format", StreamOptions{ReferenceVersion: "zz"}, "--reference-format"},
		{"version pair with many sstables", StreamOptions{Version: "da", ReferenceVersion: "oa", SSTables: 8}, "--sstables"},
	} {
		err := tc.o.Validate()
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%s: %v; want an error about %q", tc.name, err, tc.bad)
		}
	}
}

// A pair run names its parents by partition size, and by version too when versions differ.
func TestParentLabels(t *testing.T) {
	for _, tc := range []struct {
		o           StreamOptions
		parent, ref string
	}{
		{StreamOptions{PartitionSize: 512, ReferencePartitionSize: 64 << 10}, "512 B", "64 KiB"},
		{StreamOptions{PartitionSize: 512, ReferencePartitionSize: 64 << 10, Version: "da"}, "512 B", "64 KiB"},
		{StreamOptions{PartitionSize: 512, Version: "da", ReferenceVersion: "oa"}, "512 B da", "512 B oa"},
		{StreamOptions{Version: "da", ReferenceVersion: "nb", ReferencePartitionSize: 512}, "64 KiB da", "512 B nb"},
		{StreamOptions{ReferenceVersion: "da"}, "64 KiB oa", "64 KiB da"},
	} {
		ps, v, refPS, refV := tc.o.parents()
		if got, ref := tc.o.parentLabel(ps, v), tc.o.parentLabel(refPS, refV); got != tc.parent || ref != tc.ref {
			t.Errorf("%+v: %q and %q, want %q and %q", tc.o, got, ref, tc.parent, tc.ref)
		}
	}
}

func TestPartitionLabel(t *testing.T) {
	for n, want := range map[int]string{512: "512 B", 64 << 10: "64 KiB", 1536: "1536 B", 1 << 20: "1 MiB", 3 << 10: "3 KiB", 100: "100 B"} {
		if got := PartitionLabel(n); got != want {
			t.Errorf("PartitionLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

// A pair run reports the two parents against each other first, then each parent's rows
// against the usual targets under its partition size; the raw transfer, alone in its group,
// is no pair, and the reference of both parents' fetches over its plane.
func TestPairRunChecks(t *testing.T) {
	ok := func(mb int64) streamSample { return streamSample{status: "ok", bytes: mb * 1e6, wall: time.Second} }
	groups := [][]streamConfig{
		{{name: cfgPartial, partitionSize: 512, parent: "512 B"}, {name: cfgPartial, partitionSize: 64 << 10, parent: "64 KiB"}},
		{{name: cfgPartialTLS, partitionSize: 512, parent: "512 B"}, {name: cfgPartialTLS, partitionSize: 64 << 10, parent: "64 KiB"}},
		{{name: cfgRawTLS, partitionSize: 512, parent: "512 B"}},
	}
	samples := [][]streamSample{{ok(90)}, {ok(100)}, {ok(300)}, {ok(500)}, {ok(400)}}
	rep := &StreamReport{StreamParent: StreamParent{PartitionSize: 512, Label: "512 B"}, Reference: &StreamParent{PartitionSize: 64 << 10, Label: "64 KiB"}}
	mb := []float64{90, 100, 320, 500, 400} // the (h) row's median is not its one run's rate
	for i, g := range []streamConfig{groups[0][0], groups[0][1], groups[1][0], groups[1][1], groups[2][0]} {
		rep.Rows = append(rep.Rows, StreamRow{Config: g.name, PartitionSize: g.partitionSize, Parent: g.parent, Status: "ok", MBps: mb[i],
			ReceiverCPUPerGiB: 1, ReceiverHeapPerGiB: 1 << 20, ReceiverPeakRSS: 32 << 20})
	}
	var got []string
	for _, c := range pairRunChecks(rep, groups, samples) {
		got = append(got, fmt.Sprintf("%s %.2f %v", c.Name, c.Measured, c.Met))
		if len(c.PerRun) > 0 {
			got[len(got)-1] += fmt.Sprintf(" (of the medians %.2f)", c.RatioOfMedians)
		}
	}
	want := []string{
		"(b) 512 B MB/s / (b) 64 KiB MB/s 0.90 true (of the medians 0.90)",
		"(h) 512 B MB/s / (h) 64 KiB MB/s 0.60 false (of the medians 0.64)",
		"512 B: (h) MB/s / (g) MB/s 0.80 true",
		"512 B: b: receiver heap per GiB streamed 1.00 true",
		"512 B: b: receiver peak RSS 32.00 true",
		"512 B: h: receiver heap per GiB streamed 1.00 true",
		"512 B: h: receiver peak RSS 32.00 true",
		"64 KiB: (h) MB/s / (g) MB/s 1.25 true", // the raw transfer is both parents' reference
		"64 KiB: b: receiver heap per GiB streamed 1.00 true",
		"64 KiB: b: receiver peak RSS 32.00 true",
		"64 KiB: h: receiver heap per GiB streamed 1.00 true",
		"64 KiB: h: receiver peak RSS 32.00 true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
