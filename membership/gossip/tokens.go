package gossip

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// tokenTable is the pure state behind token dissemination: the newest token set known for
// every node, the local node's own set, and the chunked broadcasts being reassembled. It does
// no I/O and is not safe for concurrent use; Gossip guards it with its mutex.
//
// Versions order the sets of one node: a higher version wins everywhere. The local node is the
// only authority on its own set. If a peer reports a higher version for it (the node restarted
// and its new versions started lower than what the cluster remembers), the table says so and
// the caller re-announces the local set under a version above the peer's, as Cassandra's
// gossip refutes stale state with a newer generation.
type tokenTable struct {
	self    string
	sets    map[string]tokenSet
	pending map[string]*assembly
}

// assembly collects the chunks of one version of one node's set, and their signed envelopes
// by offset.
type assembly struct {
	version uint64
	tokens  []int64
	have    []bool
	missing int
	msgs    map[int][]byte
}

// outcome is what a merge did.
type outcome uint8

const (
	// unchanged: the data was old, a duplicate, or contradicted what was known.
	unchanged outcome = iota
	// accepted: a chunk added new tokens to a set that is not complete yet.
	accepted
	// installed: a newer set for a peer is now current.
	installed
	// refute: a peer holds a version of the local set at least as new as the local one; the
	// caller must call bump and re-announce.
	refute
)

func newTokenTable(self string) *tokenTable {
	return &tokenTable{self: self, sets: make(map[string]tokenSet), pending: make(map[string]*assembly)}
}

// normalizeTokens returns a sorted copy of tokens, rejecting duplicates and oversized sets.
func normalizeTokens(tokens []int64) ([]int64, error) {
	if len(tokens) > maxTokens {
		return nil, fmt.Errorf("%w: %d tokens exceed the limit of %d", ErrInvalidTokens, len(tokens), maxTokens)
	}
	ts := slices.Clone(tokens)
	slices.Sort(ts)
	if !ascending(ts) {
		return nil, fmt.Errorf("%w: a token appears twice", ErrInvalidTokens)
	}
	return ts, nil
}

// local returns the local node's set (version 0 and no tokens before the first setLocal).
func (t *tokenTable) local() tokenSet { return t.sets[t.self] }

// nextLocal is the local set with sorted, duplicate-free tokens under a version above both
// the current one and now, a wall-clock reading in nanoseconds: a node that restarts without
// remembering its version still announces a version above its previous life's. The caller
// signs its chunks and installs it with setLocal.
func (t *tokenTable) nextLocal(tokens []int64, now uint64) tokenSet {
	return tokenSet{version: max(t.local().version+1, now), tokens: tokens}
}

// setLocal installs the local set s (from nextLocal or bumped, with its signed chunks).
func (t *tokenTable) setLocal(s tokenSet) { t.sets[t.self] = s }

// bumped is the local set under a version above floor, keeping the tokens; see refute. It
// never wraps: a floor at the top of the range (only a forged claim could carry it, and
// claims are checked against the clock before they get here) leaves the version as it is,
// and ok is false.
func (t *tokenTable) bumped(floor uint64) (s tokenSet, ok bool) {
	s = t.local()
	if floor == math.MaxUint64 {
		return s, false
	}
	s.version = max(s.version, floor+1)
	s.msgs = nil
	return s, true
}

// get returns the current set of a node.
func (t *tokenTable) get(name string) (tokenSet, bool) {
	s, ok := t.sets[name]
	return s, ok
}

// messages returns the signed chunks of every known set, sorted by name, for the push/pull
// state.
func (t *tokenTable) messages() [][]byte {
	var out [][]byte
	for _, name := range slices.Sorted(maps.Keys(t.sets)) {
		out = append(out, t.sets[name].msgs...)
	}
	return out
}

// addChunk adds one chunk (msg, its signed envelope, is kept to pass on) and installs the set
// once all its chunks have arrived. Chunks that contradict the assembly they belong to
// (another total, another token at a filled position, sets that are not ascending across
// chunk boundaries) are dropped.
func (t *tokenTable) addChunk(c chunk, msg []byte) outcome {
	if c.name == t.self {
		if l := t.local(); l.version != 0 && c.version > l.version {
			return refute
		}
		return unchanged
	}
	if cur, ok := t.sets[c.name]; ok && c.version <= cur.version {
		return unchanged
	}
	p := t.pending[c.name]
	switch {
	case p == nil || p.version < c.version:
		p = &assembly{version: c.version, tokens: make([]int64, c.total), have: make([]bool, c.total), missing: c.total,
			msgs: map[int][]byte{}}
		t.pending[c.name] = p
	case p.version > c.version || len(p.tokens) != c.total:
		return unchanged
	}
	added := false
	for i, v := range c.tokens {
		k := c.offset + i
		if p.have[k] {
			if p.tokens[k] != v {
				delete(t.pending, c.name)
				return unchanged
			}
			continue
		}
		p.have[k], p.tokens[k] = true, v
		p.missing--
		added = true
	}
	if added || c.total == 0 {
		p.msgs[c.offset] = msg
	}
	if p.missing > 0 {
		if added {
			return accepted
		}
		return unchanged
	}
	delete(t.pending, c.name)
	if !ascending(p.tokens) {
		return unchanged
	}
	offs := slices.Sorted(maps.Keys(p.msgs))
	msgs := make([][]byte, len(offs))
	for i, o := range offs {
		msgs[i] = p.msgs[o]
	}
	t.sets[c.name] = tokenSet{version: p.version, tokens: p.tokens, msgs: msgs}
	return installed
}

// ascending reports whether ts is strictly ascending.
func ascending(ts []int64) bool {
	for i := 1; i < len(ts); i++ {
		if ts[i] <= ts[i-1] {
			return false
		}
	}
	return true
}
