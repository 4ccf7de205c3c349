package ring

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/sluicedb/sluice/sstable/token"
)

// Ring is an immutable view of the cluster: its members, their states and their tokens. The
// tokens of Normal, Leaving and Moving members form the ring that places replicas (the
// "natural" ring); Joining members' tokens are pending and Left members' are ignored.
//
// The zero Ring is empty and valid. Methods never modify a Ring; slices they return are the
// caller's to keep.
type Ring struct {
	members []Member // sorted by name, never mutated after construction
	nat     *layout  // the natural ring; nil when empty
}

// NewRing validates members and builds a Ring. Names must be unique and non-empty; members that
// are Joining, Normal, Leaving or Moving must hold at least one Murmur3 token; no token may be
// held twice among those members (a Joining member's tokens included, as Cassandra refuses a
// bootstrap onto an owned token).
func NewRing(members ...Member) (Ring, error) {
	ms := make([]Member, len(members))
	for i, m := range members {
		ms[i] = m.clone()
	}
	slices.SortFunc(ms, func(a, b Member) int { return cmp.Compare(a.Node.Name, b.Node.Name) })
	holder := make(map[int64]string)
	for i, m := range ms {
		if m.Node.Name == "" {
			return Ring{}, fmt.Errorf("%w: empty name", ErrInvalidNode)
		}
		if i > 0 && ms[i-1].Node.Name == m.Node.Name {
			return Ring{}, fmt.Errorf("%w: %q", ErrDuplicateNode, m.Node.Name)
		}
		if m.State < Joining || m.State > Left {
			return Ring{}, fmt.Errorf("%w: node %q: %v", ErrUnknownState, m.Node.Name, m.State)
		}
		if m.State == Left {
			continue
		}
		if len(m.Tokens) == 0 {
			return Ring{}, fmt.Errorf("%w: node %q is %v", ErrNoTokens, m.Node.Name, m.State)
		}
		for _, t := range m.Tokens {
			if t.Kind != token.KindMurmur3 {
				return Ring{}, fmt.Errorf("%w: node %q token %v", ErrUnsupportedToken, m.Node.Name, t)
			}
			if h, ok := holder[t.Long]; ok {
				return Ring{}, fmt.Errorf("%w: token %d held by %q and %q", ErrTokenConflict, t.Long, h, m.Node.Name)
			}
			holder[t.Long] = m.Node.Name
		}
		slices.SortFunc(ms[i].Tokens, token.Token.Compare)
	}
	return assemble(ms), nil
}

// assemble builds a Ring from validated members sorted by name.
func assemble(ms []Member) Ring {
	var nodes []Node
	var toks [][]int64
	for _, m := range ms {
		if !m.State.owns() {
			continue
		}
		nodes = append(nodes, m.Node)
		toks = append(toks, longs(m.Tokens))
	}
	return Ring{members: ms, nat: newLayout(nodes, toks)}
}

// Members returns every member, sorted by name, tokens sorted.
func (r Ring) Members() []Member {
	out := make([]Member, len(r.members))
	for i, m := range r.members {
		out[i] = m.clone()
	}
	return out
}

// Member returns the member called name.
func (r Ring) Member(name string) (Member, bool) {
	i, ok := r.find(name)
	if !ok {
		return Member{}, false
	}
	return r.members[i].clone(), true
}

func (r Ring) find(name string) (int, bool) {
	return slices.BinarySearchFunc(r.members, name, func(m Member, n string) int { return cmp.Compare(m.Node.Name, n) })
}

// With returns a ring where m replaces the member of the same name, or is added.
func (r Ring) With(m Member) (Ring, error) {
	ms := slices.Clone(r.members)
	if i, ok := r.find(m.Node.Name); ok {
		ms[i] = m
	} else {
		ms = append(ms, m)
	}
	return NewRing(ms...)
}

// Without returns a ring without the member called name.
func (r Ring) Without(name string) Ring {
	i, ok := r.find(name)
	if !ok {
		return r
	}
	// Removing a member from a valid ring cannot make it invalid.
	return assemble(slices.Delete(slices.Clone(r.members), i, i+1))
}

// Len is the number of tokens on the natural ring.
func (r Ring) Len() int {
	if r.nat == nil {
		return 0
	}
	return len(r.nat.toks)
}

// Sorted returns the tokens of the natural ring in ascending order.
func (r Ring) Sorted() []token.Token {
	if r.nat == nil {
		return nil
	}
	out := make([]token.Token, len(r.nat.toks))
	for i, v := range r.nat.toks {
		out[i] = tok(v)
	}
	return out
}

// Owner returns the primary owner of t: the node holding the first natural token >= t, wrapping
// past the largest token to the smallest. It reports false on an empty ring or a non-Murmur3 t.
func (r Ring) Owner(t token.Token) (Node, bool) {
	if r.nat == nil || t.Kind != token.KindMurmur3 {
		return Node{}, false
	}
	return r.nat.nodes[r.nat.owner[r.nat.index(t.Long)]], true
}

// PrimaryRanges returns, for each natural token t of the node in ascending order, the range
// (predecessor of t, t] as Cassandra's getPrimaryRangesFor does. The range ending at the
// smallest token wraps; with a single token on the ring it is (t, t], the whole ring. A node
// without natural tokens has none.
func (r Ring) PrimaryRanges(name string) token.RangeSet {
	l := r.nat
	if l == nil {
		return nil
	}
	var out token.RangeSet
	for i, v := range l.toks {
		if l.nodes[l.owner[i]].Name == name {
			out = append(out, token.Range{Left: tok(l.toks[l.prev(i)]), Right: tok(v)})
		}
	}
	return out
}

// layout is a natural ring reduced to what replica placement needs: sorted tokens, their owners
// as indexes into nodes, and the topology of the nodes that hold tokens. Cassandra's NTS counts
// the nodes and racks of a DC from the same ring it walks; so does this.
type layout struct {
	toks    []int64
	owner   []int32 // owner[i] indexes nodes
	nodes   []Node  // sorted by name
	dcOf    []int32 // node index -> dcs index
	rackOf  []int32 // node index -> rack index, racks being distinct (DC, rack) pairs
	dcs     []string
	dcIdx   map[string]int32
	dcNodes []int
	dcRacks []int
	nracks  int
}

// newLayout builds a layout from nodes sorted by name and their tokens; it returns nil when no
// node holds a token. Tokens must be distinct.
func newLayout(nodes []Node, toks [][]int64) *layout {
	n := 0
	for _, ts := range toks {
		n += len(ts)
	}
	if n == 0 {
		return nil
	}
	l := &layout{toks: make([]int64, 0, n), owner: make([]int32, 0, n), dcIdx: make(map[string]int32)}
	type rackKey struct{ dc, rack string }
	racks := make(map[rackKey]int32)
	for i, nd := range nodes {
		if len(toks[i]) == 0 {
			continue
		}
		idx := int32(len(l.nodes))
		l.nodes = append(l.nodes, nd)
		d, ok := l.dcIdx[nd.DC]
		if !ok {
			d = int32(len(l.dcs))
			l.dcIdx[nd.DC] = d
			l.dcs = append(l.dcs, nd.DC)
			l.dcNodes = append(l.dcNodes, 0)
			l.dcRacks = append(l.dcRacks, 0)
		}
		l.dcOf = append(l.dcOf, d)
		l.dcNodes[d]++
		rk, ok := racks[rackKey{nd.DC, nd.Rack}]
		if !ok {
			rk = int32(len(racks))
			racks[rackKey{nd.DC, nd.Rack}] = rk
			l.dcRacks[d]++
		}
		l.rackOf = append(l.rackOf, rk)
		for _, t := range toks[i] {
			l.toks = append(l.toks, t)
			l.owner = append(l.owner, idx)
		}
	}
	l.nracks = len(racks)
	sort.Sort(byToken{l})
	return l
}

type byToken struct{ l *layout }

func (b byToken) Len() int           { return len(b.l.toks) }
func (b byToken) Less(i, j int) bool { return b.l.toks[i] < b.l.toks[j] }
func (b byToken) Swap(i, j int) {
	b.l.toks[i], b.l.toks[j] = b.l.toks[j], b.l.toks[i]
	b.l.owner[i], b.l.owner[j] = b.l.owner[j], b.l.owner[i]
}

// index returns the position of the first token >= t, wrapping to 0: the token whose range
// (predecessor, token] holds t.
func (l *layout) index(t int64) int {
	i, _ := slices.BinarySearch(l.toks, t)
	if i == len(l.toks) {
		return 0
	}
	return i
}

func (l *layout) prev(i int) int {
	if i == 0 {
		return len(l.toks) - 1
	}
	return i - 1
}

func (l *layout) nodeIndex(name string) (int32, bool) {
	i, ok := slices.BinarySearchFunc(l.nodes, name, func(n Node, s string) int { return cmp.Compare(n.Name, s) })
	return int32(i), ok
}

func tok(v int64) token.Token { return token.Token{Kind: token.KindMurmur3, Long: v} }

func longs(ts []token.Token) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.Long
	}
	return out
}

const minToken = math.MinInt64
