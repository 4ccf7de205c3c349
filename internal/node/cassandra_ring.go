package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
)

// cassandraRing is the ring of the live Cassandra cluster the sidecar sits in, as an
// ops.Ring: one read of it (internal/cassandra's Snapshot, converted to a membership/ring
// Ring whose members are named by host id) and the sidecars gossip shows up, found by the
// host id they announce (matchSidecar). Settled makes the read; the other methods answer from
// it. The operations run over it as over sluice's own ring; none of them changes it.
type cassandraRing struct {
	s       *sidecar
	self    string                 // this sidecar's member name
	members func() []gossip.Member // gossip's members, read with the ring
	log     zerolog.Logger
	// as, when set, is the host id of a dead node this ring plays the part of (a replace):
	// Self is it, Keyspaces and Peer answer for it (its data comes to this sidecar), and it
	// must not be UP. readRing, when set, reads the ring instead of the sidecar's own node;
	// remote says that node is not this sidecar's (then it is a source like any other node,
	// served by its own sidecar).
	as       string
	readRing func(ctx context.Context) (cassandra.Snapshot, string, error)
	remote   bool

	mu          sync.Mutex
	snap        cassandra.Snapshot
	local       cassandra.Node
	up          map[string]string // host id → the member name of its sidecar, up
	unavailable map[string]string // host id → why it cannot be a source
}

var _ ops.Ring = (*cassandraRing)(nil)

// Settled reads the ring afresh; a stale read (Cassandra does not answer) is refused.
func (r *cassandraRing) Settled(ctx context.Context) (ring.Ring, error) {
	read := r.readRing
	if read == nil {
		read = r.s.snapshot
	}
	snap, stale, err := read(ctx)
	if err != nil {
		return ring.Ring{}, err
	}
	if stale != "" {
		return ring.Ring{}, fmt.Errorf("%w: %s", ErrNoRing, stale)
	}
	local, ok := snap.LocalNode()
	if !ok {
		return ring.Ring{}, errors.New("the ring read has no local node")
	}
	reader := local
	if r.as != "" {
		if local, ok = snap.Node(r.as); !ok {
			return ring.Ring{}, fmt.Errorf("%w: the ring read from %s has no node %s", ErrBadState, reader.Address, r.as)
		}
		if local.State == cassandra.Up {
			return ring.Ring{}, fmt.Errorf("%w: Cassandra node %s (%s) is UP in the ring read from %s: only a dead node is replaced", ErrBadState, local.Address, local.HostID, reader.Address)
		}
		if r.remote {
			snap = withoutLocal(snap)
		}
	}
	rg, _, err := snap.Ring()
	if err != nil {
		return ring.Ring{}, err
	}
	if _, ok := rg.Member(local.HostID); !ok {
		return ring.Ring{}, fmt.Errorf("%w: the local Cassandra node %s owns no tokens", ErrBadState, local.HostID)
	}
	up, unavailable := upSidecars(snap, r.self, r.members())
	if r.as != "" && !r.remote && reader.State == cassandra.Up {
		up[reader.HostID] = r.self // this sidecar's own node is a source like the others
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snap, r.local, r.up, r.unavailable = snap, local, up, unavailable
	return rg, nil
}

// withoutLocal is snap with no node marked local: read from a node this sidecar does not sit
// beside, every node's sidecar is found by the host id it announces.
func withoutLocal(snap cassandra.Snapshot) cassandra.Snapshot {
	snap.Nodes = slices.Clone(snap.Nodes)
	for i := range snap.Nodes {
		snap.Nodes[i].Local = false
	}
	return snap
}

// read is the last read; ok is false before Settled.
func (r *cassandraRing) read() (cassandra.Snapshot, cassandra.Node, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snap, r.local, r.local.HostID != ""
}

// Self is the local Cassandra node's host id.
func (r *cassandraRing) Self() string {
	_, local, _ := r.read()
	return local.HostID
}

// Keyspaces are the schema's keyspaces sluice can place and that replicate to the local DC;
// system keyspaces never (nodetool rebuild's replicated ones, system_auth,
// system_distributed and system_traces, are left to Cassandra's streaming). Others are left
// out and logged; only's problems are the request's.
func (r *cassandraRing) Keyspaces(only string) ([]ops.Keyspace, error) {
	snap, local, ok := r.read()
	if !ok {
		return nil, errors.New("the Cassandra ring has not been read")
	}
	var kss []string
	if only != "" {
		if isSystemKeyspace(only) {
			return nil, badRequest{fmt.Errorf("rebuild: %s is a system keyspace", only)}
		}
		if _, ok := snap.Keyspace(only); !ok {
			return nil, badRequest{fmt.Errorf("rebuild: the Cassandra node has no keyspace %q", only)}
		}
		kss = []string{only}
	} else {
		for _, k := range snap.Keyspaces {
			if !isSystemKeyspace(k.Name) {
				kss = append(kss, k.Name)
			}
		}
	}
	var out []ops.Keyspace
	for _, ks := range kss {
		s, err := snap.Strategy(ks)
		if err == nil {
			if nts, ok := s.(ring.NetworkTopologyStrategy); ok && nts.RF[local.DC] == 0 {
				err = fmt.Errorf("no replication to the local DC %s", local.DC)
			}
		}
		if err != nil {
			if only != "" {
				return nil, badRequest{fmt.Errorf("rebuild: keyspace %s: %w", ks, err)}
			}
			r.log.Info().Str("keyspace", ks+": "+err.Error()).Msg("keyspace not rebuilt")
			continue
		}
		out = append(out, ops.Keyspace{Name: ks, Strategy: s})
	}
	return out, nil
}

// Down is every other node that is not UP or has no sidecar up.
func (r *cassandraRing) Down() []ops.Unavailable {
	snap, _, _ := r.read()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ops.Unavailable
	for _, n := range snap.Nodes {
		if why, ok := r.unavailable[n.HostID]; ok {
			out = append(out, ops.Unavailable{Name: n.HostID, DC: n.DC, Where: n.Address, Why: why})
		}
	}
	return out
}

// Peer is the sidecar of host id name: this node for the local one.
func (r *cassandraRing) Peer(name string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name == r.local.HostID {
		return r.self, nil
	}
	if m, ok := r.up[name]; ok {
		return m, nil
	}
	return "", fmt.Errorf("Cassandra node %s has no sidecar up", name)
}

// Tables are the schema's tables of keyspace the source holds live sstables of under the
// schema's id.
func (r *cassandraRing) Tables(keyspace string, held []TableStatus) []TableStatus {
	snap, _, _ := r.read()
	var out []TableStatus
	for _, tb := range snap.Tables {
		if tb.Keyspace == keyspace && holdsSSTables(held, tb) {
			out = append(out, TableStatus{Keyspace: tb.Keyspace, Table: tb.Name, ID: tb.ID})
		}
	}
	return out
}

// holdsSSTables reports whether held (a source's tables) has live sstables of tb under its
// schema id.
func holdsSSTables(held []TableStatus, tb cassandra.Table) bool {
	for _, h := range held {
		if h.Keyspace == tb.Keyspace && h.Table == tb.Name && h.ID == tb.ID && h.SSTables > 0 {
			return true
		}
	}
	return false
}

// systemKeyspaces are Cassandra's own keyspaces: a rebuild or a load never touches them.
var systemKeyspaces = []string{"system", "system_schema", "system_auth", "system_distributed", "system_traces",
	"system_views", "system_virtual_schema", "system_cluster_metadata"}

func isSystemKeyspace(ks string) bool { return slices.Contains(systemKeyspaces, ks) }

// upSidecars maps the host id of every Cassandra node other than the local one that is UP and
// whose sidecar is up (matchSidecar: a proven, alive gossip member announcing its host id)
// to that sidecar's member name. The other nodes are in the second map with the reason.
func upSidecars(snap cassandra.Snapshot, self string, members []gossip.Member) (up, unavailable map[string]string) {
	up, unavailable = map[string]string{}, map[string]string{}
	for _, cn := range snap.Nodes {
		if cn.Local {
			continue
		}
		state, name := matchSidecar(cn, self, true, members)
		switch {
		case cn.State != cassandra.Up:
			unavailable[cn.HostID] = "Cassandra " + string(cn.State)
		case state != adminapi.SidecarUp:
			unavailable[cn.HostID] = "sidecar " + state
		default:
			up[cn.HostID] = name
		}
	}
	return up, unavailable
}
