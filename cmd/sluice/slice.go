package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/bench"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/slice"
)

// sliceReport is `sstable slice --json`: one object per written sstable (exactly one unless the
// bounds forced a fallback; one with an empty path when no partition falls in the ranges).
// The field names are a scripting interface.
type sliceReport struct {
	Path       string `json:"path"`
	Partitions int64  `json:"partitions"`
	Runs       int    `json:"runs"`
	// FillerPartitions: empty partitions in the gaps between runs, addressed by the index.
	FillerPartitions int64   `json:"filler_partitions"`
	FillerBytes      int64   `json:"filler_bytes"`
	ReencodedBytes   int64   `json:"reencoded_bytes"`
	DataFileLength   int64   `json:"data_file_length"`
	Digest           bool    `json:"digest"` // has a Digest.crc32 (--digest)
	Mode             string  `json:"mode"`
	Reason           string  `json:"reason"`
	BytesWritten     int64   `json:"bytes_written"`
	WallSeconds      float64 `json:"wall_seconds"`
}

func newSliceCmd() *cobra.Command {
	var out, spec, mode string
	var noDigest, asJSON bool
	var digest string
	var bounds slice.Bounds
	cmd := &cobra.Command{
		Use:   "slice PATH --ranges SPEC --out DIR [--mode auto|reflink|copy|rechunk] [--digest auto|always|never] [--json]",
		Short: "Write one sstable holding exactly the parent's partitions in any set of token ranges",
		Long: `Write into DIR one sstable holding exactly PATH's partitions in SPEC, a comma-separated list of
(left,right] token ranges (any number; wrapping allowed; overlapping ranges are a usage error).
Nothing is written when no partition falls in them. The child's Data.db is the parent's chunk
runs for all the ranges, concatenated in token order: each run's whole chunks as they are, the
chunks at its edges re-encoded, and between runs (and before the first) filler partitions,
empty partitions keyed inside the ranges that the index addresses and every Cassandra reader
steps through as nothing (reported as filler_partitions, filler_bytes). Runs of a key type that
cannot be filled (fixed-size keys: int, bigint, uuid, ...) are re-encoded instead.

Modes: reflink clones each run's block-aligned middle (FICLONERANGE) where its offsets allow and
copies the rest; copy uses copy_file_range; rechunk recompresses the runs back to back into
fresh chunks, giving a gap-free sstable (no dead bytes); auto is reflink where the file system
supports it, else copy. Past --max-runs runs or a dead-bytes ratio above --max-dead-ratio the
zero-copy modes fall back to one sstable per run, and reason says why.

Digest: as for split, auto (the default) writes a Digest.crc32 unless the Data.db is cloned from
a compressed parent; always, or never (--no-digest).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" || spec == "" {
				return usagef("slice: --ranges and --out are required")
			}
			m, err := slice.ParseMode(mode)
			if err != nil || m == slice.ModeRewrite {
				return usagef("slice: --mode %q: want auto, reflink, copy or rechunk", mode)
			}
			dp, err := slice.ParseDigestPolicy(digest)
			if err != nil {
				return usageError{err}
			}
			parent, err := sstable.Open(args[0])
			if err != nil {
				return err
			}
			defer parent.Close()
			ranges, err := parseRanges(parent.Partitioner, spec)
			if err != nil {
				return err
			}
			if _, err := slice.NewPieces(parent.Partitioner, ranges); err != nil {
				return usageError{err}
			}
			io0, _ := fsx.ProcIO()
			var res *slice.Result
			s, err := bench.Measure(func() error {
				var err error
				res, err = slice.Slice(cmd.Context(), parent, ranges, out, slice.Options{Mode: m, NoDigest: noDigest, Digest: dp, Bounds: bounds})
				return err
			})
			if errors.Is(err, slice.ErrOverlap) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			io1, _ := fsx.ProcIO()
			return printSlice(cmd, res, io1.WriteBytes-io0.WriteBytes, s.Wall, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "directory for the sstable")
	f.StringVar(&spec, "ranges", "", "token ranges, e.g. (-100,250],(900,-800]")
	f.StringVar(&mode, "mode", "auto", "auto, reflink, copy or rechunk")
	f.StringVar(&digest, "digest", "auto", "Digest.crc32 for auto (unless cloned), always or never")
	f.BoolVar(&noDigest, "no-digest", false, "write no Digest.crc32 (--digest never)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per sstable written")
	f.IntVar(&bounds.MaxRuns, "max-runs", slice.DefaultMaxRuns, "most runs in one sstable before falling back to one per run")
	f.Float64Var(&bounds.MaxDeadRatio, "max-dead-ratio", slice.DefaultMaxDeadRatio, "most dead bytes per uncompressed byte before falling back (negative: no limit)")
	return cmd
}

func printSlice(cmd *cobra.Command, res *slice.Result, written int64, wall time.Duration, asJSON bool) error {
	reps := []sliceReport{}
	for _, c := range res.Children {
		reps = append(reps, sliceReport{Path: c.Desc.Path("Data.db"), Partitions: c.Partitions, Runs: c.Runs,
			FillerPartitions: c.FillerPartitions, FillerBytes: c.FillerBytes, ReencodedBytes: c.EncodedBytes, DataFileLength: c.DataFileLength, Digest: c.Digest})
	}
	reason := res.Reason
	if len(reps) == 0 {
		reps = append(reps, sliceReport{})
		reason = "no partition falls in the ranges"
	}
	w := cmd.OutOrStdout()
	for i := range reps {
		r := &reps[i]
		r.Mode, r.Reason, r.BytesWritten, r.WallSeconds = string(res.Mode), reason, written, wall.Seconds()
		if asJSON {
			if err := writeJSON(w, r); err != nil {
				return err
			}
			continue
		}
		if r.Path == "" {
			fmt.Fprintf(w, "nothing written: %s\n", reason)
			continue
		}
		fmt.Fprintf(w, "%s  %d partitions%s in %d runs  %d bytes  mode %s  %s\n", r.Path, r.Partitions, fillerNote(r.FillerPartitions), r.Runs,
			r.DataFileLength, r.Mode, wall.Round(time.Microsecond))
		if reason != "" {
			fmt.Fprintf(w, "  %s\n", reason)
		}
	}
	return nil
}
