package sstable_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
)

// Reads that span chunk boundaries and overlap each other (a partition and the next key, as
// verify reads them) return the file's bytes and keep the cursor's memory to about one read,
// not the whole Data.db.
func TestDataCursorOverlappingReadsStayBounded(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	res, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Size: 8 << 20, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	var pos []int64
	if err := tb.ScanPartitions(func(p *sstable.Partition) error { pos = append(pos, p.Position); return nil }); err != nil {
		t.Fatal(err)
	}
	pos = append(pos, tb.DataLength())
	cur := sstable.NewDataCursorForTest(tb.Data)
	var most int64
	for i := 0; i+1 < len(pos); i++ {
		n := min(pos[i+1]+100, tb.DataLength()) - pos[i] // into the next partition, as verify reads
		most = max(most, n)
		b, err := cur.BytesAt(pos[i], int(n))
		if err != nil {
			t.Fatalf("partition %d: %v", i, err)
		}
		want := make([]byte, n)
		if _, err := tb.Data.ReadAt(want, pos[i]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Fatalf("partition %d: bytes differ from the file's", i)
		}
	}
	if limit := most + 2*int64(tb.Data.ChunkLength()); int64(cur.Held()) > 2*limit {
		t.Errorf("carry grew to %d bytes over %d partitions; reads are at most %d", cur.Held(), len(pos)-1, most)
	}
}
