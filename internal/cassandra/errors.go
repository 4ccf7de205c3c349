package cassandra

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrUnsupportedPartitioner reports a Cassandra cluster whose partitioner is not Murmur3,
	// the only one sluice's ring speaks.
	ErrUnsupportedPartitioner = errors.New("cassandra: unsupported partitioner")

	// ErrUnsupportedStrategy reports a keyspace whose replication class has no ring.Strategy
	// (LocalStrategy, EverywhereStrategy, a custom class) or whose options it cannot express
	// (transient replicas).
	ErrUnsupportedStrategy = errors.New("cassandra: unsupported replication")

	// ErrBadToken reports a token in system.local or system.peers that is not a Murmur3 token.
	ErrBadToken = errors.New("cassandra: bad token")

	// ErrNoLocal reports a ring read that found no row in system.local.
	ErrNoLocal = errors.New("cassandra: system.local has no row")

	// ErrNothingToImport reports an import of a directory that holds no complete sstable
	// (none with a TOC.txt).
	ErrNothingToImport = errors.New("cassandra: no sstable to import")

	// ErrVerify reports an sstable that failed sluice's strict verification before import;
	// nothing was handed to Cassandra.
	ErrVerify = errors.New("cassandra: sstable failed verification")

	// ErrNodetool reports a nodetool import that failed (non-zero exit, or failed directories
	// in its output).
	ErrNodetool = errors.New("cassandra: nodetool import failed")

	// ErrNotConfirmed reports an import nodetool called a success that the data directories do
	// not confirm: an sstable is still in the staging directory (Cassandra imported nothing,
	// e.g. "No new SSTables were found") or is in no live table directory.
	ErrNotConfirmed = errors.New("cassandra: import not confirmed")

	// ErrCrossDevice reports a staging directory on another file system than the source or the
	// data directories: sstables could not be moved by rename.
	ErrCrossDevice = errors.New("cassandra: not on the same file system")
)

// ImportError is a failed import: which Cassandra node, which table, the staging directory
// it ran from, and what nodetool printed (when it ran). It unwraps to one of the sentinels.
type ImportError struct {
	Node     string // the Cassandra node: its host id or native address
	Keyspace string
	Table    string
	Dir      string // the staging table directory handed to nodetool ("" before staging)
	Output   string // nodetool's combined output, trimmed ("" when it did not run)
	Err      error
}

func (e *ImportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cassandra node %s: import into %s.%s", e.Node, e.Keyspace, e.Table)
	if e.Dir != "" {
		fmt.Fprintf(&b, " from %s", e.Dir)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if out := strings.TrimSpace(e.Output); out != "" {
		fmt.Fprintf(&b, "; nodetool printed: %s", oneLine(out, 2000))
	}
	return b.String()
}

func (e *ImportError) Unwrap() error { return e.Err }

// oneLine joins the lines of s with " | " and keeps at most n bytes of the end, where Java's
// exceptions say what went wrong.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " | ")), " ")
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}
