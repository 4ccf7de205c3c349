package node

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// The plan of a sidecar's rebuild (cassandra_rebuild.go): pure, from one read of the Cassandra
// ring and the sidecars gossip shows up.

// cassRebuildJob is every range one source sends the local node for one keyspace.
type cassRebuildJob struct {
	Keyspace string
	Source   string // the source's Cassandra host id
	Sidecar  string // its sidecar's gossip member name
	Ranges   token.RangeSet
}

// cassRebuildPlan is a sidecar's rebuild: per (keyspace, source) the ranges to fetch, and the
// keyspaces left out with the reason.
type cassRebuildPlan struct {
	Local   string // the local node's host id
	Jobs    []cassRebuildJob
	Skipped []string // "keyspace: why"
}

// systemKeyspaces are Cassandra's own keyspaces: a rebuild never fetches them (nodetool
// rebuild's replicated ones, system_auth, system_distributed and system_traces, are left to
// Cassandra's streaming).
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

// planCassandraRebuild is what the local node of snap fetches to hold every range it
// replicates (ring.RebuildPlan over the Cassandra ring, nodes named by host id): for each
// keyspace with replication to the local DC (or just keyspace, when set; system keyspaces
// never), each range from one other replica in sourceDC (when set) that is UP and has a
// sidecar in sidecars (host id → member name, as upSidecars). unavailable (host id → why)
// only words the error of a range without a source.
func planCassandraRebuild(snap cassandra.Snapshot, sidecars, unavailable map[string]string, sourceDC, keyspace string) (cassRebuildPlan, error) {
	local, ok := snap.LocalNode()
	if !ok {
		return cassRebuildPlan{}, errors.New("the ring read has no local node")
	}
	plan := cassRebuildPlan{Local: local.HostID}
	r, _, err := snap.Ring()
	if err != nil {
		return cassRebuildPlan{}, err
	}
	if _, ok := r.Member(local.HostID); !ok {
		return cassRebuildPlan{}, fmt.Errorf("%w: the local Cassandra node %s owns no tokens", ErrBadState, local.HostID)
	}
	if sourceDC != "" && !slices.ContainsFunc(snap.Nodes, func(n cassandra.Node) bool { return n.DC == sourceDC }) {
		return cassRebuildPlan{}, badRequest{fmt.Errorf("rebuild: no Cassandra node in DC %q", sourceDC)}
	}
	var down []string
	for _, n := range snap.Nodes {
		if _, ok := sidecars[n.HostID]; !ok && !n.Local {
			down = append(down, n.HostID)
		}
	}
	var kss []string
	if keyspace != "" {
		if isSystemKeyspace(keyspace) {
			return cassRebuildPlan{}, badRequest{fmt.Errorf("rebuild: %s is a system keyspace", keyspace)}
		}
		if _, ok := snap.Keyspace(keyspace); !ok {
			return cassRebuildPlan{}, badRequest{fmt.Errorf("rebuild: the Cassandra node has no keyspace %q", keyspace)}
		}
		kss = []string{keyspace}
	} else {
		for _, k := range snap.Keyspaces {
			if !isSystemKeyspace(k.Name) {
				kss = append(kss, k.Name)
			}
		}
	}
	for _, ks := range kss {
		s, err := snap.Strategy(ks)
		if err == nil {
			if nts, ok := s.(ring.NetworkTopologyStrategy); ok && nts.RF[local.DC] == 0 {
				err = fmt.Errorf("no replication to the local DC %s", local.DC)
			}
		}
		if err != nil {
			if keyspace != "" {
				return cassRebuildPlan{}, badRequest{fmt.Errorf("rebuild: keyspace %s: %w", ks, err)}
			}
			plan.Skipped = append(plan.Skipped, ks+": "+err.Error())
			continue
		}
		ts, err := ring.RebuildPlan(r, s, local.HostID, ring.RebuildOptions{SourceDC: sourceDC, Down: down})
		if err != nil {
			return cassRebuildPlan{}, fmt.Errorf("keyspace %s: %w%s", ks, err, unavailableNote(unavailable, sourceDC, snap))
		}
		idx := map[string]int{}
		for _, t := range ts {
			i, ok := idx[t.From]
			if !ok {
				i = len(plan.Jobs)
				idx[t.From] = i
				plan.Jobs = append(plan.Jobs, cassRebuildJob{Keyspace: ks, Source: t.From, Sidecar: sidecars[t.From]})
			}
			plan.Jobs[i].Ranges = append(plan.Jobs[i].Ranges, t.Range)
		}
	}
	return plan, nil
}

// unavailableNote lists the nodes that could not be sources (in sourceDC when set).
func unavailableNote(unavailable map[string]string, sourceDC string, snap cassandra.Snapshot) string {
	var out []string
	for _, n := range snap.Nodes {
		why, ok := unavailable[n.HostID]
		if ok && (sourceDC == "" || n.DC == sourceDC) {
			out = append(out, fmt.Sprintf("%s (%s, %s): %s", n.HostID, n.Address, n.DC, why))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (not sources: " + strings.Join(out, "; ") + ")"
}
