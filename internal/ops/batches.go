package ops

import (
	"slices"

	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/internal/repair"
)

// TreeBatches cuts a repair's tree specs (their ranges normalized) into repair_tree requests
// within peerrpc's bounds: one depth each, in range order (so each stays sorted and disjoint),
// at most peerrpc.MaxCallRanges ranges, peerrpc.MaxTreeLeaves leaves and RangesBudget bytes of
// range text. Each batch lists indexes into specs.
func TreeBatches(specs []repair.Spec) [][]int {
	var out [][]int
	for _, depth := range depths(specs) {
		var cur []int
		size := 0
		for i, sp := range specs {
			if sp.Depth != depth {
				continue
			}
			n := len(sp.Range.String()) + 1
			if len(cur) > 0 && (len(cur) == peerrpc.MaxCallRanges || (len(cur)+1)<<depth > peerrpc.MaxTreeLeaves ||
				size+n > RangesBudget) {
				out, cur, size = append(out, cur), nil, 0
			}
			cur, size = append(cur, i), size+n
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
