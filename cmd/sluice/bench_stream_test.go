package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "--log-format", "json", "bench", "stream", "--size", "8MiB", "--transport", "tcp", "--dir", dir, "--json")
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
