package slice

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicedb/sluice/internal/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
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
