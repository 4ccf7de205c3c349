package slice

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/cputime"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// BenchmarkSmallPartitionsFetch is the index work of `bench stream --size 256MiB
// --partition-size 512 --format da --reference-format oa` without the network: a parent of
// 524,288 partitions of 512 bytes (LZ4, 16 KiB chunks), half the ring as the bench fetches
// it, for a BTI (da) and a BIG (oa) parent.
//
//   - plan: the sender's slice.Partials as stream's sender calls it (IndexLater; BTI:
//     IndexPositions, BIG: IndexBig), before it can announce anything;
//   - slice: the index slice as it is sent (IndexReader);
//   - rebuild: the receiver's PartialRebuild of that slice (BTI: the keys read from the
//     received Data.db), Finish included.
//
// cpu-ns/partition counts the partitions of the child (262,144).
func BenchmarkSmallPartitionsFetch(b *testing.B) {
	ranges, err := token.ParseRanges(token.Murmur3, "(-9223372036854775808,-4600221549233074579],(20685897168672215,4619848634690993718]")
	if err != nil {
		b.Fatal(err)
	}
	for _, vn := range []string{"da", "oa"} {
		b.Run(vn, func(b *testing.B) {
			v, _ := version.ParseWritable(vn)
			dir := b.TempDir()
			res, err := gen.Generate(context.Background(), filepath.Join(dir, "parent"), gen.Options{Version: v,
				Partitions: 1 << 19, PartitionSize: 512, RowSize: 128, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			parent := openTable(b, res.Desc.Prefix())
			opts := PartialOptions{OnePerParent: true, IndexLater: true, Format: IndexBig}
			if v.Format == version.BTI {
				opts.Format = IndexPositions
			}
			plan := func() Partial {
				ps, _, err := Partials(parent, ranges, opts)
				if err != nil || len(ps) != 1 {
					b.Fatalf("%d partials: %v", len(ps), err)
				}
				return ps[0]
			}
			readSlice := func(pt Partial) []byte {
				rd, err := IndexReader(parent, pt)
				if err != nil {
					b.Fatal(err)
				}
				defer rd.Close()
				s, err := io.ReadAll(rd)
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
			pt := plan()
			n := float64(pt.Plan.Partitions)
			b.Run("plan", func(b *testing.B) {
				m := cputime.Start(b)
				for b.Loop() {
					plan()
				}
				m.Report(n, "cpu-ns/partition")
			})
			b.Run("slice", func(b *testing.B) {
				m := cputime.Start(b)
				for b.Loop() {
					readSlice(pt)
				}
				m.Report(n, "cpu-ns/partition")
			})
			// The child's Data.db as a receiver holds it, and what came with it.
			slice := readSlice(pt)
			stats, err := os.ReadFile(parent.Path(descriptor.Statistics))
			if err != nil {
				b.Fatal(err)
			}
			data, err := os.Create(filepath.Join(dir, "received-Data.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer data.Close()
			shipped := make([]Segment, len(pt.Layout.Segments))
			for i, s := range pt.Layout.Segments {
				shipped[i] = Segment{FirstChunk: s.FirstChunk, LastChunk: s.LastChunk, PLo: s.PLo, DstOff: s.DstOff, SrcEnd: s.Length()}
				if _, err := io.Copy(io.NewOffsetWriter(data, s.DstOff), io.NewSectionReader(parent.DataFile(), s.SrcOff, s.Length())); err != nil {
					b.Fatal(err)
				}
			}
			lay, err := ReceivedLayout(true, pt.Layout.ChunkLength, pt.Layout.DataLength, shipped)
			if err != nil {
				b.Fatal(err)
			}
			spec, err := SpecFromStatistics(v, stats, pt.Rows)
			if err != nil {
				b.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			if err := os.Mkdir(out, 0o755); err != nil {
				b.Fatal(err)
			}
			b.Run("rebuild", func(b *testing.B) {
				m := cputime.Start(b)
				for i := 0; b.Loop(); i++ {
					d := descriptor.Descriptor{Dir: out, Version: v, ID: fmt.Sprint(i + 1)}
					inst, err := fsx.NewInstall(out, d.Filename(descriptor.TOC))
					if err != nil {
						b.Fatal(err)
					}
					ro := RebuildOptions{Partitions: pt.Plan.Partitions, Format: pt.IndexFormat, Ranges: ranges}
					if pt.IndexFormat == IndexPositions {
						ro.Data, ro.Compression = data, pt.Info
					}
					r, err := NewPartialRebuild(spec, inst, d, lay, ro)
					if err != nil {
						b.Fatal(err)
					}
					for s := slice; len(s) > 0; {
						k := min(len(s), 256<<10)
						if err := r.Write(s[:k]); err != nil {
							b.Fatal(err)
						}
						s = s[k:]
					}
					if _, err := r.Finish(DataResult{Compression: pt.Info, DataLength: lay.DataLength, FileLength: lay.FileLength}); err != nil {
						b.Fatal(err)
					}
					inst.Abort()
				}
				m.Report(n, "cpu-ns/partition")
			})
		})
	}
}
