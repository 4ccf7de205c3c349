package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/bench"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "End-to-end benchmarks that print comparison tables",
		Args:  noArgs,
	}
	cmd.AddCommand(newBenchSSTableCmd(), newBenchSplitCmd(), newBenchStreamCmd(), newBenchVnodesCmd(), newBenchMemoryCmd())
	cmd.AddCommand(benchStreamHelpers()...)
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

func newBenchSplitCmd() *cobra.Command {
	var size, dir, partSize string
	var ways, runs int
	var cold, xfs, asJSON, process bool
	var configs []string
	cmd := &cobra.Command{
		Use:   "split [--size 4GiB] [--ways 8] [--dir D | --xfs] [--cold] [--process] [--partition-size 64KiB] [--configs rewrite,reflink-nodigest] [--json]",
		Short: "Split modes against the row-by-row rewrite: wall, CPU, device I/O, heap",
		Long: `Generate (or reuse) a parent of the seed workload's shape (64 KiB partitions of 4 KiB rows,
LZ4, 16 KiB chunks) in D and split it N ways with each configuration: rewrite, copy, reflink,
reflink + no digest, rechunk. Prints medians of 3 runs: wall clock, CPU time, bytes read from
and written to the device (/proc/self/io), heap allocated. --cold evicts the parent's pages
before each run and checks they are gone. --xfs makes a loop-mounted XFS with reflink=1 for the
run (root, xfsprogs) and removes it afterwards. --process times every split as a whole
'sluice sstable split --ways N' process from outside (fork to exit; CPU and device I/O from
its rusage) instead of in this process. --partition-size generates a parent of smaller
partitions (e.g. 512 for a many-partition parent). --configs runs only the named
configurations (rewrite, copy, reflink, reflink-nodigest, rechunk) beside rewrite.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := parseSize(size)
			if err != nil {
				return usagef("bench split: --size: %v", err)
			}
			var ps int64
			if partSize != "" {
				if ps, err = parseSize(partSize); err != nil || ps <= 0 || ps > 1<<30 {
					return usagef("bench split: --partition-size %q: want a size up to 1GiB", partSize)
				}
			}
			var exe string
			if process {
				if exe, err = os.Executable(); err != nil {
					return err
				}
			}
			rep, err := bench.Split(cmd.Context(), bench.SplitOptions{Dir: dir, XFS: xfs, Size: n, Ways: ways, Cold: cold, Runs: runs,
				PartitionSize: int(ps), Exe: exe, Configs: configs,
				Logf: func(f string, a ...any) { logger.Info().Msgf(f, a...) }})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			temp := "warm"
			if rep.Cold {
				temp = "cold"
			}
			how := "in process"
			if rep.WholeProcess {
				how = "whole process timed from outside"
			}
			fmt.Fprintf(w, "parent: %d bytes uncompressed, %d on disk, %d partitions, %d bytes of index components; %s; %s cache; %d ways; %s\n",
				rep.ParentData, rep.ParentDataFile, rep.Partitions, rep.IndexBytes, rep.FileSystem, temp, ways, how)
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "configuration\tmode used\twall s\tcpu s\tcpu µs/partition\tread from device\twritten to device\theap\tvs rewrite\twrites / rewrite's")
			for _, r := range rep.Rows {
				ratio := "-"
				if r.WriteRatio > 0 {
					ratio = fmt.Sprintf("1/%.0f", r.WriteRatio)
				}
				fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t%.3f\t%s\t%s\t%s\t%.1fx\t%s\n", r.Config, r.Mode, r.WallSeconds, r.CPUSeconds,
					r.CPUSeconds/float64(max(rep.Partitions, 1))*1e6, human(r.ReadBytes), human(r.WrittenBytes), human(int64(r.HeapBytes)), r.SpeedupVsRW, ratio)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&size, "size", "4GiB", "parent's uncompressed size")
	f.IntVar(&ways, "ways", 8, "children per split")
	f.IntVar(&runs, "runs", 3, "runs per configuration (medians are printed)")
	f.StringVar(&dir, "dir", os.TempDir(), "directory for the parent and children")
	f.BoolVar(&xfs, "xfs", false, "run on a fresh loop-mounted XFS with reflink (needs root and xfsprogs)")
	f.BoolVar(&cold, "cold", false, "evict the parent's pages before each run")
	f.BoolVar(&process, "process", false, "time each split as a whole 'sluice sstable split' process from outside")
	f.StringVar(&partSize, "partition-size", "", "partition size of the generated parent (default 64KiB)")
	f.StringSliceVar(&configs, "configs", nil, "only these configurations beside rewrite: copy, reflink, reflink-nodigest, rechunk")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func newBenchStreamCmd() *cobra.Command {
	var size, dir, transport, congestion, profiles, partSize, refPartSize, format, refFormat string
	var runs, sstables int
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stream [--size 2GiB] [--transport quic|tls|tcp] [--tcp-congestion CC] [--sstables N] [--format V] [--partition-size S] [--reference-partition-size R] [--reference-format V] [--dir D] [--runs N] [--json]",
		Short: "Streaming against a raw quic-go transfer: MB/s, CPU per GiB per side, receiver heap and RSS",
		Long: `Generate (or reuse, as bench split does) a parent of the seed workload's shape (64 KiB
partitions of 4 KiB rows, LZ4, 16 KiB chunks) in D, make a CA and node certificates, and
measure on 127.0.0.1, sender and receiver in separate processes:
  (a) a raw quic-go transfer over one stream, with the same TLS and flow-control windows, of
      as many bytes of the parent's Data.db as (b) moves, written to a file and fsynced;
  (b) partial zero-copy streaming of two quarter-ring ranges (~50% of the parent) from a
      'sluice run' node to 'sluice stream fetch';
  (c) the same ranges by the rows path, from a copy of the parent marked as having legacy
      counter shards ("not supported" when the stream package refuses them);
  (d) the entire sstable (a range covering the whole ring);
and with --transport tcp also:
  (e) a raw TCP transfer of (b)'s byte count, sendfile on the sender, spliced into a file
      on the receiver and fsynced;
  (f) (b) over the TCP data plane (node with transport: tcp, 'stream fetch --transport tcp');
or with --transport tls:
  (g) a raw Go TLS 1.3 over TCP transfer of (b)'s byte count with the nodes' certificates,
      1 MiB reads and writes on both sides, written to a file and fsynced;
  (h) (b) over the TLS data plane (node with transport: tls, 'stream fetch --transport tls').
With --sstables N (e.g. 256 with --size 512MiB: 256 sstables of 2 MiB) also:
  (i) the whole ring of a table made of the parent split into N sstables (rewrite mode,
      made once and reused), over QUIC as (d): the check compares its time per byte with
      (d)'s, the same bytes as one sstable.
--partition-size makes the parent of smaller (or larger) partitions, e.g. 512 (128-byte rows).
--reference-partition-size R (e.g. --partition-size 512 --reference-partition-size 64KiB)
makes a pair run instead, for the small-partitions target: a second parent of the same size
with R-byte partitions, and only (b) and, with tcp or tls, (f) or (h) on each parent, the two
fetches of a configuration back to back in every run (their order swapped every other run),
plus (e) or (g) once per run as the machine's reference. Each run's ratio of the two
fetches' MB/s is checked against >= 0.80: the median of the runs' ratios, with their minimum
and maximum. --format V makes the parent of sstable version V (oa, the default, or nb: BIG;
da: BTI); --reference-format V2 makes a pair run the same way against a reference parent of
version V2 (e.g. --format da --reference-format oa --partition-size 512: BTI's small
partitions against BIG's).
--tcp-congestion sets the congestion control of (f)/(h)'s data connection on both ends.
Per configuration: payload MB/s, sender and receiver CPU seconds per GiB, receiver heap
allocated per GiB and peak RSS, and the issue's targets beside the measured ratios.
--cpuprofile DIR writes a CPU profile of every sender and receiver there.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := parseSize(size)
			if err != nil {
				return usagef("bench stream: --size: %v", err)
			}
			var ps, rps int64
			for _, f := range []struct {
				flag, val string
				out       *int64
			}{{"--partition-size", partSize, &ps}, {"--reference-partition-size", refPartSize, &rps}} {
				if f.val == "" {
					continue
				}
				if *f.out, err = parseSize(f.val); err != nil || *f.out <= 0 || *f.out > 1<<30 {
					return usagef("bench stream: %s %q: want a size up to 1GiB", f.flag, f.val)
				}
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o := bench.StreamOptions{Dir: dir, Size: n, PartitionSize: int(ps), ReferencePartitionSize: int(rps), Version: format, ReferenceVersion: refFormat,
				Transport: transport, TCPCongestion: congestion, Exe: exe,
				Runs: runs, Timeout: timeout, CPUProfileDir: profiles, SSTables: sstables,
				Logf: func(f string, a ...any) { logger.Info().Msgf(f, a...) }}
			if err := o.Validate(); err != nil {
				return usagef("bench stream: %v", err)
			}
			rep, err := bench.Stream(cmd.Context(), o)
			if err != nil {
				return fmt.Errorf("bench stream: %w", err)
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
				return streamFailed(rep)
			}
			if err := printStreamReport(cmd.OutOrStdout(), rep); err != nil {
				return err
			}
			return streamFailed(rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&size, "size", "2GiB", "parent's uncompressed size")
	f.StringVar(&partSize, "partition-size", "", "partition size of the generated parent (default 64KiB; e.g. 512 for many partitions)")
	f.StringVar(&refPartSize, "reference-partition-size", "", "pair run: a second parent of this partition size, its partial fetches run by run beside the parent's and their MB/s compared (e.g. 64KiB)")
	f.StringVar(&format, "format", "", "sstable version of the generated parent: oa (default) or nb, BIG; da, BTI")
	f.StringVar(&refFormat, "reference-format", "", "pair run: a reference parent of this sstable version, its partial fetches run by run beside the parent's and their MB/s compared (e.g. oa against --format da)")
	f.StringVar(&transport, "transport", "quic", "data plane: quic; tcp to add (e) raw TCP and (f) partial over the TCP data plane; tls to add (g) raw Go TLS and (h) partial over the TLS data plane")
	f.StringVar(&congestion, "tcp-congestion", "", "TCP congestion control of (f)/(h)'s data connection, e.g. bbr (default: the kernel's)")
	f.StringVar(&dir, "dir", os.TempDir(), "directory for the parent (reused) and the run's temporary files")
	f.IntVar(&runs, "runs", 1, "runs per configuration (medians are printed)")
	f.IntVar(&sstables, "sstables", 0, "add (i): the whole ring of the parent split into this many sstables, against (d)")
	f.DurationVar(&timeout, "timeout", 0, "bound on one run of one configuration (default 2m + 2s per 4 MB of parent)")
	f.StringVar(&profiles, "cpuprofile", "", "directory for CPU profiles of every sender and receiver process")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// printStreamReport prints bench stream's report as tables: the parent(s), the rows, the
// checks; a pair run adds each row's partition size and the spread of the runs' ratios.
func printStreamReport(w io.Writer, rep *bench.StreamReport) error {
	pair := rep.Reference != nil
	if pair {
		for _, p := range []struct {
			what string
			p    bench.StreamParent
		}{{"parent", rep.StreamParent}, {"reference", *rep.Reference}} {
			fmt.Fprintf(w, "%s: %s partitions, %d bytes uncompressed, %d on disk, %d partitions; partial ranges %s\n",
				p.what, p.p.Label, p.p.ParentData, p.p.ParentDataFile, p.p.Partitions, p.p.PartialRanges)
		}
		fmt.Fprintf(w, "transport %s; 127.0.0.1; page cache warm; medians of %d interleaved run(s)\n", rep.Transport, rep.Runs)
	} else {
		fmt.Fprintf(w, "parent: %s, %d bytes uncompressed, %d on disk, %d partitions; transport %s; 127.0.0.1; page cache warm; medians of %d run(s)\n",
			rep.Version, rep.ParentData, rep.ParentDataFile, rep.Partitions, rep.Transport, rep.Runs)
		fmt.Fprintf(w, "partial ranges: %s\n", rep.PartialRanges)
	}
	// A pair run's rows have a partitions column after the configuration.
	config := func(r bench.StreamRow) string {
		if pair {
			return r.Config + "\t" + r.Parent
		}
		return r.Config
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	header := "configuration\tsstables\tpayload\twall s\tMB/s\tsender cpu s/GiB\treceiver cpu s/GiB\treceiver heap/GiB\treceiver peak RSS\tsender peak RSS"
	if pair {
		header = strings.Replace(header, "configuration\t", "configuration\tpartitions\t", 1)
	}
	fmt.Fprintln(tw, header)
	for _, r := range rep.Rows {
		if !r.OK() {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\n", config(r), r.Status)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.1f\t%.3f\t%.3f\t%s\t%s\t%s\n", config(r), r.Kinds, human(r.Bytes), r.WallSeconds, r.MBps,
			r.SenderCPUPerGiB, r.ReceiverCPUPerGiB, human(int64(r.ReceiverHeapPerGiB)), human(r.ReceiverPeakRSS), human(r.SenderPeakRSS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Rows {
		if r.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", r.Config, r.Note)
		}
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	if pair {
		fmt.Fprintln(tw, "target\tmeasured\ttarget\tmet\truns: min / median / max")
	} else {
		fmt.Fprintln(tw, "target\tmeasured\ttarget\tmet")
	}
	for _, c := range rep.Checks {
		met := "yes"
		if !c.Met {
			met = "NO"
		}
		measured := fmt.Sprintf("%.2fx", c.Measured)
		if c.Unit != "x" {
			measured = fmt.Sprintf("%.1f %s", c.Measured, c.Unit)
		}
		target := c.Target
		if c.Unit != "x" {
			target += " " + c.Unit
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s", c.Name, measured, target, met)
		if pair {
			spread := ""
			if len(c.PerRun) > 0 {
				spread = fmt.Sprintf("%.2f / %.2f / %.2f (%d runs)", c.RunMin, c.Measured, c.RunMax, len(c.PerRun))
			}
			line += "\t" + spread
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range rep.Checks {
		if len(c.PerRun) > 0 {
			runs := make([]string, len(c.PerRun))
			for i, r := range c.PerRun {
				runs[i] = fmt.Sprintf("%.2f", r)
			}
			fmt.Fprintf(w, "%s, run by run: %s; ratio of the rows' medians %.2f\n", c.Name, strings.Join(runs, " "), c.RatioOfMedians)
		}
	}
	return nil
}

// streamFailed is exit status 1, with the report printed, when a configuration failed.
func streamFailed(rep *bench.StreamReport) error {
	for _, r := range rep.Rows {
		if r.Status == "failed" {
			return failedError{}
		}
	}
	return nil
}

// human prints a byte count with a binary unit.
func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
