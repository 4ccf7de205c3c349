package interop

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
)

// A streaming sender plans a BIG parent from its Summary.db and reads Index.db only at the
// ranges' edges (slice.PlanFromSummary). On the Summary.db Cassandra itself wrote (the many_
// fixture: 12,000 partitions, CQLSSTableWriter, min_index_interval 128) the summary serves and
// the plan is the one a pass over every entry makes, for the ranges the fetch tests ask for,
// the whole ring, and ranges whose ends sit on samples and next to them. The fetches of this
// table in TestStreamFetchedReadByCassandra go through this plan and the Index.db spans it
// locates; Cassandra reads what they install.
func TestPlanFromCassandraSummary(t *testing.T) {
	need(t)
	found := false
	for _, f := range fixtures(t) {
		if !strings.HasPrefix(f.Table, "many_") {
			continue
		}
		found = true
		parent, err := sstable.Open(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer parent.Close()
		var toks []token.Token
		if err := parent.ScanPartitions(func(p *sstable.Partition) error { toks = append(toks, p.Token); return nil }); err != nil {
			t.Fatal(err)
		}
		at := func(i int) string { return toks[i].String() }
		specs := []string{sliceSpec, oneRangeSpec, fmt.Sprintf("(%d,%d]", int64(-1<<63), int64(-1<<63)),
			fmt.Sprintf("(%s,%s]", at(128), at(1280)), fmt.Sprintf("(%s,%s]", at(127), at(1281)),
			fmt.Sprintf("(%s,%s]", at(len(toks)-200), at(100))}
		for _, spec := range specs {
			ranges, err := token.ParseRanges(token.Murmur3, spec)
			if err != nil {
				t.Fatal(err)
			}
			got, n, ok, err := slice.PlanFromSummary(parent, ranges)
			if err != nil || !ok {
				t.Fatalf("%s %s: the summary did not serve (%v)", f.Path, spec, err)
			}
			ps, _ := slice.NewPieces(parent.Partitioner, ranges)
			want, err := slice.PlanTable(parent, ps, ranges)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(toks)) || len(got) != len(want) {
				t.Fatalf("%s %s: %d children of %d partitions, the index pass %d of %d", f.Path, spec, len(got), n, len(want), len(toks))
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.FirstOrdinal != w.FirstOrdinal || g.Partitions != w.Partitions || g.Lo != w.Lo || g.Hi != w.Hi ||
					string(g.First) != string(w.First) || g.FirstTok.Compare(w.FirstTok) != 0 || g.LastTok.Compare(w.LastTok) != 0 {
					t.Errorf("%s %s: child %d: summary plan %+v, index pass %+v", f.Path, spec, i, g, w)
				}
			}
		}
	}
	if !found {
		t.Fatal("no many_ fixture: the harness did not write it")
	}
}
