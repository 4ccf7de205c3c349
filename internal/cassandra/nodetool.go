package cassandra

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Runner runs argv and returns its combined standard output and error and its exit code; err
// is set only when the command could not be run or was stopped by ctx. The Importer runs
// nodetool through it; tests give a fake.
type Runner func(ctx context.Context, argv []string) (output string, exitCode int, err error)

// maxNodetoolOutput bounds what is kept of nodetool's output (the end is kept: Java's
// exceptions say what went wrong last).
const maxNodetoolOutput = 1 << 20

// ExecRunner runs argv as a process in a process group of its own; when ctx ends, the group
// is killed (a nodetool wrapper script and the JVM it starts go together).
func ExecRunner(ctx context.Context, argv []string) (string, int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0, nil
	case ctx.Err() != nil:
		return out.String(), -1, ctx.Err()
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return out.String(), ee.ExitCode(), nil
	}
	return out.String(), -1, err
}

// tailBuffer keeps the last maxNodetoolOutput bytes written to it; safe for the two writers
// exec gives it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - maxNodetoolOutput; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// ImportArgs are the arguments appended to the nodetool argv prefix to import dir into
// keyspace.table: Cassandra 5.0's `nodetool import [options] <keyspace> <table> <directory>...`
// with no option at all. So the sstables are verified (quick verify, not extended) and their
// tokens checked against the ranges the node owns (no --no-verify, no --no-tokens), the row
// cache is invalidated, levels and repaired state are reset, and they are MOVED (no
// --copy-data): the staging directory is on the data directories' file system, so the move is a
// rename and each sstable keeps its inode, which is how the Importer confirms it on disk.
func ImportArgs(keyspace, table, dir string) []string {
	return []string{"import", keyspace, table, dir}
}

// ImportOutput is what nodetool import printed, read.
type ImportOutput struct {
	// FailedDirs are the directories nodetool listed after "Some directories failed to
	// import": Cassandra verified or moved none of their sstables (it moves a failed
	// directory's sstables back).
	FailedDirs []string
	// Errors are nodetool's own error lines ("error: ...", "nodetool: ...").
	Errors []string
}

// Failed reports whether the output says the import failed, whatever the exit code.
func (o ImportOutput) Failed() bool { return len(o.FailedDirs) > 0 || len(o.Errors) > 0 }

// ParseImportOutput reads nodetool import's output. It succeeds silently: a clean import
// prints nothing. Note that an empty output with exit code 0 does not prove that anything was
// imported (Cassandra logs "No new SSTables were found" in its own log and nodetool says
// nothing): the Importer confirms on disk.
func ParseImportOutput(out string) ImportOutput {
	var o ImportOutput
	failed := false
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "Some directories failed to import"):
			failed = true
		case strings.HasPrefix(line, "error:"), strings.HasPrefix(line, "nodetool:"), strings.HasPrefix(line, "Exception in thread"):
			o.Errors = append(o.Errors, line)
			failed = false
		case failed && strings.HasPrefix(line, "/"):
			o.FailedDirs = append(o.FailedDirs, line)
		case strings.HasPrefix(line, "-- StackTrace --"):
			failed = false
		}
	}
	return o
}
