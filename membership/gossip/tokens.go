package gossip

import (
	"fmt"
	"maps"
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

// assembly collects the chunks of one version of one node's set.
type assembly struct {
	version uint64
	tokens  []int64
	have    []bool
	missing int
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

// setLocal replaces the local set with sorted, duplicate-free tokens under a version above
// both the current one and now, a wall-clock reading in nanoseconds: a node that restarts
// without remembering its version still announces a version above its previous life's.
func (t *tokenTable) setLocal(tokens []int64, now uint64) tokenSet {
	s := tokenSet{version: max(t.local().version+1, now), tokens: tokens}
	t.sets[t.self] = s
	return s
}

// bump raises the local version above floor, keeping the tokens; see refute.
func (t *tokenTable) bump(floor uint64) tokenSet {
	s := t.local()
	s.version = max(s.version, floor) + 1
	t.sets[t.self] = s
	return s
}

// get returns the current set of a node.
func (t *tokenTable) get(name string) (tokenSet, bool) {
	s, ok := t.sets[name]
	return s, ok
}

// entries returns every known set, sorted by name, for the push/pull state.
func (t *tokenTable) entries() []stateEntry {
	out := make([]stateEntry, 0, len(t.sets))
	for _, name := range slices.Sorted(maps.Keys(t.sets)) {
		out = append(out, stateEntry{name: name, set: t.sets[name]})
	}
	return out
}

// checkSelf decides whether a peer's view of the local set calls for a refutation: a higher
// version, or the same version with other tokens.
//
// Before the local node has set any tokens there is nothing to defend: the stale version is
// ignored, and the first setLocal (wall-clock based) normally outbids it anyway.
func (t *tokenTable) checkSelf(s tokenSet) outcome {
	l := t.local()
	if l.version == 0 {
		return unchanged
	}
	if s.version > l.version || (s.version == l.version && !slices.Equal(s.tokens, l.tokens)) {
		return refute
	}
	return unchanged
}

// merge installs a complete set for name if it is newer than the known one. s.tokens must be
// sorted and must not be modified afterwards.
func (t *tokenTable) merge(name string, s tokenSet) outcome {
	if name == t.self {
		return t.checkSelf(s)
	}
	if cur, ok := t.sets[name]; ok && s.version <= cur.version {
		return unchanged
	}
	t.sets[name] = s
	if p := t.pending[name]; p != nil && p.version <= s.version {
		delete(t.pending, name)
	}
	return installed
}

// addChunk adds one broadcast chunk and installs the set once all its chunks have arrived.
// Chunks that contradict the assembly they belong to (another total, another token at a
// filled position, sets that are not ascending across chunk boundaries) are dropped.
func (t *tokenTable) addChunk(c chunk) outcome {
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
		p = &assembly{version: c.version, tokens: make([]int64, c.total), have: make([]bool, c.total), missing: c.total}
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
	t.sets[c.name] = tokenSet{version: p.version, tokens: p.tokens}
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
