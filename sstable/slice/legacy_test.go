package slice

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/generation"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// legacyMultiRun writes what sluice wrote before filler partitions: one child of parent for
// ranges made of the parent's whole chunks, the bytes between its runs (and before its first)
// left as they were, addressed by no index entry.
func legacyMultiRun(t *testing.T, parent *sstable.Table, ranges token.RangeSet) string {
	t.Helper()
	ps, err := NewPieces(parent.Partitioner, ranges)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := PlanTable(parent, ps, ranges)
	if err != nil {
		t.Fatal(err)
	}
	one := Merge(plans)
	var dst *os.File
	inst, desc, err := generation.Install(t.TempDir(), parent.Version(), func(inst *fsx.Install, d descriptor.Descriptor) error {
		var err error
		dst, err = inst.Create(d.Filename(descriptor.Data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLayout(geometry(parent, 0), one.Runs, 1)
	for _, s := range l.Segments {
		b := make([]byte, s.Length())
		if _, err := parent.DataFile().ReadAt(b, s.SrcOff); err != nil {
			t.Fatal(err)
		}
		if _, err := dst.WriteAt(b, s.DstOff); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := SpecOf(parent)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(spec, inst, desc, &l, 0)
	if err != nil {
		t.Fatal(err)
	}
	run := 0
	if err := parent.ScanPartitions(func(p *sstable.Partition) error {
		var in bool
		if run, in = one.Contains(run, p.Ordinal); in {
			return b.Add(p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	info := l.Info(parent.Compression)
	digest, err := provenRecords(parent, dst, info, &l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Finish(DataResult{Compression: info, DataLength: l.DataLength, FileLength: l.FileLength, Digest: digest, HasDigest: true}); err != nil {
		t.Fatal(err)
	}
	if err := inst.Commit(); err != nil {
		t.Fatal(err)
	}
	return desc.Prefix()
}

// A multi-run sstable with dead regions (what sluice wrote before filler partitions, and what
// a streaming receiver holds before it fills what it received) passes verify, which reads it
// through its index, but not verify --strict, Cassandra's sequential rules. Sliced again, by
// its own ranges in any mode that writes chunks, or rechunked whole, it comes out with no byte
// outside a partition and the same partitions.
func TestSliceOfAMultiRunParentLosesItsDeadRegions(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	g, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Partitions: 1500, PartitionSize: 1 << 10,
		RowSize: 256, ChunkLength: 4 << 10, Seed: 77})
	if err != nil {
		t.Fatal(err)
	}
	parent := openTable(t, g.Desc.Prefix())
	ranges := manyRanges(rand.New(rand.NewPCG(8, 9)), readAll(t, g.Desc.Prefix()), 8)
	legacy := legacyMultiRun(t, parent, ranges)

	rep, err := sstable.Verify(legacy, sstable.VerifyOptions{Extended: true})
	if err != nil || !rep.OK || rep.DeadRegions == 0 {
		t.Fatalf("the legacy multi-run sstable: %v %+v", err, rep)
	}
	strict, err := sstable.Verify(legacy, sstable.VerifyOptions{Extended: true, Strict: true})
	if err != nil || strict.OK || !strings.Contains(strict.Problems[len(strict.Problems)-1].Message, "strict:") {
		t.Fatalf("verify --strict of an sstable with %d dead regions: %v %+v", rep.DeadRegions, err, strict.Problems)
	}
	whole := token.RangeSet{{Left: token.Murmur3.MinToken(), Right: token.Murmur3.MinToken()}}
	for _, c := range []struct {
		name   string
		ranges token.RangeSet
		opts   Options
	}{
		{"its ranges, copy, exact ends", ranges, Options{Mode: ModeCopy, ExactEnds: true}},
		{"its ranges, rechunk", ranges, Options{Mode: ModeRechunk}},
		{"the whole ring, rechunk", whole, Options{Mode: ModeRechunk}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Bounds = Bounds{MaxDeadRatio: -1}
			res, err := Slice(context.Background(), openTable(t, legacy), c.ranges, t.TempDir(), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Children) != 1 {
				t.Fatalf("%d children", len(res.Children))
			}
			out := res.Children[0].Desc.Prefix()
			rep, err := sstable.Verify(out, sstable.VerifyOptions{Extended: true, Strict: true})
			if err != nil || !rep.OK {
				t.Fatalf("%v %+v", err, rep.Problems)
			}
			want, got := readAll(t, legacy), readAll(t, out)
			if len(want) != len(got) || res.Children[0].Partitions != int64(len(want)) {
				t.Fatalf("%d partitions (reported %d), the parent %d", len(got), res.Children[0].Partitions, len(want))
			}
			for i := range want {
				if string(want[i].Key) != string(got[i].Key) || string(want[i].Bytes) != string(got[i].Bytes) {
					t.Fatalf("partition %d differs", i)
				}
			}
		})
	}
}
