package ring

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/sluicedb/sluice/sstable/token"
)

// Transfer is one range to stream from the node From to the node To.
type Transfer struct {
	Range    token.Range
	From, To string
}

func (t Transfer) String() string { return t.From + "->" + t.To + " " + t.Range.String() }

// StreamPlan is what a topology change asks of the cluster.
type StreamPlan struct {
	Change Change
	// Future is the ring after the change (Ring.Apply).
	Future Ring
	// Transfers give every range a node gains exactly one source that replicates it now.
	// Ranges are normalized per (From, To) pair; transfers are sorted by To, From, Range.Left.
	Transfers []Transfer
	// Released holds, per node, the normalized ranges it replicates now and will not after the
	// change: what it gives up, and may drop once the change has completed.
	Released map[string]token.RangeSet
}

// PlanOptions tunes source selection. The zero value means every node can serve.
type PlanOptions struct {
	// Down names nodes that must not be used as sources (the failure detector's verdict).
	Down []string
}

// Plan computes the future ring, and for every node gaining data, what to fetch from whom,
// following Cassandra's RangeStreamer:
//
//   - For each range a node gains, the source is a current replica that loses the range by the
//     change, if one is up ("strict consistency", CASSANDRA-2434: the new replica takes over
//     the data of the replica it displaces, so a write acknowledged at a consistency level
//     stays on enough replicas). A decommissioning node is the source of every range it gives
//     up while it is up.
//   - When no current replica loses the range (the ring had fewer nodes than the replication
//     factor) or the losers are down, any current replica that is up serves.
//   - Among eligible sources the choice prefers the gainer's DC, then a source not yet used for
//     the same range by another gainer, then the gainer's rack, then the source with the least
//     data assigned so far in this plan, then the smallest name: deterministic, local, and
//     spreading load.
//
// A range no replica is up to serve fails the plan with ErrNoSource. A range no node replicates
// now (the ring is empty) needs no transfer: there is no data yet.
func Plan(r Ring, s Strategy, c Change, opt PlanOptions) (StreamPlan, error) {
	fut, err := r.Apply(c)
	if err != nil {
		return StreamPlan{}, err
	}
	d := diffRings(r, fut, s)
	down := make(map[string]bool, len(opt.Down))
	for _, n := range opt.Down {
		down[n] = true
	}
	leaving := ""
	if c.Kind == ChangeDecommission {
		leaving = c.Node.Name
	}
	type pair struct{ from, to string }
	sent := make(map[pair][]bool)
	released := make(map[string][]bool)
	load := make(map[string]float64)
	for k := range d.bounds {
		old, gained, lost := d.before[k], d.gained(k), d.lost(k)
		for _, n := range lost {
			mark(released, n.Name, k, len(d.bounds))
		}
		if len(old) == 0 {
			continue
		}
		var used []string
		for _, g := range gained {
			src, ok := pickSource(g, lost, old, down, leaving, used, load)
			if !ok {
				return StreamPlan{}, fmt.Errorf("%w: %s gains %v; replicas %v are down",
					ErrNoSource, g.Name, d.atom(k), nodeNames(old))
			}
			used = append(used, src.Name)
			load[src.Name] += d.width(k)
			mark(sent, pair{src.Name, g.Name}, k, len(d.bounds))
		}
	}
	plan := StreamPlan{Change: c, Future: fut, Released: make(map[string]token.RangeSet, len(released))}
	pairs := slices.SortedFunc(maps.Keys(sent), func(a, b pair) int {
		return cmp.Or(cmp.Compare(a.to, b.to), cmp.Compare(a.from, b.from))
	})
	for _, p := range pairs {
		mask := sent[p]
		for _, rg := range emit(d.bounds, func(k int) bool { return mask[k] }) {
			plan.Transfers = append(plan.Transfers, Transfer{Range: rg, From: p.from, To: p.to})
		}
	}
	for n, mask := range released {
		plan.Released[n] = emit(d.bounds, func(k int) bool { return mask[k] })
	}
	return plan, nil
}

// PendingRanges returns, per node, the normalized ranges it will replicate after c and does not
// replicate now: what Cassandra's PendingRangeMaps holds while c is in flight, and where writes
// must also go.
func PendingRanges(r Ring, s Strategy, c Change) (map[string]token.RangeSet, error) {
	fut, err := r.Apply(c)
	if err != nil {
		return nil, err
	}
	d := diffRings(r, fut, s)
	masks := make(map[string][]bool)
	for k := range d.bounds {
		for _, g := range d.gained(k) {
			mark(masks, g.Name, k, len(d.bounds))
		}
	}
	out := make(map[string]token.RangeSet, len(masks))
	for n, mask := range masks {
		out[n] = emit(d.bounds, func(k int) bool { return mask[k] })
	}
	return out, nil
}

func mark[K comparable](m map[K][]bool, key K, k, n int) {
	mask, ok := m[key]
	if !ok {
		mask = make([]bool, n)
		m[key] = mask
	}
	mask[k] = true
}

// pickSource chooses the source of one range for gainer g; see Plan for the order of
// preference.
func pickSource(g Node, lost, old []Node, down map[string]bool, leaving string, used []string, load map[string]float64) (Node, bool) {
	var cands []Node
	for _, n := range lost {
		if !down[n.Name] {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		for _, n := range old {
			if !down[n.Name] {
				cands = append(cands, n)
			}
		}
	}
	if len(cands) == 0 {
		return Node{}, false
	}
	rank := func(n Node) [4]int {
		var k [4]int
		if n.Name != leaving {
			k[0] = 1
		}
		if n.DC != g.DC {
			k[1] = 1
		}
		if slices.Contains(used, n.Name) {
			k[2] = 1
		}
		if n.DC != g.DC || n.Rack != g.Rack {
			k[3] = 1
		}
		return k
	}
	best := slices.MinFunc(cands, func(a, b Node) int {
		ra, rb := rank(a), rank(b)
		for i := range ra {
			if c := cmp.Compare(ra[i], rb[i]); c != 0 {
				return c
			}
		}
		return cmp.Or(cmp.Compare(load[a.Name], load[b.Name]), cmp.Compare(a.Name, b.Name))
	})
	return best, true
}

// ringDiff holds the replicas of every atom of the union of two rings' tokens, before and after.
type ringDiff struct {
	bounds        []int64
	before, after [][]Node
}

func diffRings(r, fut Ring, s Strategy) ringDiff {
	d := ringDiff{bounds: union(r.nat, fut.nat)}
	d.before = atomNodes(r.nat, s, d.bounds)
	d.after = atomNodes(fut.nat, s, d.bounds)
	return d
}

// atomNodes returns the replicas of each atom of bounds on l, computing each range of l once.
func atomNodes(l *layout, s Strategy, bounds []int64) [][]Node {
	out := make([][]Node, len(bounds))
	if l == nil {
		return out
	}
	cache := make(map[int][]Node)
	var w walk
	for k, b := range bounds {
		i := l.index(b)
		reps, ok := cache[i]
		if !ok {
			reps = l.names(s.place(l, i, &w))
			cache[i] = reps
		}
		out[k] = reps
	}
	return out
}

func (d ringDiff) gained(k int) []Node { return minus(d.after[k], d.before[k]) }
func (d ringDiff) lost(k int) []Node   { return minus(d.before[k], d.after[k]) }

func (d ringDiff) atom(k int) token.Range {
	return token.Range{Left: tok(d.bounds[(k+len(d.bounds)-1)%len(d.bounds)]), Right: tok(d.bounds[k])}
}

func (d ringDiff) width(k int) float64 {
	return width(d.bounds[(k+len(d.bounds)-1)%len(d.bounds)], d.bounds[k])
}

// minus returns the nodes of a whose names are not in b, sorted by name.
func minus(a, b []Node) []Node {
	var out []Node
	for _, n := range a {
		if !slices.ContainsFunc(b, func(m Node) bool { return m.Name == n.Name }) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(x, y Node) int { return cmp.Compare(x.Name, y.Name) })
	return out
}

func nodeNames(ns []Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}
