package ring

import (
	"fmt"
	"slices"

	"github.com/sluicedb/sluice/sstable/token"
)

// ChangeKind names a topology change.
type ChangeKind uint8

const (
	ChangeBootstrap ChangeKind = iota + 1
	ChangeDecommission
	ChangeMove
)

func (k ChangeKind) String() string {
	switch k {
	case ChangeBootstrap:
		return "bootstrap"
	case ChangeDecommission:
		return "decommission"
	case ChangeMove:
		return "move"
	}
	return fmt.Sprintf("ChangeKind(%d)", uint8(k))
}

// Change is one topology change. Build it with Bootstrap, Decommission or Move.
type Change struct {
	Kind ChangeKind
	// Node is the node that changes. Decommission and Move use only its Name.
	Node Node
	// Tokens are the bootstrap tokens, or the single target token of a move.
	Tokens []token.Token
}

// Bootstrap adds node n with the given tokens.
func Bootstrap(n Node, tokens []token.Token) Change {
	return Change{Kind: ChangeBootstrap, Node: n, Tokens: slices.Clone(tokens)}
}

// Decommission removes the node called name, which streams its data to the nodes that take over.
func Decommission(name string) Change {
	return Change{Kind: ChangeDecommission, Node: Node{Name: name}}
}

// Move gives the single-token node called name the token t instead of its current one.
func Move(name string, t token.Token) Change {
	return Change{Kind: ChangeMove, Node: Node{Name: name}, Tokens: []token.Token{t}}
}

func (c Change) String() string {
	switch c.Kind {
	case ChangeBootstrap:
		return fmt.Sprintf("bootstrap %v %v", c.Node, c.Tokens)
	case ChangeMove:
		return fmt.Sprintf("move %s %v", c.Node.Name, c.Tokens)
	}
	return fmt.Sprintf("%v %s", c.Kind, c.Node.Name)
}

// Apply returns the ring after c has completed: a bootstrapped node is Normal with its tokens, a
// decommissioned one is Left without tokens, a moved one is Normal at its new token. It checks
// Cassandra's preconditions:
//   - bootstrap: the node is absent, Left or Joining; tokens are Murmur3 and held by no other
//     member (Joining members included);
//   - decommission: the node is Normal or Leaving and is not the last node on the natural ring;
//   - move: the node is Normal or Moving with exactly one token (Cassandra cannot move vnodes),
//     and the target is a Murmur3 token no member holds (the node's current token included).
func (r Ring) Apply(c Change) (Ring, error) {
	m, err := r.check(c)
	if err != nil {
		return Ring{}, err
	}
	switch c.Kind {
	case ChangeBootstrap:
		m = Member{Node: c.Node, State: Normal, Tokens: c.Tokens}
	case ChangeDecommission:
		m.State, m.Tokens = Left, nil
	case ChangeMove:
		m.State, m.Tokens = Normal, c.Tokens
	}
	return r.With(m)
}

// Begin returns the ring while c is in flight: a bootstrapping node is Joining with its tokens
// pending, a decommissioning one Leaving, a moving one Moving (at its old token: the ring does
// not record a move's target). It checks the same preconditions as Apply.
func (r Ring) Begin(c Change) (Ring, error) {
	m, err := r.check(c)
	if err != nil {
		return Ring{}, err
	}
	switch c.Kind {
	case ChangeBootstrap:
		m = Member{Node: c.Node, State: Joining, Tokens: c.Tokens}
	case ChangeDecommission:
		m.State = Leaving
	case ChangeMove:
		m.State = Moving
	}
	return r.With(m)
}

// Settled returns the ring once the in-flight bootstraps and decommissions have completed:
// Joining members become Normal, Leaving members become Left and lose their tokens. Moving
// members stay where they are, since a Ring does not record their targets.
func (r Ring) Settled() Ring {
	ms := r.Members()
	changed := false
	for i := range ms {
		switch ms[i].State {
		case Joining:
			ms[i].State, changed = Normal, true
		case Leaving:
			ms[i].State, ms[i].Tokens, changed = Left, nil, true
		}
	}
	if !changed {
		return r
	}
	// Joining tokens were checked against every other member when r was built.
	return assemble(ms)
}

// check validates c against r and returns the current member (zero for a new node).
func (r Ring) check(c Change) (Member, error) {
	name := c.Node.Name
	if name == "" {
		return Member{}, fmt.Errorf("%w: %v: empty node name", ErrInvalidNode, c.Kind)
	}
	m, ok := r.Member(name)
	switch c.Kind {
	case ChangeBootstrap:
		if ok && m.State != Left && m.State != Joining {
			return Member{}, fmt.Errorf("%w: bootstrap %q: node is %v", ErrInvalidChange, name, m.State)
		}
		if len(c.Tokens) == 0 {
			return Member{}, fmt.Errorf("%w: bootstrap %q", ErrNoTokens, name)
		}
		if err := r.checkFree(name, c.Tokens); err != nil {
			return Member{}, fmt.Errorf("bootstrap %q: %w", name, err)
		}
		return m, nil
	case ChangeDecommission:
		if !ok {
			return Member{}, fmt.Errorf("%w: decommission %q", ErrUnknownNode, name)
		}
		if m.State != Normal && m.State != Leaving {
			return Member{}, fmt.Errorf("%w: decommission %q: node is %v", ErrInvalidChange, name, m.State)
		}
		if r.nat == nil || len(r.nat.nodes) < 2 {
			return Member{}, fmt.Errorf("%w: decommission %q: it is the last node on the ring", ErrInvalidChange, name)
		}
		return m, nil
	case ChangeMove:
		if !ok {
			return Member{}, fmt.Errorf("%w: move %q", ErrUnknownNode, name)
		}
		if m.State != Normal && m.State != Moving {
			return Member{}, fmt.Errorf("%w: move %q: node is %v", ErrInvalidChange, name, m.State)
		}
		if len(m.Tokens) != 1 || len(c.Tokens) != 1 {
			return Member{}, fmt.Errorf("%w: move %q: only a single-token node can move to a single token", ErrInvalidChange, name)
		}
		if err := r.checkFree("", c.Tokens); err != nil {
			return Member{}, fmt.Errorf("move %q: %w", name, err)
		}
		return m, nil
	}
	return Member{}, fmt.Errorf("%w: kind %v", ErrInvalidChange, c.Kind)
}

// checkFree verifies that tokens are Murmur3, distinct, and held by no member other than
// except (a Left member holds none).
func (r Ring) checkFree(except string, tokens []token.Token) error {
	seen := make(map[int64]bool, len(tokens))
	for _, t := range tokens {
		if t.Kind != token.KindMurmur3 {
			return fmt.Errorf("%w: %v", ErrUnsupportedToken, t)
		}
		if seen[t.Long] {
			return fmt.Errorf("%w: token %d given twice", ErrTokenConflict, t.Long)
		}
		seen[t.Long] = true
	}
	for _, m := range r.members {
		if m.State == Left || m.Node.Name == except {
			continue
		}
		for _, t := range m.Tokens {
			if seen[t.Long] {
				return fmt.Errorf("%w: token %d held by %q", ErrTokenConflict, t.Long, m.Node.Name)
			}
		}
	}
	return nil
}
