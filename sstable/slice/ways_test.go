package slice

import (
	"context"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// EqualRanges, in one index pass, cuts exactly at ordinals k*count/n-1 while it can keep a
// token per partition, and past that within one sampling stride of them; the ranges always
// cover the ring once.
func TestEqualRangesOnePass(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	res, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Partitions: 1000, PartitionSize: 256, RowSize: 64, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	counts := func(rs token.RangeSet) []int64 {
		out := make([]int64, len(rs))
		if err := parent.ScanPartitions(func(p *sstable.Partition) error {
			held := 0
			for i, r := range rs {
				if r.Contains(p.Token) {
					out[i]++
					held++
				}
			}
			if held != 1 {
				t.Fatalf("partition %d in %d ranges of %v", p.Ordinal, held, rs)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		samples int
		slack   int64 // the sampling stride the samples force for 1000 partitions
	}{{1 << 16, 0}, {16, 64}, {3, 128}} { // 3: raised to two per range, 8
		old := maxCutSamples
		maxCutSamples = tc.samples
		rs, err := EqualRanges(parent, 4)
		maxCutSamples = old
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 4 {
			t.Fatalf("%d samples: %d ranges %v", tc.samples, len(rs), rs)
		}
		for i, c := range counts(rs)[:3] { // the last range takes what the others leave
			if d := c - 250; d > tc.slack || -d > tc.slack {
				t.Errorf("%d samples: range %d holds %d partitions, want 250 ± %d", tc.samples, i, c, tc.slack)
			}
		}
	}
}
