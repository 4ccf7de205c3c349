package sstable_test

import (
	"context"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
)

// BenchmarkScanPartitionsBTI is one index pass over a da sstable of 200,000 small partitions
// (128 bytes, so the pass is the trie walk plus each key's read from Data.db): the pass that
// split, slice planning and the streaming sender repeat. ns/partition and allocs/op are what
// to watch; the index is read through the paged Partitions.db reader.
func BenchmarkScanPartitionsBTI(b *testing.B) {
	const n = 200_000
	v, _ := version.ParseWritable("da")
	res, err := gen.Generate(context.Background(), b.TempDir(), gen.Options{Version: v, Partitions: n, PartitionSize: 128, RowSize: 32, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	t, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	b.ReportAllocs()
	for b.Loop() {
		count := 0
		if err := t.ScanPartitions(func(*sstable.Partition) error { count++; return nil }); err != nil {
			b.Fatal(err)
		}
		if count != n {
			b.Fatalf("scanned %d partitions, want %d", count, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/partition")
}
