package slice

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// EqualRanges, in one index pass, cuts exactly at ordinals k*count/n-1 when Statistics.db
// records the partition count, and otherwise while it can keep a token per partition, and past
// that within one sampling stride of them; the ranges always cover the ring once.
func TestEqualRangesOnePass(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	res := generate(t, t.TempDir(), gen.Options{Version: v, Partitions: 1000, PartitionSize: 256, RowSize: 64, Seed: 3})
	for _, recorded := range []string{"as written", "wrong"} {
		if recorded == "wrong" {
			misrecordPartitions(t, res.Desc, 7)
		}
		// A recorded count that the scan confirms makes the cuts exact whatever the samples.
		t.Run("recorded count "+recorded, func(t *testing.T) { equalRangesOnePass(t, res.Desc, recorded == "as written") })
	}
}

func equalRangesOnePass(t *testing.T, d descriptor.Descriptor, exact bool) {
	parent := openTable(t, d.Prefix())
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
		if exact {
			tc.slack = 0
		}
		for i, c := range counts(rs)[:3] { // the last range takes what the others leave
			if d := c - 250; d > tc.slack || -d > tc.slack {
				t.Errorf("%d samples: range %d holds %d partitions, want 250 ± %d", tc.samples, i, c, tc.slack)
			}
		}
	}
}

// The plans the cut pass derives from its samples are the plans a planning pass finds for
// the same ranges, for BIG and BTI parents, exact and sampled cuts, and more ways than
// partitions.
func TestEqualCutsPlanAsThePlanner(t *testing.T) {
	for _, ver := range []string{"oa", "da"} {
		v, _ := version.ParseWritable(ver)
		res := generate(t, t.TempDir(), gen.Options{Version: v, Partitions: 1000, PartitionSize: 256, RowSize: 64, Seed: 5})
		for _, recorded := range []string{"as written", "wrong"} {
			if recorded == "wrong" {
				misrecordPartitions(t, res.Desc, 7)
			}
			t.Run(ver+", recorded count "+recorded, func(t *testing.T) { equalCutsPlanAsThePlanner(t, res.Desc) })
		}
	}
}

func equalCutsPlanAsThePlanner(t *testing.T, d descriptor.Descriptor) {
	ver := d.Version.String()
	parent := openTable(t, d.Prefix())
	{
		for _, samples := range []int{1 << 16, 16, 3} {
			for _, n := range []int{1, 2, 7, 8, 1000, 5000} {
				old := maxCutSamples
				maxCutSamples = samples
				ranges, plans, err := equalCuts(parent, n)
				maxCutSamples = old
				if err != nil {
					t.Fatal(err)
				}
				ps, err := NewPieces(parent.Partitioner, ranges)
				if err != nil {
					t.Fatal(err)
				}
				want, err := PlanTable(parent, ps, ranges)
				if err != nil {
					t.Fatal(err)
				}
				if plans == nil {
					t.Fatalf("%s, %d samples, %d ways: no plans derived", ver, samples, n)
				}
				if len(plans) != len(want) {
					t.Fatalf("%s, %d samples, %d ways: %d plans, the planner finds %d", ver, samples, n, len(plans), len(want))
				}
				for i := range want {
					if g, w := plans[i], want[i]; !reflect.DeepEqual(g, w) {
						t.Fatalf("%s, %d samples, %d ways: child %d\n got %+v\nwant %+v", ver, samples, n, i, g, w)
					}
				}
			}
		}
	}
}

// misrecordPartitions makes d's Statistics.db record extra partitions more than its index holds.
func misrecordPartitions(t *testing.T, d descriptor.Descriptor, extra int64) {
	t.Helper()
	p := d.Path(descriptor.Statistics)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := stats.Parse(raw, d.Version)
	if err != nil {
		t.Fatal(err)
	}
	st.Stats.EstimatedPartitionSize.Counts[0] += extra
	if err := os.WriteFile(p, st.Append(nil, d.Version), 0o644); err != nil {
		t.Fatal(err)
	}
}

// SplitEqual's children are Split's into EqualRanges' ranges, byte for byte.
func TestSplitEqualIsSplitOfEqualRanges(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	res := generate(t, t.TempDir(), gen.Options{Version: v, Partitions: 600, PartitionSize: 512, RowSize: 64, Seed: 9})
	parent := openTable(t, res.Desc.Prefix())
	ranges, err := EqualRanges(parent, 5)
	if err != nil {
		t.Fatal(err)
	}
	a, b := t.TempDir(), t.TempDir()
	ra, err := Split(context.Background(), parent, ranges, a, Options{Mode: ModeCopy})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := SplitEqual(context.Background(), parent, 5, b, Options{Mode: ModeCopy})
	if err != nil {
		t.Fatal(err)
	}
	if len(ra.Children) != 5 || len(rb.Children) != len(ra.Children) {
		t.Fatalf("%d and %d children, want 5", len(ra.Children), len(rb.Children))
	}
	for i := range ra.Children {
		ca, cb := ra.Children[i], rb.Children[i]
		for _, c := range []string{"Data.db", "Index.db", "Summary.db", "Filter.db", "Statistics.db", "CompressionInfo.db", "Digest.crc32"} {
			x, err := os.ReadFile(ca.Desc.Path(descriptor.Component(c)))
			if err != nil {
				t.Fatal(err)
			}
			y, err := os.ReadFile(cb.Desc.Path(descriptor.Component(c)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(x, y) {
				t.Errorf("child %d: %s differs", i, c)
			}
		}
	}
}

// A parent whose index is out of token order (two keys swapped, positions untouched) fails
// the split with ErrCorrupt naming the partition, and installs nothing: the plans cut from
// samples hold only for an index in token order.
func TestSplitEqualRefusesAnIndexOutOfTokenOrder(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	res := generate(t, t.TempDir(), gen.Options{Version: v, Partitions: 300, PartitionSize: 256, RowSize: 64, Seed: 6})
	parent, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	var keyLen int
	if err := parent.ScanPartitions(func(p *sstable.Partition) error {
		offs = append(offs, p.IndexPos)
		keyLen = len(p.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	parent.Close()
	// gen's keys are all one length: swap the keys of partitions 100 and 101 in place.
	path := res.Desc.Path(descriptor.Index)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, b := raw[offs[100]+2:offs[100]+2+int64(keyLen)], raw[offs[101]+2:offs[101]+2+int64(keyLen)]
	tmp := append([]byte(nil), a...)
	copy(a, b)
	copy(b, tmp)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	parent, err = sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	out := t.TempDir()
	_, err = SplitEqual(context.Background(), parent, 4, out, Options{Mode: ModeCopy})
	if !errors.Is(err, sstable.ErrCorrupt) || !strings.Contains(err.Error(), "partition 101") {
		t.Fatalf("split of an index out of token order: %v, want ErrCorrupt naming partition 101", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("failed split left %d entries in %s", len(ents), out)
	}
}
