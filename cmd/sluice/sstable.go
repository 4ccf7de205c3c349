package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
)

func newSSTableCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sstable",
		Short: "Inspect, verify, generate and split sstables",
		Long: `Tools over one sstable. PATH is a Data.db file (or any component) or a descriptor
prefix such as dir/nb-1-big. Tokens print as decimal strings for Murmur3 and as lower-case key
hex for ByteOrdered; keys print as lower-case hex.`,
		Args: noArgs,
	}
	cmd.AddCommand(newDescribeCmd(), newKeysCmd(), newVerifyCmd(), newGenCmd(), newSplitCmd(), newSliceCmd())
	return cmd
}

// description is `sstable describe --json`; field names are a scripting interface.
type description struct {
	Path        string `json:"path"`
	Version     string `json:"version"`
	Format      string `json:"format"`
	Partitioner string `json:"partitioner"`
	Partitions  int64  `json:"partitions"`
	// FillerPartitions are the filler partitions among the index's entries, apart from
	// Partitions (what sluice puts in the gaps of a zero-copy sstable).
	FillerPartitions int64    `json:"filler_partitions"`
	FirstToken       string   `json:"first_token"`
	LastToken        string   `json:"last_token"`
	FirstKey         string   `json:"first_key"`
	LastKey          string   `json:"last_key"`
	DataLength       int64    `json:"data_length"`
	DataFileLength   int64    `json:"data_file_length"`
	Compressor       string   `json:"compressor"`
	ChunkLength      int      `json:"chunk_length"`
	ChunkCount       int      `json:"chunk_count"`
	Components       []string `json:"components"`
	FPChance         float64  `json:"bloom_filter_fp_chance"`
	KeyType          string   `json:"key_type"`
	MinTimestamp     int64    `json:"min_timestamp"`
	MaxTimestamp     int64    `json:"max_timestamp"`
	Level            int32    `json:"sstable_level"`
	RepairedAt       int64    `json:"repaired_at"`
}

func describe(path string) (*description, error) {
	t, err := sstable.Open(path)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	d := &description{
		Path:           t.Desc.Prefix(),
		Version:        t.Version().Name,
		Format:         t.Version().Format.String(),
		Partitioner:    t.Partitioner.Name(),
		DataLength:     t.DataLength(),
		DataFileLength: t.DataFileLength,
		ChunkLength:    t.Data.ChunkLength(),
		ChunkCount:     t.Data.ChunkCount(),
		Components:     []string{},
		FPChance:       t.Statistics.Validation.BloomFilterFPChance,
		KeyType:        t.Statistics.Header.KeyType,
	}
	if t.Compression != nil {
		d.Compressor = compress.SimpleName(t.Compression.Compressor)
	}
	for _, c := range t.Components {
		d.Components = append(d.Components, string(c))
	}
	if s := t.Statistics.Stats; s != nil {
		d.MinTimestamp, d.MaxTimestamp = s.MinTimestamp, s.MaxTimestamp
		d.Level, d.RepairedAt = s.SSTableLevel, s.RepairedAt
	}
	err = t.ScanPartitionsMarked(func(p *sstable.Partition, filler bool) error {
		if p.Ordinal == 0 {
			d.FirstToken, d.FirstKey = p.Token.String(), hex.EncodeToString(p.Key)
		}
		d.LastToken, d.LastKey = p.Token.String(), hex.EncodeToString(p.Key)
		if filler {
			d.FillerPartitions++
		} else {
			d.Partitions++
		}
		return nil
	})
	return d, err
}

func newDescribeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe [--json] PATH",
		Short: "Print an sstable's version, partitioner, key range, sizes and compression",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := describe(args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, d)
			}
			tw := newTable(out)
			tw.row("path", d.Path)
			tw.row("version", d.Version+" ("+d.Format+")")
			tw.row("partitioner", d.Partitioner)
			tw.row("partitions", fmt.Sprint(d.Partitions)+fillerNote(d.FillerPartitions))
			tw.row("first token", d.FirstToken)
			tw.row("last token", d.LastToken)
			tw.row("first key", d.FirstKey)
			tw.row("last key", d.LastKey)
			tw.row("data length", fmt.Sprintf("%d (uncompressed)", d.DataLength))
			tw.row("data file length", fmt.Sprintf("%d (on disk)", d.DataFileLength))
			comp := d.Compressor
			if comp == "" {
				comp = "none"
			}
			tw.row("compression", fmt.Sprintf("%s, %d-byte chunks x %d", comp, d.ChunkLength, d.ChunkCount))
			tw.row("components", strings.Join(d.Components, " "))
			tw.row("bloom fp chance", fmt.Sprint(d.FPChance))
			tw.row("key type", d.KeyType)
			return tw.flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// keyLine is one line of `sstable keys --json`.
type keyLine struct {
	Ordinal  int64  `json:"ordinal"`
	Key      string `json:"key"`
	Token    string `json:"token"`
	Position int64  `json:"position"`
	// Filler marks a filler partition: empty, in a gap between a zero-copy sstable's runs.
	Filler bool `json:"filler,omitempty"`
}

func newKeysCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "keys [--json] PATH",
		Short: "List every partition: ordinal, key, token and uncompressed Data.db position",
		Long: `List every partition of the sstable in index order. With --json, one object per line with
ordinal, key (hex), token (string), position (uncompressed Data.db offset) and "filler": true
for a filler partition (an empty partition sluice puts in a gap between a zero-copy sstable's
runs); otherwise tab-separated columns in the same order, a filler's line ending in a fifth
column "filler". The index is read, and Data.db only for partitions of exactly a filler's size.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := sstable.Open(args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			w := bufio.NewWriterSize(cmd.OutOrStdout(), 256<<10)
			enc := json.NewEncoder(w)
			var line keyLine
			err = t.ScanPartitionsMarked(func(p *sstable.Partition, filler bool) error {
				if asJSON {
					line = keyLine{Ordinal: p.Ordinal, Key: hex.EncodeToString(p.Key), Token: p.Token.String(), Position: p.Position, Filler: filler}
					return enc.Encode(&line)
				}
				mark := ""
				if filler {
					mark = "\tfiller"
				}
				_, err := fmt.Fprintf(w, "%d\t%x\t%s\t%d%s\n", p.Ordinal, p.Key, p.Token, p.Position, mark)
				return err
			})
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	return cmd
}

func newVerifyCmd() *cobra.Command {
	var asJSON, extended, strict bool
	var minIndexInterval int
	var spec string
	cmd := &cobra.Command{
		Use:   "verify [--json] [--extended] [--strict] [--ranges SPEC] PATH",
		Short: "Check every component of an sstable against its checksums and the others",
		Long: `Check Digest.crc32, every chunk CRC (or CRC.db) and decompression, the key at every index
position, index order, Summary against Index, every key in Filter (and the filter bit for bit),
Statistics CRCs and parse-to-end, first/last keys and partition counts. --extended also reads
every row. Filler partitions (what sluice puts in the gaps of a zero-copy sstable) are counted
apart (filler_partitions). --strict also holds the file to Cassandra's sequential rules: the
first partition at position 0 and every byte of the data in a partition the index addresses
(what compaction, getScanner(range), sstableverify -e and scrub need); --ranges SPEC, that every
partition lies in those token ranges (what nodetool import checks). Exit 0 only when everything
holds; otherwise exit 1 with one line per problem naming the component file and byte offset.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := sstable.VerifyOptions{Extended: extended, MinIndexInterval: minIndexInterval, Strict: strict}
			if spec != "" {
				t, err := sstable.Open(args[0])
				if err != nil {
					return err
				}
				p := t.Partitioner
				t.Close()
				if opts.Ranges, err = parseRanges(p, spec); err != nil {
					return err
				}
			}
			rep, err := sstable.Verify(args[0], opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
			} else {
				for _, p := range rep.Problems {
					fmt.Fprintln(out, p.String())
				}
				if rep.OK {
					fmt.Fprintf(out, "%s: OK (%d partitions, %d chunks", rep.Path, rep.Partitions, rep.Chunks)
					if extended {
						fmt.Fprintf(out, ", %d rows", rep.Rows)
					}
					if rep.Fillers > 0 {
						fmt.Fprintf(out, ", %d of them filler partitions", rep.Fillers)
					}
					if rep.DeadBytes > 0 {
						fmt.Fprintf(out, ", %d dead bytes in %d regions skipped", rep.DeadBytes, rep.DeadRegions)
					}
					fmt.Fprintln(out, ")")
					if !rep.Scannable {
						// Index-driven readers are fine; Cassandra 5.0's compaction is not.
						fmt.Fprintf(out, "%s: not for Cassandra 5.0's sequential readers (compaction, sstabledump): dead bytes they would parse\n", rep.Path)
					}
				}
			}
			if !rep.OK {
				return failedError{}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	cmd.Flags().BoolVar(&extended, "extended", false, "also read every row")
	cmd.Flags().BoolVar(&strict, "strict", false, "also require Cassandra's sequential rules: first partition at 0, no byte outside a partition")
	cmd.Flags().StringVar(&spec, "ranges", "", "token ranges every partition must lie in, (left,right],...")
	cmd.Flags().IntVar(&minIndexInterval, "min-index-interval", 128, "the table's min_index_interval that Summary.db must match")
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table prints aligned two-column text.
type table struct {
	w    io.Writer
	rows [][2]string
}

func newTable(w io.Writer) *table { return &table{w: w} }

func (t *table) row(k, v string) { t.rows = append(t.rows, [2]string{k, v}) }

func (t *table) flush() error {
	width := 0
	for _, r := range t.rows {
		width = max(width, len(r[0]))
	}
	for _, r := range t.rows {
		if _, err := fmt.Fprintf(t.w, "%-*s  %s\n", width, r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}
