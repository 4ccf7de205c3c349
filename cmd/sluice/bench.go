package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/bench"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "End-to-end benchmarks that print comparison tables",
		Args:  noArgs,
	}
	cmd.AddCommand(newBenchSSTableCmd())
	return cmd
}

func newBenchSSTableCmd() *cobra.Command {
	var size, dir string
	var entries int64
	var asJSON, keep bool
	cmd := &cobra.Command{
		Use:   "sstable [--size 1GiB] [--index-entries N] [--dir D] [--json]",
		Short: "Format layer: gen vs LZ4 compress, verify vs LZ4 decompress + CRC, Index.db pass",
		Long: `Generate an LZ4 sstable of the stress-like table (64 KiB partitions of 4 KiB rows, 16 KiB
chunks) and measure, on the same bytes: gen against single-core LZ4 compression, verify against
single-core LZ4 decompression + CRC32, and the Index.db pass (key, position, token) of a second
sstable with many small partitions. Page cache warm.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := parseSize(size)
			if err != nil {
				return usagef("bench sstable: --size: %v", err)
			}
			rows, err := bench.SSTable(cmd.Context(), bench.SSTableOptions{Dir: dir, Size: n, IndexEntries: entries, Keep: keep})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "measurement\twall s\tcpu s\trate\tvs reference\ttarget\tallocs/item")
			for _, r := range rows {
				ratio := ""
				if r.Ratio > 0 {
					ratio = fmt.Sprintf("%.2fx", r.Ratio)
				}
				fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.1f %s\t%s\t%s\t%.3f\n", r.Name, r.Seconds, r.CPU, r.Rate, r.Unit, ratio, r.Target, r.PerItem)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&size, "size", "1GiB", "uncompressed size of the generated sstable")
	cmd.Flags().Int64Var(&entries, "index-entries", 1_000_000, "partitions of the index-pass sstable")
	cmd.Flags().StringVar(&dir, "dir", os.TempDir(), "directory for the generated sstables")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the generated sstables")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the rows as JSON")
	return cmd
}
