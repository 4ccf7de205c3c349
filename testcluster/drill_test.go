package testcluster

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestMain lets the test binary be a node process when TESTCLUSTER_NODE is set.
func TestMain(m *testing.M) {
	if os.Getenv("TESTCLUSTER_NODE") == "1" {
		os.Exit(NodeMain(os.Args[1:]))
	}
	// Nodes keep their admin token files under the user's configuration directory; the
	// tests' nodes (and child processes) keep theirs in a directory of their own.
	dir, err := os.MkdirTemp("", "sluice-test-config")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// selfExec runs a node process as this test binary.
func selfExec(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TESTCLUSTER_NODE=1")
	return cmd
}

// drillData is each node's share in tests: small, so the package stays within CI's budget.
const drillData = 2 << 20

func runDrill(t *testing.T, name string, processes bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := RunDrill(ctx, name, DrillOptions{DataPerNode: drillData, Processes: processes, Dir: t.TempDir(), Exec: selfExec, Logf: t.Logf})
	if res.Skipped != "" {
		t.Skip(res.Skipped)
	}
	if !res.OK {
		t.Fatalf("%s: %+v (check %+v)", name, res, res.Check)
	}
	if res.PartitionsChecked == 0 {
		t.Fatalf("%s checked no partition", name)
	}
	t.Logf("%s: %d partitions, %d bytes streamed, %d retries, %.1fs", name, res.PartitionsChecked, res.BytesStreamed, res.Retries, res.DurationSeconds)
}

// Every drill keeps every generated partition on exactly its replicas, with its bytes.
func TestDrillsInProcess(t *testing.T) {
	for _, name := range Drills() {
		t.Run(name, func(t *testing.T) { runDrill(t, name, false) })
	}
}

// A node process killed with SIGKILL mid-bootstrap restarts and resumes.
func TestBootstrapSurvivesKill9OfAProcess(t *testing.T) {
	runDrill(t, "bootstrap-kill", true)
}
