package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
)

func newGenCmd() *cobra.Command {
	var (
		out, ver, comp, size, partSize, rowSize, chunk, ks, table string
		partitions                                                int64
		ratio, compressibility                                    float64
		seed                                                      uint64
		asJSON                                                    bool
	)
	cmd := &cobra.Command{
		Use:   "gen --out DIR --version nb|nc|oa|da [--size BYTES | --partitions N] [flags]",
		Short: "Generate one Cassandra-valid sstable of a stress-like table",
		Long: `Generate one sstable of the table

  CREATE TABLE <ks>.<table> (pk text, ck text, value blob, PRIMARY KEY (pk, ck))

under DIR/<ks>/<table>-<id>/, Murmur3-partitioned, deterministic for a seed. Sizes accept
KiB, MiB and GiB suffixes.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("gen: --out is required")
			}
			v, err := version.ParseWritable(ver)
			if err != nil {
				return usageError{err}
			}
			o := gen.Options{Version: v, Partitions: partitions, Compression: comp, MinCompressRatio: ratio,
				Compressibility: compressibility, Seed: seed, Keyspace: ks, Table: table}
			for _, f := range []struct {
				name, val string
				dst       *int64
			}{{"size", size, &o.Size}} {
				if f.val != "" {
					if *f.dst, err = parseSize(f.val); err != nil {
						return usagef("gen: --%s: %v", f.name, err)
					}
				}
			}
			for _, f := range []struct {
				name, val string
				dst       *int
			}{{"partition-size", partSize, &o.PartitionSize}, {"row-size", rowSize, &o.RowSize}, {"chunk-length", chunk, &o.ChunkLength}} {
				n, err := parseSize(f.val)
				if err != nil || n <= 0 || n > 1<<30 {
					return usagef("gen: --%s %q: want a size such as 64KiB", f.name, f.val)
				}
				*f.dst = int(n)
			}
			if (o.Size > 0) == (o.Partitions > 0) {
				return usagef("gen: give exactly one of --size and --partitions")
			}
			var bar *progressbar.ProgressBar
			if term.IsTerminal(int(os.Stderr.Fd())) {
				o.Progress = func(done, total int64) {
					if bar == nil {
						bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr),
							progressbar.OptionSetDescription("gen"), progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond))
					}
					_ = bar.Set64(done)
				}
			}
			start := time.Now()
			res, err := gen.Generate(cmd.Context(), out, o)
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(os.Stderr)
			}
			if err != nil {
				return err
			}
			d, err := describe(res.Desc.Path("Data.db"))
			if err != nil {
				return err
			}
			elapsed := time.Since(start).Seconds()
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					*description
					Rows        int64   `json:"rows"`
					WallSeconds float64 `json:"wall_seconds"`
				}{d, res.Rows, elapsed})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s-Data.db: %d partitions, %d rows, %d bytes (%d on disk) in %.2fs\n",
				d.Path, d.Partitions, res.Rows, d.DataLength, d.DataFileLength, elapsed)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "root data directory (the sstable goes under <ks>/<table>-<id>/)")
	f.StringVar(&ver, "version", "", "sstable version: nb, nc, oa (BIG) or da (BTI)")
	f.StringVar(&size, "size", "", "target uncompressed data size, e.g. 1GiB")
	f.Int64Var(&partitions, "partitions", 0, "number of partitions")
	f.StringVar(&partSize, "partition-size", "64KiB", "uncompressed size of each partition")
	f.StringVar(&rowSize, "row-size", "4KiB", "uncompressed size of each row")
	f.StringVar(&comp, "compression", "lz4", "lz4 or none")
	f.StringVar(&chunk, "chunk-length", "16KiB", "compression chunk length")
	f.Float64Var(&ratio, "min-compress-ratio", 0, "store chunks raw unless compression reaches this ratio (0: never)")
	f.Float64Var(&compressibility, "compressibility", 0.5, "fraction of each value that compresses, 0..1")
	f.Uint64Var(&seed, "seed", 1, "random seed (same seed, same sstable)")
	f.StringVar(&ks, "keyspace", "sluice", "keyspace name")
	f.StringVar(&table, "table", "stress", "table name")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// parseSize reads a byte count with an optional B, KiB, MiB, GiB or TiB suffix (KB, MB, GB
// are taken as the binary units too, as Cassandra's configuration does).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q too large", s)
	}
	return n * mult, nil
}
