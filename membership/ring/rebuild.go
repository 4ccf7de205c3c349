package ring

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/sluicedb/sluice/sstable/token"
)

// RebuildOptions shapes a rebuild plan.
type RebuildOptions struct {
	// SourceDC, when set, limits the sources to that DC (nodetool rebuild -- <dc>).
	SourceDC string
	// Down names nodes that must not be sources.
	Down []string
}

// RebuildPlan is what node name must fetch to hold every range it replicates on the natural
// ring, as Cassandra's rebuild streams it: each range from one other replica, in SourceDC
// when given, up, preferring the source with the least data assigned so far in this plan and
// then the smallest name, so load spreads deterministically. Ranges are normalized per source;
// transfers are sorted by From and Range.Left. A range with no eligible source fails the plan
// with ErrNoSource, naming it.
//
// Unlike Plan, the ring does not change: rebuild fills a replica that joined without data (a
// new DC added with auto_bootstrap off, the keyspace altered to replicate there).
func RebuildPlan(r Ring, s Strategy, name string, opt RebuildOptions) ([]Transfer, error) {
	if _, ok := r.Member(name); !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownNode, name)
	}
	down := map[string]bool{}
	for _, d := range opt.Down {
		down[d] = true
	}
	load := map[string]float64{}
	bySource := map[string]token.RangeSet{}
	for _, rr := range RangeOwners(r, s) {
		if !slices.ContainsFunc(rr.Replicas, func(n Node) bool { return n.Name == name }) {
			continue
		}
		var src *Node
		for _, n := range rr.Replicas {
			if n.Name == name || down[n.Name] || (opt.SourceDC != "" && n.DC != opt.SourceDC) {
				continue
			}
			if src == nil || cmp.Or(cmp.Compare(load[n.Name], load[src.Name]), cmp.Compare(n.Name, src.Name)) < 0 {
				src = &n
			}
		}
		if src == nil {
			where := ""
			if opt.SourceDC != "" {
				where = " in " + opt.SourceDC
			}
			return nil, fmt.Errorf("%w %v: no other replica%s is up", ErrNoSource, rr.Range, where)
		}
		load[src.Name] += Size(rr.Range)
		bySource[src.Name] = append(bySource[src.Name], rr.Range)
	}
	var out []Transfer
	for _, from := range slices.Sorted(maps.Keys(bySource)) {
		for _, rg := range Normalize(bySource[from]) {
			out = append(out, Transfer{Range: rg, From: from, To: name})
		}
	}
	return out, nil
}
