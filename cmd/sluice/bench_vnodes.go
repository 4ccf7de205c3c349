package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/bench"
)

func newBenchVnodesCmd() *cobra.Command {
	var size, dir, transport string
	var ranges, runs int
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "vnodes [--size 256MiB] [--ranges 33] [--transport quic|tls|tcp] [--dir D] [--runs N] [--json]",
		Short: "Stream a vnode-shaped range set out of one sstable against one range of the same size",
		Long: `Generate (or reuse, as bench split does) a parent of the seed workload's shape in D and, from a
'sluice run' node to 'sluice stream fetch' on 127.0.0.1 (separate processes), fetch alternately
N disjoint ranges (one wrapping) holding about half its partitions, and one range holding about
the same half. Prints the median run of each and the multi-run targets: one sstable for the N
ranges, time per byte within 1.3x of the one range's, re-encoded edge bytes within two chunks per run, and
bytes received within 1.02x of the live chunk runs plus the index slice.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := parseSize(size)
			if err != nil {
				return usagef("bench vnodes: --size: %v", err)
			}
			if transport != "quic" && transport != "tls" && transport != "tcp" {
				return usagef("bench vnodes: --transport %q: want quic, tls or tcp", transport)
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			rep, err := bench.Vnodes(cmd.Context(), bench.VnodesOptions{Dir: dir, Size: n, Ranges: ranges, Transport: transport,
				Exe: exe, Runs: runs, Timeout: timeout, Logf: func(f string, a ...any) { logger.Info().Msgf(f, a...) }})
			if err != nil {
				return fmt.Errorf("bench vnodes: %w", err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "parent: %d bytes uncompressed, %d on disk, chunks of %d; transport %s; 127.0.0.1; medians of %d run(s)\n",
				rep.ParentData, rep.ParentDataFile, rep.ChunkLength, rep.Transport, rep.Runs)
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "request\tsstables\truns\tfiller\tre-encoded\treceived\twall s\tns/byte")
			for _, r := range []bench.VnodesRow{rep.Many, rep.One} {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%.3f\t%.3f\n", r.RangeSpec, r.SSTables, r.Runs, human(r.FillerBytes), human(r.ReencodedBytes), human(r.Bytes), r.WallSeconds, r.NsPerByte)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(w)
			tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "target\tmeasured\ttarget\tmet")
			for _, c := range rep.Checks {
				fmt.Fprintf(tw, "%s\t%.3f %s\t%s\t%v\n", c.Name, c.Measured, c.Unit, c.Target, c.Met)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&size, "size", "256MiB", "parent's uncompressed size")
	f.IntVar(&ranges, "ranges", 33, "disjoint ranges in the vnode request (one wraps)")
	f.StringVar(&transport, "transport", "quic", "data plane: quic, tls or tcp")
	f.StringVar(&dir, "dir", os.TempDir(), "directory for the parent and the received sstables")
	f.IntVar(&runs, "runs", 3, "runs per request; medians compared")
	f.DurationVar(&timeout, "timeout", 0, "bound on one run (default 2 min + 2 s per 4 MB)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
