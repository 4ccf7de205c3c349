package ring

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/sluicedb/sluice/sstable/token"
)

// Strategy places the replicas of a range, as Cassandra's AbstractReplicationStrategy does. The
// set is closed: SimpleStrategy and NetworkTopologyStrategy.
type Strategy interface {
	// Replicas returns the natural replicas of the range of r holding t, primary first, in the
	// order the ring walk meets them. Fewer than the replication factor are returned when the
	// ring lacks nodes (or, for NTS, nodes in a DC); none on an empty ring.
	Replicas(r Ring, t token.Token) []Node
	// ReplicationFactor is the total number of replicas asked for.
	ReplicationFactor() int
	String() string
	// place returns the indexes of the replicas of the range ending at l.toks[i], in w.reps:
	// valid until w is used again.
	place(l *layout, i int, w *walk) []int32
}

// walk is scratch space for replica placement, reused across calls to spare allocations; its
// zero value is ready.
type walk struct {
	reps  []int32
	fills []dcFill
	seen  []bool
}

var (
	_ Strategy = SimpleStrategy{}
	_ Strategy = NetworkTopologyStrategy{}
)

// SimpleStrategy places RF replicas on the first RF distinct nodes met walking the ring
// clockwise from the range's right token, ignoring topology.
type SimpleStrategy struct {
	RF int
}

func (s SimpleStrategy) Replicas(r Ring, t token.Token) []Node { return replicas(r, s, t) }
func (s SimpleStrategy) ReplicationFactor() int                { return max(s.RF, 0) }
func (s SimpleStrategy) String() string                        { return fmt.Sprintf("SimpleStrategy{RF:%d}", s.RF) }

func (s SimpleStrategy) place(l *layout, i int, w *walk) []int32 {
	dst := w.reps[:0]
	n := len(l.toks)
	want := min(s.RF, len(l.nodes))
	for step := 0; step < n && len(dst) < want; step++ {
		o := l.owner[(i+step)%n]
		if !slices.Contains(dst, o) {
			dst = append(dst, o)
		}
	}
	w.reps = dst
	return dst
}

// NetworkTopologyStrategy places RF[dc] replicas in each DC, walking the ring once as
// Cassandra's NetworkTopologyStrategy.calculateNaturalEndpoints does: in a DC it takes a node
// whose rack it has not used yet; it takes a node of an already used rack only while the DC has
// fewer racks than its RF (at most RF - racks such repeats, taken in ring order); it stops taking
// nodes in a DC after min(RF, nodes in the DC). DCs absent from RF, with RF <= 0, or without
// nodes get no replicas. A DC's node and rack counts are those of the ring being walked.
type NetworkTopologyStrategy struct {
	RF map[string]int
}

func (s NetworkTopologyStrategy) Replicas(r Ring, t token.Token) []Node { return replicas(r, s, t) }

func (s NetworkTopologyStrategy) ReplicationFactor() int {
	total := 0
	for _, rf := range s.RF {
		total += max(rf, 0)
	}
	return total
}

func (s NetworkTopologyStrategy) String() string {
	var b strings.Builder
	b.WriteString("NetworkTopologyStrategy{")
	for i, dc := range slices.Sorted(maps.Keys(s.RF)) {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%s:%d", dc, s.RF[dc])
	}
	b.WriteString("}")
	return b.String()
}

type dcFill struct {
	active  bool
	rfLeft  int // replicas still wanted: min(rf, nodes) at first
	repeats int // rack repeats still allowed: rf - racks at first
}

func (s NetworkTopologyStrategy) place(l *layout, i int, w *walk) []int32 {
	dst := w.reps[:0]
	fills := slices.Grow(w.fills[:0], len(l.dcs))[:len(l.dcs)]
	clear(fills)
	w.fills = fills
	toFill := 0
	for d, dc := range l.dcs {
		rf := s.RF[dc]
		if rf <= 0 || l.dcNodes[d] == 0 {
			continue
		}
		fills[d] = dcFill{active: true, rfLeft: min(rf, l.dcNodes[d]), repeats: rf - l.dcRacks[d]}
		toFill++
	}
	seenRack := slices.Grow(w.seen[:0], l.nracks)[:l.nracks]
	clear(seenRack)
	w.seen = seenRack
	n := len(l.toks)
	for step := 0; step < n && toFill > 0; step++ {
		ep := l.owner[(i+step)%n]
		f := &fills[l.dcOf[ep]]
		if !f.active || f.rfLeft == 0 {
			continue
		}
		if rk := l.rackOf[ep]; !seenRack[rk] {
			// A new rack: its node cannot have been taken yet.
			seenRack[rk] = true
		} else if f.repeats <= 0 || slices.Contains(dst, ep) {
			continue
		} else {
			f.repeats--
		}
		dst = append(dst, ep)
		if f.rfLeft--; f.rfLeft == 0 {
			toFill--
		}
	}
	w.reps = dst
	return dst
}

func replicas(r Ring, s Strategy, t token.Token) []Node {
	l := r.nat
	if l == nil || t.Kind != token.KindMurmur3 {
		return nil
	}
	return l.names(s.place(l, l.index(t.Long), &walk{}))
}

func (l *layout) names(idx []int32) []Node {
	out := make([]Node, len(idx))
	for i, x := range idx {
		out[i] = l.nodes[x]
	}
	return out
}

// RangeReplicas is one range of the ring and its natural replicas, primary first.
type RangeReplicas struct {
	Range    token.Range
	Replicas []Node
}

// RangeOwners maps every range of the natural ring, (previous token, token] for each token
// including the wrapping one, to its replicas, sorted by the range's right token. A ring with one
// token has the single range (t, t].
func RangeOwners(r Ring, s Strategy) []RangeReplicas {
	l := r.nat
	if l == nil {
		return nil
	}
	out := make([]RangeReplicas, len(l.toks))
	var w walk
	for i, v := range l.toks {
		out[i] = RangeReplicas{
			Range:    token.Range{Left: tok(l.toks[l.prev(i)]), Right: tok(v)},
			Replicas: l.names(s.place(l, i, &w)),
		}
	}
	return out
}

// replicaMask returns, for each token index of l, whether node name replicates the range ending
// there.
func replicaMask(l *layout, s Strategy, name string) []bool {
	if l == nil {
		return nil
	}
	mask := make([]bool, len(l.toks))
	x, ok := l.nodeIndex(name)
	if !ok {
		return mask
	}
	var w walk
	for i := range l.toks {
		mask[i] = slices.Contains(s.place(l, i, &w), x)
	}
	return mask
}

// ReplicaRanges returns, normalized, every range node name replicates on the natural ring.
func ReplicaRanges(r Ring, s Strategy, name string) token.RangeSet {
	if r.nat == nil {
		return nil
	}
	mask := replicaMask(r.nat, s, name)
	return emit(r.nat.toks, func(k int) bool { return mask[k] })
}

// CommonRanges returns, normalized, the ranges both a and b replicate on the natural ring: what
// a repair between the two must compare.
func CommonRanges(r Ring, s Strategy, a, b string) token.RangeSet {
	if r.nat == nil {
		return nil
	}
	ma, mb := replicaMask(r.nat, s, a), replicaMask(r.nat, s, b)
	return emit(r.nat.toks, func(k int) bool { return ma[k] && mb[k] })
}

// CleanupRanges returns, normalized, the ranges node name must keep when it cleans up: those it
// replicates now and those it will replicate once the ring settles (Joining members become
// Normal, Leaving ones leave), so that cleanup never drops data an in-flight bootstrap or
// decommission is about to hand to it, as Cassandra keeps local and pending ranges. Everything
// else on the node's disk may be dropped.
func CleanupRanges(r Ring, s Strategy, name string) token.RangeSet {
	fut := r.Settled()
	bounds := union(r.nat, fut.nat)
	now, later := atomReplicas(r.nat, s, bounds, name), atomReplicas(fut.nat, s, bounds, name)
	return emit(bounds, func(k int) bool { return now[k] || later[k] })
}

// atomReplicas says, for each atom of bounds, whether name replicates it on l.
func atomReplicas(l *layout, s Strategy, bounds []int64, name string) []bool {
	out := make([]bool, len(bounds))
	if l == nil {
		return out
	}
	mask := replicaMask(l, s, name)
	for k, b := range bounds {
		out[k] = mask[l.index(b)]
	}
	return out
}

// Ownership returns, for every node on the natural ring, the fraction of the ring it
// replicates. The values sum to the replication factor when every DC has at least RF nodes.
func Ownership(r Ring, s Strategy) map[string]float64 {
	l := r.nat
	if l == nil {
		return map[string]float64{}
	}
	own := ownership(l, s)
	out := make(map[string]float64, len(own))
	for i, v := range own {
		out[l.nodes[i].Name] = v
	}
	return out
}

func ownership(l *layout, s Strategy) []float64 {
	own := make([]float64, len(l.nodes))
	var w walk
	for i, v := range l.toks {
		size := width(l.toks[l.prev(i)], v)
		for _, x := range s.place(l, i, &w) {
			own[x] += size
		}
	}
	return own
}

// OwnershipRatio returns the largest ownership of a Normal member divided by the smallest: 1 is
// perfect balance (also when no member replicates anything), +Inf means some Normal member
// replicates nothing while another does. It returns 0 when the ring has
// no Normal member.
func OwnershipRatio(r Ring, s Strategy) float64 {
	own := Ownership(r, s)
	lo, hi, seen := 0.0, 0.0, false
	for _, m := range r.members {
		if m.State != Normal {
			continue
		}
		v := own[m.Node.Name]
		if !seen {
			lo, hi, seen = v, v, true
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	switch {
	case !seen:
		return 0
	case hi == 0:
		return 1
	case lo == 0:
		return math.Inf(1)
	}
	return hi / lo
}
