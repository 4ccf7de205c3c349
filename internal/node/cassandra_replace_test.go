package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
)

// replaceRing is rebuildRing playing the dead node dead's part, the ring read from the
// sidecar's own node (remote false) or another one.
func replaceRing(snap cassandra.Snapshot, members []gossip.Member, dead string, remote bool) *cassandraRing {
	r := rebuildRing(snap, members)
	r.as, r.remote = dead, remote
	return r
}

// A replace plans every range the dead node replicated, each from another live replica whose
// sidecar is up (the sidecar's own node included), all to this sidecar; a keyspace whose
// ranges have no other replica fails it by name, and a node that is UP is never replaced.
func TestCassandraReplacePlan(t *testing.T) {
	snap := rebuildSnapshot()
	r := replaceRing(snap, rebuildMembers(), hostC, false)
	p, err := rebuildPlan(r, "", "both")
	if err != nil {
		t.Fatal(err)
	}
	rg, _, _ := snap.Ring()
	st, _ := snap.Strategy("both")
	if got, want := covered(p, "both"), ring.ReplicaRanges(rg, st, hostC); got.String() != want.String() {
		t.Errorf("the plan covers %v, the dead node replicated %v", got, want)
	}
	for _, pl := range p {
		for _, tr := range pl.Transfers {
			if tr.To != hostC || !slices.Contains([]string{hostA, hostB, hostL}, tr.From) {
				t.Errorf("transfer %+v", tr)
			}
		}
	}
	for host, want := range map[string]string{hostC: "self", hostL: "self", hostA: "sa"} {
		if peer, err := r.Peer(host); peer != want || err != nil {
			t.Errorf("peer of %s: %q %v, want %q", host, peer, err, want)
		}
	}
	// dc1only's ranges of the dead node are on no other node: the replace fails, naming them.
	if _, err := rebuildPlan(r, "", ""); !errors.Is(err, ring.ErrNoSource) || !strings.Contains(err.Error(), "keyspace dc1only") {
		t.Errorf("every keyspace: %v", err)
	}
	// Read from another node: the local node is a source served by its own sidecar.
	members := append(rebuildMembers()[:3], gossip.Member{Name: "sl", Meta: gossip.NodeMeta{CassandraHostID: hostL, StreamAddr: "127.0.0.1:1"},
		Liveness: gossip.StateAlive, Identity: gossip.IdentityProven})
	rr := replaceRing(snap, members, hostC, true)
	if _, err := rebuildPlan(rr, "", "both"); err != nil {
		t.Fatal(err)
	}
	if peer, _ := rr.Peer(hostL); peer != "sl" {
		t.Errorf("read remotely, the node read from is served by %q", peer)
	}
	// Refusals: an UP node, an unknown one.
	for _, dead := range []string{hostA, "aaaaaaaa-0000-0000-0000-00000000ffff"} {
		if _, err := rebuildPlan(replaceRing(snap, rebuildMembers(), dead, false), "", "both"); !errors.Is(err, ErrBadState) {
			t.Errorf("replace %s: %v", dead, err)
		}
	}
	// The dead node by address or host id; UP or unknown refused.
	for _, name := range []string{"10.0.0.3", hostC, strings.ToUpper(hostC)} {
		if n, err := findDead(snap, name); err != nil || n.HostID != hostC {
			t.Errorf("findDead %s: %+v %v", name, n, err)
		}
	}
	for _, name := range []string{"10.0.0.1", "10.0.0.9", "10.9.9.9"} {
		if _, err := findDead(snap, name); err == nil {
			t.Errorf("findDead %s accepted", name)
		}
	}
}

func TestCassandraReplaceRequest(t *testing.T) {
	live := []string{"/var/lib/cassandra/data"}
	ok := adminapi.CassandraReplaceRequest{Dead: "10.0.0.3", Into: "/srv/replacement/data", Native: "10.0.0.1:9042"}
	if err := checkReplaceRequest(ok, live); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []adminapi.CassandraReplaceRequest{
		{Into: "/srv/x"},
		{Dead: "d", Into: "relative"},
		{Dead: "d", Into: "/var/lib/cassandra/data"},
		{Dead: "d", Into: "/var/lib/cassandra/data/ks"},
		{Dead: "d", Into: "/var/lib"},
		{Dead: "d", Into: "/srv/x", Native: "nohost"},
		{Dead: "d", Into: "/srv/x", Keyspace: "system_auth"},
	} {
		if err := checkReplaceRequest(bad, live); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// Received sstables are verified, then moved into the table directory under fresh
// generations beside what is there; a damaged one stops the transfer before anything moves.
// What an interrupted replace leaves (a scratch directory, a component set without Data.db)
// is swept; complete sstables stay.
func TestInstallReplaced(t *testing.T) {
	into := t.TempDir()
	table := filepath.Join(into, "ks", "t-"+sidecarTableID)
	scratch := filepath.Join(into, ReplaceScratchPrefix+"x", "1")
	for seed := uint64(1); seed <= 2; seed++ {
		generate(t, scratch, "ks", "t", seed)
	}
	dir := gen.TableDir(scratch, "ks", "t")
	existing := filepath.Join(into, "existing")
	generate(t, existing, "ks", "t", 9)
	if err := os.MkdirAll(table, 0o755); err != nil {
		t.Fatal(err)
	}
	ex, _ := catalog.ListLive(gen.TableDir(existing, "ks", "t"))
	for _, c := range ex[0].Comps {
		if err := os.Rename(ex[0].Desc.Path(c), filepath.Join(table, ex[0].Desc.Filename(c))); err != nil {
			t.Fatal(err)
		}
	}

	bad := errors.New("chunk 3: checksum mismatch")
	calls := 0
	if _, err := installReplaced(context.Background(), dir, table, func(string) error {
		if calls++; calls == 2 {
			return bad
		}
		return nil
	}); !errors.Is(err, cassandra.ErrVerify) {
		t.Fatalf("a damaged sstable: %v", err)
	}
	if ls, _ := catalog.ListLive(table); len(ls) != 1 {
		t.Fatalf("after a refusal the table holds %d sstables", len(ls))
	}
	moved, err := installReplaced(context.Background(), dir, table, func(string) error { return nil })
	if err != nil || len(moved) != 2 {
		t.Fatalf("%+v %v", moved, err)
	}
	ls, _ := catalog.ListLive(table)
	if len(ls) != 3 {
		t.Fatalf("the table holds %d sstables", len(ls))
	}
	var gens []string
	for _, s := range ls {
		gens = append(gens, s.Desc.ID)
	}
	if slices.Sort(gens); len(slices.Compact(gens)) != 3 {
		t.Errorf("generations %v", gens)
	}
	if left, _ := catalog.ListLive(dir); len(left) != 0 {
		t.Errorf("the scratch directory keeps %d sstables", len(left))
	}

	// An interrupted move: every component of a new generation but Data.db.
	orphan := descriptor.Descriptor{Dir: table, Version: ls[0].Desc.Version, ID: "77"}
	for _, c := range ls[0].Comps {
		if c == descriptor.Data {
			continue
		}
		if err := os.Link(ls[0].Desc.Path(c), orphan.Path(c)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := sweepReplaceDir(into)
	if err != nil || n != 1 {
		t.Fatalf("swept %d scratch directories: %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(into, ReplaceScratchPrefix+"x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the scratch directory stays: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(table, "*-77-*")); len(m) != 0 {
		t.Errorf("orphans stay: %v", m)
	}
	if ls, _ := catalog.ListLive(table); len(ls) != 3 {
		t.Errorf("the sweep left %d complete sstables of 3", len(ls))
	}
}

func TestCassandraReplaceRefusals(t *testing.T) {
	ring := &fakeRing{snap: sidecarSnapshot(), changes: make(chan struct{}, 1)}
	r, _ := sidecarNode(t, ring)
	var st adminapi.OpStatus
	// Without gossip there are no other sidecars to fetch from.
	if code := call(t, "POST", r.url("/v1/cassandra/replace"), `{"dead":"127.0.0.2","into":"/srv/x"}`, &st); code != 409 {
		t.Errorf("a replace without gossip: %d", code)
	}
	if code := call(t, "POST", r.url("/v1/cassandra/replace"), `{"dead":"127.0.0.2","into":"/srv/x","bogus":1}`, &st); code != 400 {
		t.Errorf("an unknown field: %d", code)
	}
}
