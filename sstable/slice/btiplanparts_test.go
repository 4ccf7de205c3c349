package slice

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// A plan in two halves walked at once is the plan of one walk: the same children (ordinals,
// positions, first keys and tokens), the same measure (length, records kept, runs located)
// for random range sets, ranges that meet, and keep bounds that hold or drop the slice.
func TestPlanInPartsIsThePlanOfOneWalk(t *testing.T) {
	old := planPartsMin
	defer func() { planPartsMin = old }()
	v, _ := version.ParseWritable("da")
	res := generate(t, filepath.Join(t.TempDir(), "da"), gen.Options{Version: v, Partitions: 4000, PartitionSize: 256, RowSize: 64, Seed: 21})
	parent := openTable(t, res.Desc.Prefix())
	parts := readAll(t, res.Desc.Prefix())
	spec, err := SpecOf(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.ParentRows) != 0 {
		t.Fatalf("the parent has %d bytes of Rows.db: the halves serve parents without", len(spec.ParentRows))
	}
	plan := func(ranges token.RangeSet, parts bool, keep int64) ([]ChildPlan, []int64, int64, *trieMeasure) {
		planPartsMin = 1 << 62
		if parts {
			planPartsMin = 0
		}
		ps, err := NewPieces(parent.Partitioner, ranges)
		if err != nil {
			t.Fatal(err)
		}
		m := &trieMeasure{rows: rowsSlice{parent: spec.ParentRows}, positions: true, keepMax: keep}
		plans, last, n, ok, err := btiPlanMeasured(parent, ps, ranges, m)
		if err != nil || !ok {
			t.Fatalf("%s (parts %v): %v, ok %v", ranges, parts, err, ok)
		}
		return plans, last, n, m
	}
	rng := rand.New(rand.NewPCG(21, 22))
	tok := func(i int) token.Token { return parts[i].Token }
	sets := []token.RangeSet{
		// Two pieces that meet at a partition's token: a child of each half at the split.
		{{Left: tok(100), Right: tok(1500)}, {Left: tok(1500), Right: tok(3000)}},
		// One partition between the pieces.
		{{Left: tok(100), Right: tok(1500)}, {Left: tok(1501), Right: tok(3000)}},
	}
	for range 40 {
		sets = append(sets, manyRanges(rng, parts, 2+rng.IntN(40)))
	}
	halves := 0
	for _, ranges := range sets {
		for _, keep := range []int64{0, 1 << 20, 300} {
			c1, l1, n1, m1 := plan(ranges, false, keep)
			c2, l2, n2, m2 := plan(ranges, true, keep)
			if !reflect.DeepEqual(c1, c2) || !reflect.DeepEqual(l1, l2) || n1 != n2 {
				t.Fatalf("%s keep %d: one walk %d children %+v, halves %d %+v", ranges, keep, len(c1), c1, len(c2), c2)
			}
			if m1.length != m2.length || m1.members != m2.members || m1.dropped != m2.dropped || !bytes.Equal(m1.kept, m2.kept) {
				t.Fatalf("%s keep %d: measures differ: length %d/%d, members %d/%d, dropped %v/%v, kept %d/%d bytes",
					ranges, keep, m1.length, m2.length, m1.members, m2.members, m1.dropped, m2.dropped, len(m1.kept), len(m2.kept))
			}
			if len(m1.seeks) != len(m2.seeks) {
				t.Fatalf("%s: %d runs located by one walk, %d by the halves", ranges, len(m1.seeks), len(m2.seeks))
			}
			for i := range m1.seeks {
				if !bytes.Equal(m1.seeks[i].from, m2.seeks[i].from) || m1.seeks[i].lo != m2.seeks[i].lo || m1.seeks[i].rowsCut != m2.seeks[i].rowsCut {
					t.Fatalf("%s: run %d located at %+v by one walk, %+v by the halves", ranges, i, m1.seeks[i], m2.seeks[i])
				}
			}
			if !bytes.Equal(m1.rows.bytes(), m2.rows.bytes()) {
				t.Fatalf("%s: rows slices differ", ranges)
			}
			if m1.halved {
				t.Fatalf("%s: planned in halves with the halves off", ranges)
			}
			if m2.halved {
				halves++
			}
		}
	}
	// All but the set whose pieces meet at a partition (a child of each half at the split,
	// planned again as one walk) are planned in halves, every keep bound.
	if want := 3 * (len(sets) - 1); halves != want {
		t.Fatalf("%d plans in halves, want %d", halves, want)
	}
}
