package main

import (
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/lib/printable"
	"golang.org/x/term"
)

func newRootCmd() *cobra.Command {
	var logLevel, logFormat, cpuProfile string
	var stopProfile func()
	root := &cobra.Command{
		Use:   "sluice",
		Short: "Move partial Cassandra sstables without re-serialising a row",
		Long: `sluice reads, verifies, writes and splits Apache Cassandra sstables (BIG md me nb nc oa,
BTI da) byte-compatibly, and moves token ranges of them by copying compressed chunks verbatim.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := setupLogging(cmd.ErrOrStderr(), logLevel, logFormat); err != nil {
				return err
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					f.Close()
					return err
				}
				stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
			}
			return nil
		},
		PersistentPostRun: func(*cobra.Command, []string) {
			if stopProfile != nil {
				stopProfile()
			}
		},
	}
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	root.PersistentFlags().StringVar(&logFormat, "log-format", "auto", "log format: auto (console on a terminal, JSON otherwise), console, json")
	// A CPU profile of one whole command (written when it succeeds), e.g. of sstable split.
	root.PersistentFlags().StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile of the command to this file")
	_ = root.PersistentFlags().MarkHidden("cpu-profile")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newSSTableCmd(), newStreamCmd(), newBenchCmd(), newCertCmd(), newRunCmd(), newNetstatsCmd(), newSetStreamThroughputCmd())
	root.AddCommand(newStatusCmd(), newRingCmd(), newDecommissionCmd(), newMoveCmd(), newCleanupCmd(), newImportCmd(), newRepairCmd(), newRebuildCmd(), newTestclusterCmd())
	root.AddCommand(newCassandraCmd())
	return root
}

// setupLogging configures the global zerolog logger: a human console writer on a TTY, JSON
// lines otherwise (so logs from a node under a supervisor stay machine-readable).
func setupLogging(w io.Writer, level, format string) error {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return usagef("--log-level %q: want trace, debug, info, warn or error", level)
	}
	zerolog.SetGlobalLevel(lvl)
	// Log lines carry strings peers chose (names, failure reasons): their control characters
	// are escaped so that a log viewed on a terminal cannot drive it.
	var out io.Writer = printable.JSONWriter{W: w}
	switch format {
	case "auto":
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			out = consoleWriter(w, false)
		}
	case "console":
		out = consoleWriter(w, true)
	case "json":
	default:
		return usagef("--log-format %q: want auto, console or json", format)
	}
	logger = zerolog.New(out).With().Timestamp().Logger()
	return nil
}

// consoleWriter is zerolog's console format with every message and value escaped.
func consoleWriter(w io.Writer, noColor bool) zerolog.ConsoleWriter {
	return zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: noColor,
		FormatMessage:       printable.Value,
		FormatFieldValue:    printable.Value,
		FormatErrFieldValue: printable.Value}
}

// logger is the process logger, set up before any command runs.
var logger = zerolog.New(os.Stderr).With().Timestamp().Logger()

// Log times to the millisecond, as Cassandra's system.log does: a transfer's phases last
// fractions of a second.
func init() { zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00" }

// exactArgs is cobra.ExactArgs with a usage error (exit 2).
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s: want %d argument(s), got %d", cmd.CommandPath(), n, len(args))
		}
		return nil
	}
}

// atMostArgs is cobra.MaximumNArgs with a usage error (exit 2).
func atMostArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return usagef("%s: want at most %d argument(s), got %d", cmd.CommandPath(), n, len(args))
		}
		return nil
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) != 0 {
		return usagef("%s: unexpected arguments %q", cmd.CommandPath(), args)
	}
	return nil
}
