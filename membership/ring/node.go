package ring

import (
	"fmt"
	"strings"

	"github.com/sluicedb/sluice/sstable/token"
)

// Node identifies a cluster member and its place in the topology. Name is unique in a ring; DC
// and Rack drive NetworkTopologyStrategy and source selection.
type Node struct {
	Name string
	DC   string
	Rack string
}

func (n Node) String() string { return n.Name + "@" + n.DC + "/" + n.Rack }

// NodeState is a member's place in its life cycle, as gossip announces it. The zero value is
// invalid.
type NodeState uint8

const (
	// Joining: bootstrapping; its tokens are pending and it replicates nothing yet.
	Joining NodeState = iota + 1
	// Normal: owns its tokens.
	Normal
	// Leaving: decommissioning; still owns its tokens until it has streamed its data away.
	Leaving
	// Moving: changing its single token; still owns the old one.
	Moving
	// Left: gone; its tokens, if any are still recorded, are ignored.
	Left
)

var stateNames = [...]string{Joining: "JOINING", Normal: "NORMAL", Leaving: "LEAVING", Moving: "MOVING", Left: "LEFT"}

func (s NodeState) String() string {
	if s >= Joining && s <= Left {
		return stateNames[s]
	}
	return fmt.Sprintf("NodeState(%d)", uint8(s))
}

// ParseNodeState reads the String form of a state, ignoring case.
func ParseNodeState(s string) (NodeState, error) {
	for st := Joining; st <= Left; st++ {
		if strings.EqualFold(s, stateNames[st]) {
			return st, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownState, s)
}

// owns reports whether a member in this state places its tokens on the ring that serves reads
// and writes (Cassandra's tokenToEndpointMap): leaving and moving nodes keep theirs until the
// operation completes.
func (s NodeState) owns() bool { return s == Normal || s == Leaving || s == Moving }

// Member is a node, its state and its tokens. For a Joining member Tokens are the tokens it is
// bootstrapping into; for a Left member they are ignored.
type Member struct {
	Node   Node
	State  NodeState
	Tokens []token.Token
}

func (m Member) clone() Member {
	m.Tokens = append([]token.Token(nil), m.Tokens...)
	return m
}
