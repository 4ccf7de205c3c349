package cassandra

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseImportOutput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		out    string
		failed []string
		errs   int
	}{
		{"clean import prints nothing", "", nil, 0},
		{"failed directories", "Some directories failed to import, check server logs for details:\n/st/import-1/ks/t-0123\n/st/import-2/ks/t-0123\n",
			[]string{"/st/import-1/ks/t-0123", "/st/import-2/ks/t-0123"}, 0},
		{"nodetool error", "error: Unknown keyspace/cf pair (ks.nope)\n-- StackTrace --\njava.lang.IllegalArgumentException: Unknown keyspace/cf pair (ks.nope)\n\tat org.apache.cassandra...\n", nil, 1},
		{"connection refused", "nodetool: Failed to connect to '127.0.0.1:7199' - ConnectException: 'Connection refused'.\n", nil, 1},
		{"quick import note only", "Doing a quick import - skipping sstable verification and row cache invalidation\n", nil, 0},
	} {
		o := ParseImportOutput(tc.out)
		if !reflect.DeepEqual(o.FailedDirs, tc.failed) || len(o.Errors) != tc.errs {
			t.Errorf("%s: %+v", tc.name, o)
		}
		if o.Failed() != (len(tc.failed) > 0 || tc.errs > 0) {
			t.Errorf("%s: Failed() = %v", tc.name, o.Failed())
		}
	}
}

// Cassandra 5.0's syntax, verification and token checks on, a move not a copy.
func TestImportArgs(t *testing.T) {
	got := ImportArgs("ks", "t", "/st/import-1/ks/t-0123")
	if !reflect.DeepEqual(got, []string{"import", "ks", "t", "/st/import-1/ks/t-0123"}) {
		t.Errorf("%q", got)
	}
}

func TestExecRunner(t *testing.T) {
	out, code, err := ExecRunner(context.Background(), []string{"sh", "-c", "echo out; echo err >&2; exit 3"})
	if err != nil || code != 3 || !strings.Contains(out, "out") || !strings.Contains(out, "err") {
		t.Errorf("%q %d %v", out, code, err)
	}
	if _, _, err := ExecRunner(context.Background(), []string{"/nonexistent/nodetool"}); err == nil {
		t.Error("a missing binary ran")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := ExecRunner(ctx, []string{"sh", "-c", "sleep 30 & wait"}); err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("a cancelled run: %v after %v", err, time.Since(start))
	}
}
