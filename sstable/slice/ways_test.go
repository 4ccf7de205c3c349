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
	"github.com/sluicedb/sluice/sstable/bigindex"
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
// the same ranges, for BIG and BTI parents, exact and sampled cuts, cuts read from Summary.db
// (BIG with the count recorded right), and more ways than partitions.
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
		for _, samples := range []int{1 << 16, 16, 3, 0} { // 0: from Summary.db where it can
			for _, n := range []int{1, 2, 7, 8, 1000, 5000} {
				old := maxCutSamples
				if samples > 0 {
					maxCutSamples = samples
				}
				ranges, plans, fromSummary, err := equalCuts(parent, n, samples == 0)
				maxCutSamples = old
				if err != nil {
					t.Fatal(err)
				}
				wantSummary := samples == 0 && d.Version.Format == version.Big && statisticsCountRight(t, parent)
				if fromSummary != wantSummary {
					t.Fatalf("%s, %d ways: cut from Summary.db %v, want %v", ver, n, fromSummary, wantSummary)
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

// statisticsCountRight reports whether t's Statistics.db records its index's partition count.
func statisticsCountRight(t *testing.T, parent *sstable.Table) bool {
	var n int64
	if err := parent.ScanKeys(func(*sstable.Partition) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return parent.Statistics.Stats.EstimatedPartitionSize.Total() == n
}

// A Summary.db whose middle samples sit one partition late (each key the one at its offset,
// and the last sample right, so the count checks out: nothing gives it away until the split's
// index pass) yields cuts off by one: the pass finds a child's first partition elsewhere,
// installs nothing, and SplitEqual plans again from the whole index, giving exactly the
// children of a split into EqualRanges.
func TestSplitEqualReplansWhenTheSummaryMisleads(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	res := generate(t, t.TempDir(), gen.Options{Version: v, Partitions: 1000, PartitionSize: 256, RowSize: 64, Seed: 11})
	parent := openTable(t, res.Desc.Prefix())
	type entry struct {
		key []byte
		off int64
	}
	var entries []entry
	if err := parent.ScanKeys(func(p *sstable.Partition) error {
		entries = append(entries, entry{append([]byte(nil), p.Key...), p.IndexPos})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rewriteSummary(t, parent, func(sum *bigindex.Summary) {
		for j := 1; j < len(sum.Entries)-1; j++ {
			e := entries[j*int(sum.MinIndexInterval)+1]
			sum.Entries[j] = bigindex.SummaryEntry{Key: e.key, IndexPosition: e.off}
		}
	})
	ranges, plans, fromSummary, err := equalCuts(parent, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := EqualRanges(parent, 4); !fromSummary || reflect.DeepEqual(ranges, want) || plans == nil {
		t.Fatalf("the misleading summary was not used (from summary %v, ranges %v, EqualRanges %v)", fromSummary, ranges, want)
	}
	ra, rb, a, b := splitBothWays(t, parent, 4)
	if len(rb.Children) != len(ra.Children) {
		t.Fatalf("%d children, a split into EqualRanges makes %d", len(rb.Children), len(ra.Children))
	}
	sameChildren(t, ra, rb)
	// Nothing of the abandoned attempt is left: the same files as the reference split's.
	ea, _ := os.ReadDir(a)
	eb, _ := os.ReadDir(b)
	if len(eb) != len(ea) {
		t.Errorf("%s holds %d entries, the reference split's directory %d", b, len(eb), len(ea))
	}
}

// rewriteSummary rewrites t's Summary.db as edit leaves it.
func rewriteSummary(t *testing.T, parent *sstable.Table, edit func(*bigindex.Summary)) {
	t.Helper()
	sum, err := readSummary(parent)
	if err != nil {
		t.Fatal(err)
	}
	edit(sum)
	if err := os.WriteFile(parent.Path(descriptor.Summary), sum.Append(nil), 0o644); err != nil {
		t.Fatal(err)
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
	ra, rb, _, _ := splitBothWays(t, parent, 5)
	if len(ra.Children) != 5 || len(rb.Children) != len(ra.Children) {
		t.Fatalf("%d and %d children, want 5", len(ra.Children), len(rb.Children))
	}
	sameChildren(t, ra, rb)
}

// splitBothWays splits parent n ways by Split into EqualRanges' ranges (into a) and by
// SplitEqual (into b), in copy mode.
func splitBothWays(t *testing.T, parent *sstable.Table, n int) (ra, rb *Result, a, b string) {
	t.Helper()
	ranges, err := EqualRanges(parent, n)
	if err != nil {
		t.Fatal(err)
	}
	a, b = t.TempDir(), t.TempDir()
	if ra, err = Split(context.Background(), parent, ranges, a, Options{Mode: ModeCopy}); err != nil {
		t.Fatal(err)
	}
	if rb, err = SplitEqual(context.Background(), parent, n, b, Options{Mode: ModeCopy}); err != nil {
		t.Fatal(err)
	}
	return ra, rb, a, b
}

// sameChildren checks that two splits made the same children, component for component.
func sameChildren(t *testing.T, ra, rb *Result) {
	t.Helper()
	for i := range ra.Children {
		for _, c := range []descriptor.Component{descriptor.Data, descriptor.Index, descriptor.Summary, descriptor.Filter,
			descriptor.Statistics, descriptor.CompressionInfo, descriptor.Digest} {
			x, err := os.ReadFile(ra.Children[i].Desc.Path(c))
			if err != nil {
				t.Fatal(err)
			}
			y, err := os.ReadFile(rb.Children[i].Desc.Path(c))
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
