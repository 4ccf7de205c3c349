package slice

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/cputime"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// BenchmarkRebuildAdd is the index-only rebuild's cost per partition in steady state: one op
// adds one parent partition (rebased index entry, summary sample, filter hash, size histogram,
// cardinality) to a child. Allocations must be 0 per op beyond the amortized growth of the
// filter's hash list.
func BenchmarkRebuildAdd(b *testing.B) {
	for _, vn := range []string{"oa", "da"} {
		b.Run(vn, func(b *testing.B) {
			v, _ := version.ParseWritable(vn)
			dir := b.TempDir()
			// Enough partitions for the BTI trie writer to pass its ramp: it keeps a branch in
			// memory until it outgrows a 4 KiB page, so with random tokens steady state starts
			// after about 256 pages' worth of keys.
			res, err := gen.Generate(context.Background(), dir, gen.Options{Version: v, Partitions: 400000,
				PartitionSize: 256, RowSize: 256, Seed: 9})
			if err != nil {
				b.Fatal(err)
			}
			t, err := sstable.Open(res.Desc.Prefix())
			if err != nil {
				b.Fatal(err)
			}
			defer t.Close()
			var parts []sstable.Partition
			_ = t.ScanPartitions(func(p *sstable.Partition) error {
				c := *p
				c.Key = append([]byte(nil), p.Key...)
				c.Promoted = append([]byte(nil), p.Promoted...)
				c.Token.Bytes = nil
				parts = append(parts, c)
				return nil
			})
			spec, err := SpecOf(t)
			if err != nil {
				b.Fatal(err)
			}
			out := b.TempDir()
			whole := &Layout{Segments: []Segment{{PHi: t.DataLength()}}, DataLength: t.DataLength()}
			gen := 0
			newBuilder := func() *Builder {
				gen++
				inst, err := fsx.NewInstall(out, "x-TOC.txt")
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { inst.Abort() })
				bl, err := NewBuilder(spec, inst, descriptor.Descriptor{Dir: out, Version: v, ID: fmt.Sprint(gen)}, whole, 0)
				if err != nil {
					b.Fatal(err)
				}
				return bl
			}
			// Warm up on the first three quarters of the parent: buffers and the trie's node pool reach
			// their steady size; then measure on the rest, starting a fresh child only when the
			// parent runs out (keys must stay in order).
			warm := len(parts) * 3 / 4
			bl := newBuilder()
			for i := 0; i < warm; i++ {
				if err := bl.Add(&parts[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i, k := 0, warm; i < b.N; i, k = i+1, k+1 {
				if k == len(parts) {
					b.StopTimer()
					bl, k = newBuilder(), 0
					b.StartTimer()
				}
				if err := bl.Add(&parts[k]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRebuildSmallPartitions is the receiver's rebuild of a child of 1M 512-byte
// partitions, the shape of `bench stream --partition-size 512 --size 1GiB` (half the ring of
// a 2M-partition oa parent): keys as the gen workload's, Data.db positions 512 bytes apart, no
// promoted index. One op rebuilds the whole child; ns/partition is the metric.
//
//   - add: Builder.Expect, Add of every partition (token and hash already computed), Finish,
//     the path `sstable split` takes too;
//   - partial-records, partial-big: RebuildPartial from the index slice as a receiver gets
//     it, AppendIndexRecord's records or (what a BIG sender ships) the Index.db entries
//     verbatim; adds the decoding, the token hash and the key-order check.
func BenchmarkRebuildSmallPartitions(b *testing.B) {
	const n = 1 << 20
	v, _ := version.ParseWritable("oa")
	res, err := gen.Generate(context.Background(), b.TempDir(), gen.Options{Version: v, Partitions: 64,
		PartitionSize: 512, RowSize: 256, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	t, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		b.Fatal(err)
	}
	spec, err := SpecOf(t)
	t.Close()
	if err != nil {
		b.Fatal(err)
	}
	// The keys are laid out in order in one buffer, as a receiver reads them from the slice:
	// gen.Keys's own, sorted from random order, would make every key read a cache miss.
	keys := gen.Keys(1, n)
	arena := make([]byte, 0, n*len(keys[0]))
	parts := make([]sstable.Partition, n)
	var records, big []byte
	for i, k := range keys {
		arena = append(arena, k...)
		k = arena[len(arena)-len(k):]
		p := &parts[i]
		p.Ordinal, p.Key, p.Position, p.IndexPos = int64(i), k, int64(i)*512, -1
		p.Token, p.Hash, p.HasHash = token.TokenAndHash(spec.Partitioner, k)
		records = AppendIndexRecord(records, k, p.Position, -1, nil)
		big = bigindex.AppendEntry(big, k, p.Position, nil)
	}
	lay := &Layout{Segments: []Segment{{PHi: n * 512}}, DataLength: n * 512}
	out := b.TempDir()
	child := func(i int, rebuild func(inst *fsx.Install, desc descriptor.Descriptor) error) {
		inst, err := fsx.NewInstall(out, "x-TOC.txt")
		if err != nil {
			b.Fatal(err)
		}
		defer inst.Abort()
		if err := rebuild(inst, descriptor.Descriptor{Dir: out, Version: v, ID: fmt.Sprint(i)}); err != nil {
			b.Fatal(err)
		}
	}
	data := DataResult{DataLength: n * 512, FileLength: n * 400}
	b.Run("add", func(b *testing.B) {
		b.ReportAllocs()
		m := cputime.Start(b)
		for i := 0; b.Loop(); i++ {
			child(i, func(inst *fsx.Install, desc descriptor.Descriptor) error {
				bl, err := NewBuilder(spec, inst, desc, lay, 0)
				if err != nil {
					return err
				}
				if err := bl.Expect(n); err != nil {
					return err
				}
				for k := range parts {
					if err := bl.Add(&parts[k]); err != nil {
						return err
					}
				}
				_, err = bl.Finish(data)
				return err
			})
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/partition")
		m.Report(n, "cpu-ns/partition")
	})
	for _, f := range []struct {
		name   string
		format IndexFormat
		slice  []byte
	}{{"partial-records", IndexRecords, records}, {"partial-big", IndexBig, big}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			m := cputime.Start(b)
			for i := 0; b.Loop(); i++ {
				child(i, func(inst *fsx.Install, desc descriptor.Descriptor) error {
					_, err := RebuildPartial(spec, inst, desc, lay, f.slice, data, RebuildOptions{Partitions: n, Format: f.format})
					return err
				})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/partition")
			m.Report(n, "cpu-ns/partition")
		})
	}
}
