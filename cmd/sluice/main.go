// Command sluice is the single sluice binary: the streaming node (`sluice run`, later), the
// sstable tools (`sluice sstable describe|keys|verify|gen|split`) and the benchmarks.
//
// Exit codes: 0 success, 1 failure (including a verify that found problems), 2 usage errors.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluicedb/sluice/sstable/token"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line with the given standard output and error and returns the
// process exit code. Tests call it directly.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ue usageError
	var fe failedError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "sluice: %v\nRun 'sluice --help' for usage.\n", err)
		return 2
	case errors.As(err, &fe):
		// The command already printed its findings; only the exit code remains.
		return 1
	default:
		fmt.Fprintf(stderr, "sluice: %v\n", err)
		return 1
	}
}

// usageError marks a bad command line (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Usage bounds: past them a command line is a usage error (exit 2) that names the bound.
const (
	// maxRanges is the most token ranges one command takes: the stream protocol's bound on a
	// request (wire.Limits.MaxRanges' default), so nothing a command accepts is refused later.
	maxRanges = 1 << 16
	// maxWays is the most children split --ways makes.
	maxWays = 1 << 16
)

// parseRanges reads a --ranges SPEC for partitioner p within maxRanges; a bad or too long
// list is a usage error.
func parseRanges(p token.Partitioner, spec string) (token.RangeSet, error) {
	if n := strings.Count(spec, "(") + strings.Count(spec, "["); n > maxRanges {
		return nil, usagef("--ranges: %d ranges, at most %d", n, maxRanges)
	}
	rs, err := token.ParseRanges(p, spec)
	if err != nil {
		return nil, usageError{err}
	}
	if len(rs) > maxRanges {
		return nil, usagef("--ranges: %d ranges, at most %d", len(rs), maxRanges)
	}
	return rs, nil
}

// failedError marks a command that ran and reported its own failure (exit 1, nothing more
// printed), e.g. verify finding problems.
type failedError struct{}

func (failedError) Error() string { return "failed" }
