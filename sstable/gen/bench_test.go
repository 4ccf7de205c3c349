package gen

import (
	"context"
	"testing"

	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/version"
)

// BenchmarkGenerate writes a 256 MiB oa sstable per op (64 KiB partitions of 4 KiB rows, LZ4).
func BenchmarkGenerate(b *testing.B) {
	v, _ := version.ParseWritable("oa")
	b.SetBytes(256 << 20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(context.Background(), b.TempDir(), Options{Version: v, Size: 256 << 20, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRowGen is the cost of producing rows alone.
func BenchmarkRowGen(b *testing.B) {
	g := NewRowGen(1, 4096-rowOverhead, 0.5)
	var row rows.Row
	b.SetBytes(4096)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		g.Row(&row, int64(i>>4), i&15)
	}
}
