package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/bench"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
)

// splitChild is one child in `sstable split --json`; field names are a scripting interface.
type splitChild struct {
	Path           string `json:"path"`
	Range          string `json:"range"`
	Partitions     int64  `json:"partitions"`
	FirstToken     string `json:"first_token"`
	LastToken      string `json:"last_token"`
	DataFileLength int64  `json:"data_file_length"`
	ClonedBytes    int64  `json:"cloned_bytes"`
	// Digest: the child has a Digest.crc32 (--digest).
	Digest bool `json:"digest"`
	// FillerPartitions and FillerBytes: the empty partitions in the gaps between the child's
	// runs (and before its first), which its index addresses; ReencodedBytes: Data.db bytes
	// written as re-encoded chunks rather than moved as the parent's.
	FillerPartitions int64 `json:"filler_partitions"`
	FillerBytes      int64 `json:"filler_bytes"`
	ReencodedBytes   int64 `json:"reencoded_bytes"`
}

type splitReport struct {
	Children     []splitChild `json:"children"`
	Mode         string       `json:"mode"`
	Reason       string       `json:"reason,omitempty"`
	BytesRead    int64        `json:"bytes_read"`
	BytesWritten int64        `json:"bytes_written"`
	WallSeconds  float64      `json:"wall_seconds"`
	CPUSeconds   float64      `json:"cpu_seconds"`
}

func newSplitCmd() *cobra.Command {
	var out, spec, mode string
	var ways int
	var noDigest, asJSON bool
	var digest string
	cmd := &cobra.Command{
		Use:   "split PATH --out DIR (--ranges SPEC | --ways N) [--mode auto|reflink|copy|rechunk|rewrite] [--digest auto|always|never] [--json]",
		Short: "Split an sstable into children by token range without rewriting rows",
		Long: `Write one child sstable into DIR for each range holding partitions of PATH (a wrapping range
with partitions on both sides of the ring's minimum gives two, one per side). SPEC is a
comma-separated list of (left,right] token ranges; --ways N cuts the parent into N ranges of
about equal partition counts. The parent is never modified; each child is installed atomically.

Modes: reflink shares the parent's chunk extents (FICLONERANGE) and copies only unaligned
edges; copy uses copy_file_range; rechunk recompresses the boundary chunks so children start at
their first partition (no dead bytes); rewrite reads and writes every row (the baseline); auto
is reflink where the file system supports it, else copy, and rewrite for parents zero-copy
refuses (legacy counter shards).

Digest: auto (the default) writes a Digest.crc32 for every child except those whose Data.db is
cloned from a compressed parent. That digest needs every chunk's stored CRC, which sit on about
one page in three of Data.db: from a cold cache it reads nearly the whole parent and makes a
reflink split of 1 GiB 8x slower (0.30 s against 0.04 s). A child without one is still an
ordinary sstable: every chunk keeps its CRC (sluice sstable verify checks them all), and
Cassandra's sstableverify, finding no digest, verifies every partition instead (extended).
always writes one everywhere; never (or --no-digest) nowhere.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("split: --out is required")
			}
			if (spec == "") == (ways == 0) {
				return usagef("split: give exactly one of --ranges and --ways")
			}
			if ways < 0 || ways > maxWays {
				return usagef("split: --ways %d: want 1 to %d", ways, maxWays)
			}
			m, err := slice.ParseMode(mode)
			if err != nil {
				return usageError{err}
			}
			dp, err := slice.ParseDigestPolicy(digest)
			if err != nil {
				return usageError{err}
			}
			// A split is a short process with a small live heap (the parent's chunk offsets,
			// a few builders; filters are off-heap): at the default GOGC=100 a 4 GiB split
			// into 8 collected three times, at 400 once. Five times the live heap before
			// collecting costs a few MiB; GOGC in the environment still wins.
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(400)
			}
			// The split reads the parent's index components whole, CompressionInfo.db at
			// open and the partition index twice: start reading them all now.
			sstable.PrefetchIndex(args[0])
			parent, err := sstable.Open(args[0])
			if err != nil {
				return err
			}
			defer parent.Close()
			if n := parentPartitions(parent); ways > 0 && n > 0 && int64(ways) > n {
				return usagef("split: --ways %d: %s holds %d partitions, so at most %d children", ways, args[0], n, n)
			}
			var ranges token.RangeSet
			// From here on a failure is the input's, not the command line's (exit 1), except
			// ranges that overlap, which the planner finds.
			if spec != "" {
				if ranges, err = parseRanges(parent.Partitioner, spec); err != nil {
					return err
				}
				if _, err := slice.NewPieces(parent.Partitioner, ranges); err != nil {
					return usageError{err}
				}
			}
			io0, _ := fsx.ProcIO()
			var res *slice.Result
			opts := slice.Options{Mode: m, NoDigest: noDigest, Digest: dp}
			s, err := bench.Time(func() error {
				var err error
				if spec == "" {
					// One index pass cuts the ranges and plans the children (the wall and CPU
					// printed include it).
					res, err = slice.SplitEqual(cmd.Context(), parent, ways, out, opts)
				} else {
					res, err = slice.Split(cmd.Context(), parent, ranges, out, opts)
				}
				return err
			})
			if err != nil {
				return err
			}
			io1, _ := fsx.ProcIO()
			rep := splitReport{Children: []splitChild{}, Mode: string(res.Mode), Reason: res.Reason,
				BytesRead: io1.ReadBytes - io0.ReadBytes, BytesWritten: io1.WriteBytes - io0.WriteBytes,
				WallSeconds: s.Wall.Seconds(), CPUSeconds: s.CPU.Seconds()}
			for _, c := range res.Children {
				rep.Children = append(rep.Children, splitChild{Path: c.Desc.Path("Data.db"), Range: c.Range.String(),
					Partitions: c.Partitions, FirstToken: c.FirstToken.String(), LastToken: c.LastToken.String(),
					DataFileLength: c.DataFileLength, ClonedBytes: c.Cloned, Digest: c.Digest,
					FillerPartitions: c.FillerPartitions, FillerBytes: c.FillerBytes, ReencodedBytes: c.EncodedBytes})
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			for _, c := range rep.Children {
				fmt.Fprintf(w, "%s  %s  %d partitions%s  %d bytes (%d cloned)%s\n", c.Path, c.Range, c.Partitions, fillerNote(c.FillerPartitions), c.DataFileLength, c.ClonedBytes, digestNote(c.Digest))
			}
			why := ""
			if rep.Reason != "" {
				why = " (" + rep.Reason + ")"
			}
			fmt.Fprintf(w, "%d children, mode %s%s, %s wall, %s cpu, %d bytes read, %d written\n", len(rep.Children), rep.Mode, why,
				s.Wall.Round(time.Microsecond), s.CPU.Round(time.Microsecond), rep.BytesRead, rep.BytesWritten)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "directory for the children")
	f.StringVar(&spec, "ranges", "", "token ranges, e.g. (-100,250],(250,-100]")
	f.IntVar(&ways, "ways", 0, "split into N ranges of about equal partition counts")
	f.StringVar(&mode, "mode", "auto", "auto, reflink, copy, rechunk or rewrite")
	f.StringVar(&digest, "digest", "auto", "Digest.crc32 for auto (all but cloned children), always or never")
	f.BoolVar(&noDigest, "no-digest", false, "write no Digest.crc32 (--digest never)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// digestNote marks, in human output, a child written without a Digest.crc32.
func digestNote(has bool) string {
	if has {
		return ""
	}
	return ", no digest"
}

// fillerNote says how many filler partitions an sstable holds besides its data, if any.
func fillerNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (+%d filler)", n)
}

// parentPartitions is the partition count Statistics.db records for t (0 when it has none).
func parentPartitions(t *sstable.Table) int64 {
	if s := t.Statistics.Stats; s != nil {
		return s.EstimatedPartitionSize.Total()
	}
	return 0
}
