package ops

import (
	"context"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/membership/ring"
)

// Ring is the token ring an operation runs over and the members that hold it: sluice's own
// (gossip) or a live Cassandra cluster's (the sidecar's). Members are named as the ring names
// them (sluice's node names, Cassandra's host ids); Peer says which sluice member serves one.
type Ring interface {
	// Self is this node's name on the ring.
	Self() string
	// Settled returns the ring once it is complete enough to plan on: sluice's waits until
	// every member has announced a state; Cassandra's reads it afresh (and Self, Keyspaces,
	// Down and Peer answer from that read).
	Settled(ctx context.Context) (ring.Ring, error)
	// Keyspaces are the keyspaces the ring's data is in, with their strategies, by name; only
	// keyspace only when it is set (an error when the ring cannot place it).
	Keyspaces(only string) ([]Keyspace, error)
	// Down lists the ring's members that cannot be a stream source now, and why.
	Down() []Unavailable
	// Peer is the sluice member that serves ring member name's data (sluice's ring: the
	// member itself; Cassandra's: the sidecar announcing its host id).
	Peer(name string) (string, error)
	// Tables keeps, of the tables a source holds of keyspace, the ones to stream.
	Tables(keyspace string, held []TableStatus) []TableStatus
}

// Keyspace is a keyspace of a ring and its replication.
type Keyspace struct {
	Name     string
	Strategy ring.Strategy
}

// Unavailable is a ring member that cannot be a stream source: where it is and why not.
type Unavailable struct {
	Name, DC string
	Where    string // an address an operator knows it by
	Why      string
}

// OwnRing is sluice's own ring, as this node's membership holds it: the topology operations
// change this node's place on it (state, tokens) and cleanup acts only on it once settled.
type OwnRing interface {
	Ring
	// Node is this node with its place (DC, rack).
	Node() ring.Node
	// Current is the ring as this node sees it now, without waiting.
	Current() (ring.Ring, error)
	// State is this node's announced state; SetState announces another.
	State() ring.NodeState
	SetState(ring.NodeState) error
	// Tokens are this node's announced tokens; SetTokens announces others.
	Tokens() []int64
	SetTokens([]int64) error
	// SaveState records the state and tokens durably across restarts.
	SaveState(state ring.NodeState, tokens []int64) error
	// Leave waits (bounded) until the peers have seen this node LEFT, then leaves the
	// membership.
	Leave(ctx context.Context) error
	// PeerRing is the ring as a live proven peer reports it, with the dead members a node new
	// to the membership never heard of.
	PeerRing(ctx context.Context) (ring.Ring, error)
	// Alive reports whether member name is alive.
	Alive(name string) bool
	// TakeOver announces this node NORMAL as the replacement of dead, once it holds its data.
	TakeOver(dead string) error
	// Trust waits (bounded) until r has been unchanged for the settle period and checks that
	// no unproven member is about; Unchanged checks that r is still the ring, without waiting.
	Trust(ctx context.Context, r ring.Ring) error
	Unchanged(r ring.Ring) error
	// Announced reports whether member name announced a stream address.
	Announced(name string) bool
}

// Peers reaches the other members: the network side of the operations, so that their logic
// (pairing transfers, the journal, progress, failures, confirmation) runs without one. Every
// member named must be alive and have proven its identity; this node answers for itself where
// noted.
type Peers interface {
	// Tables lists keyspace's tables on member name (this node answers for itself).
	Tables(ctx context.Context, name, keyspace string) ([]TableStatus, error)
	// Fetch has member to (possibly this node) pull req from member req.Source into its live
	// table directory, and returns when it is done.
	Fetch(ctx context.Context, to string, req FetchOpRequest) (FetchOpResponse, error)
	// Proven is nil when member name is alive, proven and announced a stream address.
	Proven(name string) error
	// RingView is member name's view of the ring, without loads.
	RingView(ctx context.Context, name string) (RingView, error)
	// Trees and Digests are the repair calls: member name's Merkle trees and one page of its
	// partition digests (retried while the member is busy).
	Trees(ctx context.Context, name string, req TreeRequest) (TreeResponse, error)
	Digests(ctx context.Context, name string, req DigestRequest) (DigestResponse, error)
}

// Installer lands one transfer of a stream plan: member to pulls req's ranges of one table
// from member req.Source and installs them where the ring's data lives.
type Installer interface {
	Install(ctx context.Context, o *Op, to string, req FetchOpRequest) (FetchOpResponse, error)
}

// fetchInstall is sluice's install: the target fetches into its live table directory.
type fetchInstall struct{ p Peers }

func (f fetchInstall) Install(ctx context.Context, _ *Op, to string, req FetchOpRequest) (FetchOpResponse, error) {
	return f.p.Fetch(ctx, to, req)
}

// The admin API's types the operations report in.
type (
	OpStatus        = adminapi.OpStatus
	TransferStatus  = adminapi.TransferStatus
	TableStatus     = adminapi.TableStatus
	CleanupRequest  = adminapi.CleanupRequest
	CleanupResult   = adminapi.CleanupResult
	ImportRequest   = adminapi.ImportRequest
	ImportedSSTable = adminapi.ImportedSSTable
	RepairRequest   = adminapi.RepairRequest
	RepairResult    = adminapi.RepairResult
	RebuildRequest  = adminapi.RebuildRequest
	RingView        = adminapi.RingView
)
