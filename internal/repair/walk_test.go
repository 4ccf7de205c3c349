package repair

import (
	"context"
	"math"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// A multi-run child holds dead regions between its runs: Walk reads each partition to its
// end-of-partition flag, so the child's partitions hash and measure as the parent's do.
func TestWalkReadsMultiRunChildrenPastTheirDeadRegions(t *testing.T) {
	ctx := context.Background()
	v, _ := version.ParseWritable("oa")
	res, err := gen.Generate(ctx, t.TempDir(), gen.Options{Version: v, Partitions: 400, PartitionSize: 4096, RowSize: 512,
		ChunkLength: 4096, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	// Every other eighth of the ring: four runs, each edge inside a chunk.
	var ranges token.RangeSet
	step := uint64(math.MaxUint64 / 8)
	for i := uint64(0); i < 8; i += 2 {
		l := math.MinInt64 + int64(i*step)
		ranges = append(ranges, token.Range{Left: token.Token{Kind: token.KindMurmur3, Long: l},
			Right: token.Token{Kind: token.KindMurmur3, Long: l + int64(step)}})
	}
	sr, err := slice.Slice(ctx, parent, ranges, t.TempDir(), slice.Options{Mode: slice.ModeCopy})
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.Children) != 1 {
		t.Fatalf("%d children (%s), want one multi-run child", len(sr.Children), sr.Reason)
	}
	child, err := sstable.Open(sr.Children[0].Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()

	type seen struct {
		hash  uint64
		bytes int64
	}
	want := map[string]seen{}
	err = Walk(ctx, []*sstable.Table{parent}, ranges.Contains, func(p *Partition) error {
		want[string(p.Key)] = seen{p.Hash, p.Bytes[0]}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]seen{}
	var total int64
	err = Walk(ctx, []*sstable.Table{child}, nil, func(p *Partition) error {
		got[string(p.Key)] = seen{p.Hash, p.Bytes[0]}
		total += p.Bytes[0]
		return nil
	})
	if err != nil {
		t.Fatalf("walking the multi-run child: %v", err)
	}
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("child holds %d partitions, the ranges %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("partition %s: child %+v, parent %+v", k, got[k], w)
		}
	}
	if total >= child.DataLength() {
		t.Fatalf("partitions fill all %d bytes of the child: no dead region was exercised", child.DataLength())
	}
}
