package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

const (
	hostA = "aaaaaaaa-0000-0000-0000-000000000001" // dc1, sidecar up
	hostB = "aaaaaaaa-0000-0000-0000-000000000002" // dc1, sidecar up
	hostC = "aaaaaaaa-0000-0000-0000-000000000003" // dc1, Cassandra DOWN
	hostL = "aaaaaaaa-0000-0000-0000-000000000009" // dc2, local
	hostM = "aaaaaaaa-0000-0000-0000-000000000008" // dc3, sidecar missing
)

func nts(dcs ...string) map[string]string {
	m := map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy"}
	for i := 0; i+1 < len(dcs); i += 2 {
		m[dcs[i]] = dcs[i+1]
	}
	return m
}

// rebuildSnapshot: dc1 of three nodes (one down), the local node alone in dc2, one dc3 node
// without a sidecar.
func rebuildSnapshot() cassandra.Snapshot {
	return cassandra.Snapshot{ClusterName: "c", Partitioner: cassandra.Murmur3Partitioner,
		Nodes: []cassandra.Node{
			{HostID: hostA, Address: "10.0.0.1", DC: "dc1", Rack: "r1", Tokens: []int64{-6000, 100, 7000}, State: cassandra.Up},
			{HostID: hostB, Address: "10.0.0.2", DC: "dc1", Rack: "r1", Tokens: []int64{-3000, 3000}, State: cassandra.Up},
			{HostID: hostC, Address: "10.0.0.3", DC: "dc1", Rack: "r1", Tokens: []int64{-100, 5000}, State: cassandra.Down},
			{HostID: hostM, Address: "10.0.0.8", DC: "dc3", Rack: "r1", Tokens: []int64{42}, State: cassandra.Up},
			{HostID: hostL, Address: "10.0.0.9", DC: "dc2", Rack: "r1", Tokens: []int64{-5000, 0, 4000}, State: cassandra.Up, Local: true},
		},
		Keyspaces: []cassandra.Keyspace{
			{Name: "both", Replication: nts("dc1", "2", "dc2", "1")},
			{Name: "dc1only", Replication: nts("dc1", "1")},
			{Name: "simple", Replication: map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "4"}},
			{Name: "system", Replication: map[string]string{"class": "org.apache.cassandra.locator.LocalStrategy"}},
			{Name: "system_auth", Replication: map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "1"}},
		},
		Tables: []cassandra.Table{{Keyspace: "both", Name: "t", ID: sidecarTableID}},
	}
}

func rebuildMembers() []gossip.Member {
	m := func(name, host string) gossip.Member {
		return gossip.Member{Name: name, Meta: gossip.NodeMeta{CassandraHostID: host, StreamAddr: "127.0.0.1:1"},
			Liveness: gossip.StateAlive, Identity: gossip.IdentityProven}
	}
	return []gossip.Member{m("sa", hostA), m("sb", hostB), m("sc", hostC), m("self", hostL)}
}

// rebuildRing is the Cassandra ring of snap as an ops.Ring, gossip showing members.
func rebuildRing(snap cassandra.Snapshot, members []gossip.Member) *cassandraRing {
	s := &sidecar{cfg: cassandra.Config{Timeout: time.Second}, log: zerolog.Nop(), dialled: make(chan struct{})}
	close(s.dialled)
	s.reader = &fakeRing{snap: snap, changes: make(chan struct{})}
	return &cassandraRing{s: s, self: "self", members: func() []gossip.Member { return members }, log: zerolog.Nop()}
}

// rebuildPlan is the plan of sluice's rebuild (ops) over the Cassandra ring r.
func rebuildPlan(r *cassandraRing, sourceDC, keyspace string) ([]ops.Plan, error) {
	c := &ops.Cluster{Ring: r}
	return c.RebuildPlans(context.Background(), RebuildRequest{SourceDC: sourceDC, Keyspace: keyspace})
}

// covered is the union of the plan's ranges for keyspace, normalized.
func covered(plans []ops.Plan, keyspace string) token.RangeSet {
	var all token.RangeSet
	for _, p := range plans {
		if p.Keyspace == keyspace {
			for _, t := range p.Transfers {
				all = append(all, t.Range)
			}
		}
	}
	return ring.Normalize(all)
}

// replicated is what the local node replicates of keyspace, normalized.
func replicated(t *testing.T, snap cassandra.Snapshot, keyspace string) token.RangeSet {
	t.Helper()
	r, _, err := snap.Ring()
	if err != nil {
		t.Fatal(err)
	}
	s, err := snap.Strategy(keyspace)
	if err != nil {
		t.Fatal(err)
	}
	var out token.RangeSet
	for _, rr := range ring.RangeOwners(r, s) {
		if slices.ContainsFunc(rr.Replicas, func(n ring.Node) bool { return n.Name == hostL }) {
			out = append(out, rr.Range)
		}
	}
	return ring.Normalize(out)
}

// The sidecar's rebuild is sluice's rebuild over the Cassandra ring: every range the local
// node replicates, from the UP nodes whose sidecars are up, for the keyspaces that replicate
// to the local DC, refusing what it cannot place and naming the nodes that could not be
// sources.
func TestCassandraRebuildPlan(t *testing.T) {
	snap := rebuildSnapshot()
	up, unavailable := upSidecars(snap, "self", rebuildMembers())
	if len(up) != 2 || up[hostA] != "sa" || up[hostB] != "sb" {
		t.Fatalf("up sidecars %v", up)
	}
	if unavailable[hostC] != "Cassandra DOWN" || unavailable[hostM] != "sidecar "+adminapi.SidecarMissing {
		t.Fatalf("unavailable %v", unavailable)
	}

	r := rebuildRing(snap, rebuildMembers())
	p, err := rebuildPlan(r, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Self() != hostL {
		t.Errorf("local %s", r.Self())
	}
	// both and simple are rebuilt; dc1only (no dc2 replication) and the system keyspaces not.
	var kss []string
	for _, pl := range p {
		kss = append(kss, pl.Keyspace)
	}
	if !slices.Equal(kss, []string{"both", "simple"}) {
		t.Errorf("keyspaces %v", kss)
	}
	for _, ks := range []string{"both", "simple"} {
		got, want := covered(p, ks), replicated(t, snap, ks)
		if got.String() != want.String() {
			t.Errorf("%s: the plan covers %v, the local node replicates %v", ks, got, want)
		}
	}
	var sources []string
	for _, pl := range p {
		for _, tr := range pl.Transfers {
			peer, err := r.Peer(tr.From)
			if tr.From != hostA && tr.From != hostB || tr.To != hostL || err != nil || peer != up[tr.From] {
				t.Errorf("transfer %+v: from sidecar %q, %v", tr, peer, err)
			}
			if pl.Keyspace == "both" && !slices.Contains(sources, peer) {
				sources = append(sources, peer)
			}
		}
	}
	// dc2 replicates every range of "both" once: from dc1's two live nodes, both used.
	if got := covered(p, "both").String(); got != "(-9223372036854775808,-9223372036854775808]" {
		t.Errorf("both: %s", got)
	}
	if slices.Sort(sources); !slices.Equal(sources, []string{"sa", "sb"}) {
		t.Errorf("both: sources %v", sources)
	}
	// The local node's sidecar is this node; a node without a sidecar up has none.
	if peer, err := r.Peer(hostL); peer != "self" || err != nil {
		t.Errorf("the local node's sidecar: %q, %v", peer, err)
	}
	if _, err := r.Peer(hostC); err == nil {
		t.Error("a DOWN node has a sidecar to fetch from")
	}
	// A source's tables are streamed only when the schema has them, under its id, with sstables.
	held := []TableStatus{{Keyspace: "both", Table: "t", ID: sidecarTableID, SSTables: 1},
		{Keyspace: "both", Table: "old", ID: sidecarTableID, SSTables: 1}}
	if got := r.Tables("both", held); len(got) != 1 || got[0].Table != "t" || got[0].ID != sidecarTableID {
		t.Errorf("tables to stream of %+v: %+v", held, got)
	}
	for _, h := range []TableStatus{{Keyspace: "both", Table: "t", ID: "ffffffffffffffffffffffffffffffff", SSTables: 1},
		{Keyspace: "both", Table: "t", ID: sidecarTableID}} {
		if got := r.Tables("both", []TableStatus{h}); len(got) != 0 {
			t.Errorf("streamed %+v from a source holding %+v", got, h)
		}
	}
	// From dc1 only: the same ranges of "both".
	pdc1, err := rebuildPlan(r, "dc1", "both")
	if err != nil || covered(pdc1, "both").String() != covered(p, "both").String() {
		t.Errorf("from dc1: %+v %v", pdc1, err)
	}

	// One keyspace.
	p1, err := rebuildPlan(r, "", "both")
	if err != nil || len(p1) != 1 || covered(p1, "both").String() != covered(p, "both").String() {
		t.Errorf("keyspace both: %+v %v", p1, err)
	}

	// Refusals.
	for _, tc := range []struct{ dc, ks, want string }{
		{"", "dc1only", "no replication to the local DC"},
		{"", "system_auth", "system keyspace"},
		{"", "nope", "no keyspace"},
		{"dc9", "", "no node of the ring is in DC"},
	} {
		_, err := rebuildPlan(r, tc.dc, tc.ks)
		if !isBadRequest(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: %v, want a bad request saying %q", tc.dc, tc.ks, err, tc.want)
		}
	}

	// dc3's only node has no sidecar: a rebuild from dc3 has no source and says why.
	_, err = rebuildPlan(r, "dc3", "")
	if !errors.Is(err, ring.ErrNoSource) || !strings.Contains(err.Error(), hostM+" (10.0.0.8, dc3): sidecar missing") {
		t.Errorf("dc3: %v", err)
	}
	// Without the sidecars, dc1 has no source either.
	_, err = rebuildPlan(rebuildRing(snap, nil), "dc1", "both")
	if !errors.Is(err, ring.ErrNoSource) || !strings.Contains(err.Error(), "Cassandra DOWN") {
		t.Errorf("no sidecars: %v", err)
	}
}

func TestCassandraRebuildRefusals(t *testing.T) {
	ring := &fakeRing{snap: sidecarSnapshot(), changes: make(chan struct{}, 1)}
	r, _ := sidecarNode(t, ring)
	// Without gossip there are no other sidecars to fetch from.
	var st adminapi.OpStatus
	if code := call(t, "POST", r.url("/v1/cassandra/rebuild"), `{"source_dc":"dc1"}`, &st); code != 409 {
		t.Errorf("a rebuild without gossip: %d", code)
	}
	if code := call(t, "POST", r.url("/v1/cassandra/rebuild"), `{"bogus":1}`, &st); code != 400 {
		t.Errorf("an unknown field: %d", code)
	}
}
