package ring

import (
	"errors"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

// A node of a new DC rebuilds exactly the ranges it replicates, each from one replica of the
// source DC.
func TestRebuildFetchesEveryReplicatedRangeFromTheSourceDC(t *testing.T) {
	r := mustRing(t,
		normal("a@dc1/r1", -600, 100), normal("b@dc1/r1", -300, 400), normal("c@dc1/r1", 0, 700),
		normal("x@dc2/r1", -500, 200), normal("y@dc2/r1", -100, 600))
	s := NetworkTopologyStrategy{RF: map[string]int{"dc1": 2, "dc2": 1}}
	plan, err := RebuildPlan(r, s, "x", RebuildOptions{SourceDC: "dc1"})
	if err != nil {
		t.Fatal(err)
	}
	var got token.RangeSet
	for _, tr := range plan {
		if tr.To != "x" || !slices.Contains([]string{"a", "b", "c"}, tr.From) {
			t.Fatalf("transfer %v: want a dc1 source and x as target", tr)
		}
		got = append(got, tr.Range)
	}
	for _, rr := range RangeOwners(r, s) {
		for _, tr := range plan {
			if tr.Range.Contains(rr.Range.Right) && !slices.ContainsFunc(rr.Replicas, func(n Node) bool { return n.Name == tr.From }) {
				t.Fatalf("transfer %v: %s does not replicate %v", tr, tr.From, rr.Range)
			}
		}
	}
	if want := ReplicaRanges(r, s, "x"); Normalize(got).String() != want.String() {
		t.Fatalf("plan covers %v, x replicates %v", Normalize(got), want)
	}
	// Both dc1 replicas of every range down: no source.
	if _, err := RebuildPlan(r, s, "x", RebuildOptions{SourceDC: "dc1", Down: []string{"a", "b", "c"}}); !errors.Is(err, ErrNoSource) {
		t.Fatalf("with dc1 down: %v, want ErrNoSource", err)
	}
	if _, err := RebuildPlan(r, s, "z", RebuildOptions{}); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("unknown node: %v", err)
	}
}
