package slice

import (
	"os"
	"reflect"
	"testing"

	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
)

// A BIG parent's index planned in parts cut at Summary.db samples, in parallel, gives the plan,
// slice lengths, Index.db spans and partition count of one pass, for 2 to 4 parts; a summary
// whose positions are not where entries start makes the parts fail to meet, and the plan is
// then one pass's.
func TestPlanMeasuredInPartsIsOnePass(t *testing.T) {
	old := planPartBytes
	planPartBytes = 1
	defer func() { planPartBytes = old }()
	parent := genOA(t, gen.Options{Partitions: 5000, PartitionSize: 512, RowSize: 128, Seed: 3})
	for _, spec := range []string{"(-9000000000000000000,-1000000000000000000]",
		"(-9000000000000000000,-6000000000000000000],(0,3000000000000000000],(5000000000000000000,-9100000000000000000]",
		"(-100,-100]"} {
		ranges, ps := piecesOf(t, spec)
		want, wantN, err := planMeasuredIn(parent, ps, ranges, 1)
		if err != nil || wantN != 5000 || len(want) == 0 {
			t.Fatalf("%s: one pass: %d children of %d partitions (%v)", spec, len(want), wantN, err)
		}
		for parts := 2; parts <= 4; parts++ {
			fi, _ := os.Stat(parent.Path(descriptor.Index))
			if cuts := indexCuts(parent, fi.Size(), parts); len(cuts) != parts-1 {
				t.Fatalf("%s: %d cuts for %d parts", spec, len(cuts), parts)
			}
			got, n, err := planMeasuredIn(parent, ps, ranges, parts)
			if err != nil || n != wantN || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, %d parts: %d partitions (%v)\n got %+v\nwant %+v", spec, parts, n, err, got, want)
			}
		}
	}

	// Every sample one byte past its entry.
	rewriteSummary(t, parent, func(sum *bigindex.Summary) {
		for i := range sum.Entries {
			sum.Entries[i].IndexPosition++
		}
	})
	ranges, _ := token.ParseRanges(token.Murmur3, "(-9000000000000000000,-1000000000000000000]")
	ps, _ := NewPieces(parent.Partitioner, ranges)
	fi, _ := os.Stat(parent.Path(descriptor.Index))
	cuts := indexCuts(parent, fi.Size(), 2)
	if len(cuts) != 1 || planParts(parent, ps, []int64{0, cuts[0], fi.Size()}) != nil {
		t.Fatalf("parts cut inside an entry (at %v) met", cuts)
	}
	want, wantN, err := planMeasuredIn(parent, ps, ranges, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, n, err := planMeasuredIn(parent, ps, ranges, 2)
	if err != nil || n != wantN || !reflect.DeepEqual(got, want) {
		t.Fatalf("misplaced samples: %d partitions (%v)\n got %+v\nwant %+v", n, err, got, want)
	}
}
