package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/bench"
)

// `sluice bench stream` at a tiny size runs every configuration in child processes (the test
// binary acting as sluice) and reports each with payload, rates and per-side measurements;
// the rows path is either measured or "not supported", never an error. --transport tcp adds
// the raw TCP and TCP data plane rows.
func TestBenchStreamTiny(t *testing.T) {
	if err := exec.Command(os.Args[0], "-test.run=^$").Run(); err != nil {
		t.Skipf("the test binary cannot exec itself: %v", err)
	}
	dir := t.TempDir()
	rep := benchStreamJSON(t, "--size", "8MiB", "--transport", "tcp", "--dir", dir)
	if len(rep.Rows) != 6 {
		t.Fatalf("%d rows, want 6: %+v", len(rep.Rows), rep.Rows)
	}
	for i, r := range rep.Rows {
		if i == 2 && r.Status == "not supported" {
			continue
		}
		// The sender's CPU comes in 10 ms ticks of /proc/<pid>/stat: at this size it may be 0.
		if !r.OK() || r.Bytes <= 0 || r.MBps <= 0 || r.SenderCPUPerGiB < 0 || r.ReceiverCPUPerGiB <= 0 ||
			r.ReceiverHeapPerGiB <= 0 || r.ReceiverPeakRSS <= 0 {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	raw, partial, entire := rep.Rows[0], rep.Rows[1], rep.Rows[3]
	if raw.Bytes != partial.Bytes || rep.Rows[4].Bytes != partial.Bytes || rep.Rows[5].Bytes != partial.Bytes {
		t.Errorf("raw moved %d bytes, partial %d, raw TCP %d, partial over TCP %d: want the same",
			raw.Bytes, partial.Bytes, rep.Rows[4].Bytes, rep.Rows[5].Bytes)
	}
	if entire.Bytes < rep.ParentDataFile || partial.Bytes >= entire.Bytes {
		t.Errorf("entire moved %d bytes (Data.db %d), partial %d", entire.Bytes, rep.ParentDataFile, partial.Bytes)
	}
	if len(rep.Checks) < 3 {
		t.Errorf("checks: %+v", rep.Checks)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in --dir: %v, want only the reusable parent", ents)
	}

}

// A pair run (--reference-partition-size) fetches half the ring of two parents that differ
// only in partition size, run by run: (b) and the data plane's partial fetch on each, the raw
// transfer once, and a check per pair with each run's ratio. Options that cannot make a pair
// are usage errors, refused before anything is generated.
func TestBenchStreamPairTiny(t *testing.T) {
	if err := exec.Command(os.Args[0], "-test.run=^$").Run(); err != nil {
		t.Skipf("the test binary cannot exec itself: %v", err)
	}
	dir := t.TempDir()
	for _, bad := range [][]string{
		{"--reference-partition-size", "64KiB"}, // the default parent's partitions are 64 KiB too
		{"--partition-size", "512", "--reference-partition-size", "512"},
		{"--partition-size", "512", "--reference-partition-size", "64KiB", "--sstables", "4"},
		{"--partition-size", "512", "--reference-partition-size", "lots"},
	} {
		if code, _, errs := sluice(t, append([]string{"bench", "stream", "--size", "8MiB", "--dir", dir}, bad...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", bad, code, errs)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a refused command line left %v in --dir", ents)
	}
	rep := benchStreamJSON(t, "--size", "8MiB", "--transport", "tcp", "--partition-size", "512", "--reference-partition-size", "64KiB",
		"--runs", "2", "--dir", dir)
	if rep.Reference == nil || rep.PartitionSize != 512 || rep.Reference.PartitionSize != 64<<10 ||
		rep.Partitions != 128*rep.Reference.Partitions {
		t.Fatalf("parents: %+v and %+v, want 512 B partitions and 128 times fewer of 64 KiB", rep.StreamParent, rep.Reference)
	}
	want := []struct {
		prefix string
		size   int
	}{{"(b)", 512}, {"(b)", 64 << 10}, {"(f)", 512}, {"(f)", 64 << 10}, {"(e)", 512}}
	if len(rep.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rep.Rows), len(want), rep.Rows)
	}
	for i, r := range rep.Rows {
		if !strings.HasPrefix(r.Config, want[i].prefix) || r.PartitionSize != want[i].size || !r.OK() || r.MBps <= 0 {
			t.Errorf("row %d: %+v, want %s of the %d-byte parent", i, r, want[i].prefix, want[i].size)
		}
	}
	if rep.Rows[4].Bytes != rep.Rows[0].Bytes {
		t.Errorf("the raw transfer moved %d bytes, the small-partition fetch %d", rep.Rows[4].Bytes, rep.Rows[0].Bytes)
	}
	pairs := map[string]bench.StreamCheck{}
	for _, c := range rep.Checks {
		if len(c.PerRun) > 0 {
			pairs[c.Name] = c
		}
	}
	for _, name := range []string{"(b) 512 B MB/s / (b) 64 KiB MB/s", "(f) 512 B MB/s / (f) 64 KiB MB/s"} {
		c, ok := pairs[name]
		if !ok || len(c.PerRun) != 2 || c.RunMin > c.Measured || c.Measured > c.RunMax || c.Met != (c.Measured >= 0.8) {
			t.Errorf("check %q: %+v (found %v)", name, c, ok)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left in --dir: %v, want only the two reusable parents", ents)
	}
}

// benchStreamJSON runs `sluice bench stream ARGS --json` in a child process (the test binary
// acting as sluice) and decodes its report.
func benchStreamJSON(t *testing.T, args ...string) bench.StreamReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append(append([]string{"--log-format", "json", "bench", "stream"}, args...), "--json")...)
	cmd.Env = append(os.Environ(), "SLUICE_BE_MAIN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench stream: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var rep bench.StreamReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	return rep
}
