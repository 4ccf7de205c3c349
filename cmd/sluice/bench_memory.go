package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/bench"
)

func newBenchMemoryCmd() *cobra.Command {
	var dir, transport, partSize, profiles, format string
	var counts []int64
	var runs int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "memory [--partitions 500000,2000000,20000000] [--partition-size 128] [--format oa|da|...] [--transport tls|quic|tcp] [--dir D] [--runs N] [--json]",
		Short: "Peak RSS of the sender and receiver of a half-ring fetch against the parent's partition count",
		Long: `Generate (or reuse) one parent per partition count (--partition-size bytes per partition, LZ4,
16 KiB chunks, sstable version --format: oa is BIG, da BTI) in D and fetch two non-adjacent quarters of its ring from a 'sluice run' node
with 'sluice stream fetch', separate processes on 127.0.0.1. Prints per parent: partitions,
payload, MB/s, and each side's peak RSS read from outside the process (VmHWM: the node's after
the fetch, the receiver's at its exit), with the growth from the first parent, and the
receiver's bloom filter (the received child's Filter.db, held outside the Go heap while it is
built: 1.2 bytes per partition, as Cassandra holds it for every open sstable) with the
receiver's peak less it.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, err := parseSize(partSize)
			if err != nil || ps < 64 || ps > 1<<20 {
				return usagef("bench memory: --partition-size %q: want 64 bytes to 1MiB", partSize)
			}
			for _, n := range counts {
				if n < 4 {
					return usagef("bench memory: --partitions %d: want at least 4", n)
				}
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			rows, err := bench.Memory(cmd.Context(), bench.MemoryOptions{Dir: dir, Partitions: counts, PartitionSize: int(ps),
				Version: format, Transport: transport, Runs: runs, Exe: exe, ProfileDir: profiles, Logf: func(f string, a ...any) { logger.Info().Msgf(f, a...) }})
			if err != nil {
				return fmt.Errorf("bench memory: %w", err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "half the ring fetched over %s on 127.0.0.1; %d-byte partitions; medians of %d run(s)\n", transport, ps, max(runs, 1))
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "partitions\tparent data\tpayload\tMB/s\tsender peak RSS\tgrowth\treceiver peak RSS\tgrowth\tits filter\tless filter\tgrowth")
			mib := func(n int64) float64 { return float64(n) / (1 << 20) }
			less0 := rows[0].ReceiverPeakRSS - rows[0].FilterBytes
			for _, r := range rows {
				less := r.ReceiverPeakRSS - r.FilterBytes
				fmt.Fprintf(tw, "%d\t%s\t%s\t%.1f\t%s\t%+.1f MiB\t%s\t%+.1f MiB\t%s\t%s\t%+.1f MiB\n", r.Partitions, human(r.ParentData), human(r.Bytes), r.MBps,
					human(r.SenderPeakRSS), mib(r.SenderPeakRSS-rows[0].SenderPeakRSS),
					human(r.ReceiverPeakRSS), mib(r.ReceiverPeakRSS-rows[0].ReceiverPeakRSS),
					human(r.FilterBytes), human(less), mib(less-less0))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.Int64SliceVar(&counts, "partitions", []int64{500_000, 2_000_000, 20_000_000}, "parents' partition counts")
	f.StringVar(&partSize, "partition-size", "128", "partition size of the generated parents")
	f.StringVar(&format, "format", "oa", "sstable version of the generated parents (oa: BIG, da: BTI)")
	f.StringVar(&transport, "transport", "tls", "data plane: quic, tls or tcp")
	f.StringVar(&dir, "dir", os.TempDir(), "directory for the parents (reused between runs) and the fetched copies")
	f.IntVar(&runs, "runs", 1, "fetches per parent (medians are printed)")
	f.StringVar(&profiles, "profiles", "", "write CPU and allocation profiles of every sender and receiver into this directory")
	f.BoolVar(&asJSON, "json", false, "print the rows as JSON")
	return cmd
}
