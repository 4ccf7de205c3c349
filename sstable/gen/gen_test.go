package gen

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// Every writable version, compressed and not, generates an sstable that passes extended
// verify and reads back, row by row, exactly as generated.
func TestGeneratedSSTablesVerifyAndReadBack(t *testing.T) {
	for _, v := range version.Writable {
		for _, comp := range []string{"lz4", "none"} {
			t.Run(fmt.Sprintf("%s/%s", v, comp), func(t *testing.T) {
				o := Options{Version: v, Partitions: 40, PartitionSize: 64 << 10, RowSize: 4 << 10,
					Compression: comp, ChunkLength: 4 << 10, Seed: 7}
				res, err := Generate(context.Background(), t.TempDir(), o)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := sstable.Verify(res.Desc.Prefix(), sstable.VerifyOptions{Extended: true})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range rep.Problems {
					t.Errorf("verify: %s", p)
				}
				if rep.Partitions != 40 || rep.Rows != res.Rows || res.Rows != 40*16 {
					t.Errorf("verified %d partitions / %d rows; generated %d / %d", rep.Partitions, rep.Rows, res.Partitions, res.Rows)
				}
				readBack(t, res.Desc, o)
			})
		}
	}
}

// Small index blocks give every partition a BIG promoted index (and BTI row index) of many
// blocks; they verify, including the IndexInfo offsets and widths.
func TestGeneratedRowIndexes(t *testing.T) {
	for _, name := range []string{"nb", "nc", "oa", "da"} {
		v, _ := version.ParseWritable(name)
		o := Options{Version: v, Partitions: 12, RowSize: 1 << 10, PartitionSize: 32 << 10, IndexBlockSize: 4 << 10, Seed: 11}
		res, err := Generate(context.Background(), t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := sstable.Verify(res.Desc.Prefix(), sstable.VerifyOptions{Extended: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			t.Errorf("%s verify: %s", name, p)
		}
		tb, err := sstable.Open(res.Desc.Prefix())
		if err != nil {
			t.Fatal(err)
		}
		indexed := 0
		_ = tb.ScanPartitions(func(p *sstable.Partition) error {
			if p.Promoted != nil || (v.Format == version.BTI && p.IndexPos >= 0) {
				indexed++
			}
			return nil
		})
		tb.Close()
		if indexed != 12 {
			t.Errorf("%s: %d of 12 partitions have a row index", name, indexed)
		}
		readBack(t, res.Desc, o)
	}
}

// readBack decodes every row and compares it with a regenerated one.
func readBack(t *testing.T, d descriptor.Descriptor, o Options) {
	t.Helper()
	tb, err := sstable.Open(d.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	table, err := schema.Compile(tb.Statistics.Header)
	if err != nil {
		t.Fatal(err)
	}
	_ = o.defaults()
	keys := Keys(o.Seed, o.Partitions)
	rg := NewRowGen(o.Seed, o.RowSize-rowOverhead, o.Compressibility)
	var want rows.Row
	var cur rows.Cursor
	var starts []int64
	if err := tb.ScanPartitions(func(p *sstable.Partition) error {
		if !bytes.Equal(p.Key, keys[p.Ordinal]) {
			t.Fatalf("partition %d key %s, want %s", p.Ordinal, p.Key, keys[p.Ordinal])
		}
		starts = append(starts, p.Position)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	starts = append(starts, tb.DataLength())
	for p := 0; p+1 < len(starts); p++ {
		buf := make([]byte, starts[p+1]-starts[p])
		if _, err := tb.Data.ReadAt(buf, starts[p]); err != nil {
			t.Fatal(err)
		}
		if err := cur.Reset(table, tb.Version(), buf); err != nil {
			t.Fatal(err)
		}
		r := 0
		for cur.Next() {
			got := cur.Row()
			rg.Row(&want, int64(p), r)
			if !bytes.Equal(got.Clustering[0], want.Clustering[0]) ||
				!bytes.Equal(got.Columns[0].Cells[0].Value, want.Columns[0].Cells[0].Value) ||
				got.Liveness != want.Liveness || got.Columns[0].Cells[0].Timestamp != want.Columns[0].Cells[0].Timestamp {
				t.Fatalf("partition %d row %d differs from the generated row", p, r)
			}
			r++
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
		if r != o.PartitionSize/o.RowSize {
			t.Fatalf("partition %d has %d rows", p, r)
		}
	}
}

// Incompressible data with min_compress_ratio stores chunks raw (CASSANDRA-10520) and still
// verifies; the same seed gives the same bytes.
func TestRawChunksAndDeterminism(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	o := Options{Version: v, Partitions: 8, Compressibility: 1e-9, MinCompressRatio: 1.1, ChunkLength: 4 << 10, Seed: 3}
	a, err := Generate(context.Background(), t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := sstable.Verify(a.Desc.Prefix(), sstable.VerifyOptions{Extended: true})
	for _, p := range rep.Problems {
		t.Errorf("verify: %s", p)
	}
	tb, err := sstable.Open(a.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if tb.Compression.MaxCompressedLength >= int32(tb.Compression.ChunkLength) {
		t.Fatalf("maxCompressedLength %d: min_compress_ratio not applied", tb.Compression.MaxCompressedLength)
	}
	if tb.DataFileLength < tb.DataLength() {
		t.Errorf("incompressible data shrank: %d on disk for %d", tb.DataFileLength, tb.DataLength())
	}
	b, err := Generate(context.Background(), t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []descriptor.Component{descriptor.Data, descriptor.Index, descriptor.Filter, descriptor.Summary} {
		if !sameFile(t, a.Desc.Path(c), b.Desc.Path(c)) {
			t.Errorf("%s differs between two runs with the same seed", c)
		}
	}
}
