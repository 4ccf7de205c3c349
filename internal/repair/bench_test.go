package repair

import (
	"context"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// BenchmarkBuild builds whole-ring trees over a generated sstable (2000 partitions of 16 rows
// of 512 bytes) and a duplicate of its first half, so half the partitions are reconciled from
// two sources.
func BenchmarkBuild(b *testing.B) {
	v, _ := version.ParseWritable("oa")
	var tables []*sstable.Table
	var size int64
	for _, n := range []int64{2000, 1000} {
		root := b.TempDir()
		res, err := gen.Generate(context.Background(), root, gen.Options{Version: v, Partitions: n, PartitionSize: 8192, RowSize: 512, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		t, err := sstable.Open(res.Desc.Prefix())
		if err != nil {
			b.Fatal(err)
		}
		defer t.Close()
		tables = append(tables, t)
		size += t.DataLength()
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(context.Background(), tables, []Spec{{Range: wholeRing, Depth: DepthFor(2000)}}); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzHash feeds arbitrary partition bytes, alone and beside a valid copy, to the Hasher: it
// must return an error or a hash, never panic.
func FuzzHash(f *testing.F) {
	h := header("UTF8Type")
	tb := writeSSTable(f, f.TempDir(), h, part{key: "k", del: rows.Live, items: []item{
		rtBound(rows.InclStartBound, s("a"), 20), row(s("a"), 10, cell(liveCell(10, "a")), cell(tombCell(11))),
		rtBound(rows.InclEndBound, s("b"), 20), deletedRow(s("c"), 5)}})
	data := make([]byte, tb.DataLength())
	if _, err := tb.Data.ReadAt(data, 0); err != nil {
		f.Fatal(err)
	}
	st, err := schema.Compile(tb.Statistics.Header)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	hs := NewHasher()
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = hs.Hash([]Source{{Table: st, Version: tb.Version(), Data: b}})
		_, _ = hs.Hash([]Source{{Table: st, Version: tb.Version(), Data: data}, {Table: st, Version: tb.Version(), Data: b}})
	})
}
