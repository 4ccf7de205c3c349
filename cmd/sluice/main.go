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

// failedError marks a command that ran and reported its own failure (exit 1, nothing more
// printed), e.g. verify finding problems.
type failedError struct{}

func (failedError) Error() string { return "failed" }
