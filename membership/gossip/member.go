package gossip

import (
	"fmt"
	"slices"
)

// Liveness is what failure detection says about a member. memberlist does not expose its
// intermediate "suspect" state, so a suspected member is reported alive until declared dead.
type Liveness uint8

const (
	// StateAlive: the member answers probes (or is suspected but not yet declared dead).
	StateAlive Liveness = iota + 1
	// StateDead: the member stopped answering and was declared dead. It keeps its place (and
	// its tokens) in the ring, as a down Cassandra node does, until it announces ring.Left.
	StateDead
	// StateLeft: the member left gracefully (Gossip.Leave). Like StateDead it keeps its
	// announced ring state: leaving gossip is not leaving the ring. memberlist reports a
	// departure and a failure alike, so Leave first broadcasts a leave intent, and a
	// departure is StateLeft when its intent arrived (even after the failure was noticed).
	StateLeft
)

var livenessNames = [...]string{StateAlive: "alive", StateDead: "dead", StateLeft: "left"}

func (l Liveness) String() string {
	if l >= StateAlive && l <= StateLeft {
		return livenessNames[l]
	}
	return fmt.Sprintf("Liveness(%d)", uint8(l))
}

// Member is one node as this node currently sees it. It is a snapshot: the caller owns it and
// its Tokens slice.
type Member struct {
	Name     string
	Addr     string // gossip address, host:port
	Meta     NodeMeta
	Liveness Liveness
	// Tokens is the newest token set received for the member, sorted ascending; nil when none
	// has arrived. TokensVersion is its version: when it is below Meta.TokensVersion the set
	// is stale and the newer one is still in flight.
	Tokens        []int64
	TokensVersion uint64
	// Identity is whether the member proved its name (Config.Verify); only proven members
	// are in Ring. IdentityError says why a proof failed.
	Identity      Identity
	IdentityError string
}

// memberEntry is what the event delegate records for a node.
type memberEntry struct {
	addr        string
	meta        NodeMeta
	metaRaw     []byte // the signed metadata claim meta came from
	metaVersion uint64 // its version
	liveness    Liveness
	leaving     bool // a leave intent arrived while the member was alive
}

func (m Member) clone() Member {
	m.Tokens = slices.Clone(m.Tokens)
	return m
}
