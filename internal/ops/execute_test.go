package ops

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// fakePeers stands in for the network: each member's tables, and a fetch that fails for the
// targets in fail.
type fakePeers struct {
	mu       sync.Mutex
	tabs     map[string][]TableStatus
	fail     map[string]bool // receivers whose fetches fail
	failFrom map[string]bool // sources whose fetches fail
	fetched  []string        // "to<-source ks.table ranges"
}

func (f *fakePeers) Tables(_ context.Context, name, keyspace string) ([]TableStatus, error) {
	var out []TableStatus
	for _, t := range f.tabs[name] {
		if t.Keyspace == keyspace {
			out = append(out, t)
		}
	}
	return out, nil
}

func (f *fakePeers) Fetch(_ context.Context, to string, req FetchOpRequest) (FetchOpResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail[to] {
		return FetchOpResponse{}, fmt.Errorf("%s: disk full", to)
	}
	if f.failFrom[req.Source] {
		return FetchOpResponse{}, fmt.Errorf("%s: connection refused", req.Source)
	}
	f.fetched = append(f.fetched, fmt.Sprintf("%s<-%s %s.%s %s", to, req.Source, req.Keyspace, req.Table, req.Ranges))
	return FetchOpResponse{SSTables: []string{"x"}, BytesReceived: 10}, nil
}

var errNoNetwork = errors.New("no network in this test")

func (f *fakePeers) Proven(string) error { return nil }
func (f *fakePeers) RingView(context.Context, string) (RingView, error) {
	return RingView{}, errNoNetwork
}
func (f *fakePeers) Trees(context.Context, string, TreeRequest) (TreeResponse, error) {
	return TreeResponse{}, errNoNetwork
}
func (f *fakePeers) Digests(context.Context, string, DigestRequest) (DigestResponse, error) {
	return DigestResponse{}, errNoNetwork
}

// fakeRing is a ring of fixed members: peers maps a member to the sluice member that serves
// it (itself when absent), down lists those that cannot be sources, tables filters what a
// source holds (all when nil).
type fakeRing struct {
	self   string
	r      ring.Ring
	ks     []Keyspace
	down   []Unavailable
	peers  map[string]string
	tables func(keyspace string, held []TableStatus) []TableStatus
}

func (f *fakeRing) Self() string                               { return f.self }
func (f *fakeRing) Settled(context.Context) (ring.Ring, error) { return f.r, nil }
func (f *fakeRing) Keyspaces(only string) ([]Keyspace, error)  { return f.ks, nil }
func (f *fakeRing) Down() []Unavailable                        { return f.down }
func (f *fakeRing) Tables(ks string, held []TableStatus) []TableStatus {
	if f.tables == nil {
		return held
	}
	return f.tables(ks, held)
}
func (f *fakeRing) Peer(name string) (string, error) {
	if p, ok := f.peers[name]; ok {
		return p, nil
	}
	return name, nil
}

func rng(t *testing.T, s string) token.Range {
	rs, err := token.ParseRanges(token.Murmur3, s)
	if err != nil || len(rs) != 1 {
		t.Fatal(s, err)
	}
	return rs[0]
}

// A stream plan runs against the peers interface alone: one fetch per (source, target, table)
// with the pair's ranges together; a failed target fails the operation and names it; a
// retry fetches only what did not complete (the journal), and a success clears the journal.
func TestAStreamPlanRunsAgainstPeersWithoutANetwork(t *testing.T) {
	f := &fakePeers{
		tabs: map[string][]TableStatus{
			"a": {{Keyspace: "ks", Table: "t1", ID: "1"}, {Keyspace: "ks", Table: "t2", ID: "2"}, {Keyspace: "other", Table: "x"}},
			"b": {{Keyspace: "ks", Table: "t1", ID: "1"}},
		},
		fail: map[string]bool{"c": true},
	}
	c := &Cluster{Ring: &fakeRing{self: "me"}, Peers: f, Journal: filepath.Join(t.TempDir(), JournalFile)}
	plans := []Plan{{Keyspace: "ks", Transfers: []ring.Transfer{
		{From: "a", To: "me", Range: rng(t, "(0,10]")},
		{From: "a", To: "me", Range: rng(t, "(20,30]")},
		{From: "b", To: "c", Range: rng(t, "(40,50]")},
	}}}
	o := NewOp(&OpStatus{Kind: adminapi.OpBootstrap})
	err := c.execute(context.Background(), o, plans)
	if err == nil || !strings.Contains(err.Error(), "ks.t1 b->c") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("execute with a failing target: %v", err)
	}
	want := []string{"me<-a ks.t1 (0,10],(20,30]", "me<-a ks.t2 (0,10],(20,30]"}
	if fmt.Sprint(f.fetched) != fmt.Sprint(want) {
		t.Fatalf("fetched %q, want %q", f.fetched, want)
	}
	var failed, done int
	for _, ts := range o.Status().Transfers {
		switch ts.State {
		case adminapi.OpFailed:
			failed++
		case adminapi.OpComplete:
			done++
		}
	}
	if failed != 1 || done != 2 {
		t.Fatalf("transfers %+v", o.Status().Transfers)
	}

	// The retry: c has room now; a's tables are not fetched again.
	f.fail, f.fetched = nil, nil
	if err := c.execute(context.Background(), NewOp(&OpStatus{Kind: adminapi.OpBootstrap}), plans); err != nil {
		t.Fatal(err)
	}
	if want := []string{"c<-b ks.t1 (40,50]"}; fmt.Sprint(f.fetched) != fmt.Sprint(want) {
		t.Fatalf("retry fetched %q, want %q", f.fetched, want)
	}
	// The journal is cleared: a later operation of the same plan fetches everything again.
	f.fetched = nil
	if err := c.execute(context.Background(), NewOp(&OpStatus{Kind: adminapi.OpBootstrap}), plans); err != nil {
		t.Fatal(err)
	}
	if len(f.fetched) != 3 {
		t.Fatalf("after a completed operation, fetched %q", f.fetched)
	}
}

// recordInstall is an Installer that records what it lands and fails the tables in fail.
type recordInstall struct {
	mu   sync.Mutex
	got  []string
	fail map[string]bool
}

func (r *recordInstall) Install(_ context.Context, o *Op, to string, req FetchOpRequest) (FetchOpResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail[req.Table] {
		return FetchOpResponse{}, errors.New("nodetool import failed")
	}
	r.got = append(r.got, fmt.Sprintf("%s<-%s %s.%s-%s %s", to, req.Source, req.Keyspace, req.Table, req.TableID, req.Ranges))
	o.Update(func(s *OpStatus) {
		s.Imported = append(s.Imported, ImportedSSTable{Source: req.Source, SSTable: req.Table})
	})
	return FetchOpResponse{SSTables: []string{"x"}}, nil
}

// The rebuild does not know which ring it runs on: over a ring whose members are served by
// other sluice members (as Cassandra's host ids are by their sidecars), every range this node
// replicates is asked of the serving peer of a live replica, only the tables the ring keeps,
// each landed by the ring's Installer, never by a fetch into a live directory; members that
// cannot be sources are not asked, and a plan without one names them.
func TestARebuildRunsOverAnyRing(t *testing.T) {
	tok := func(v int64) token.Token { return token.Token{Kind: token.KindMurmur3, Long: v} }
	mk := func(name, dc string, ts ...int64) ring.Member {
		m := ring.Member{Node: ring.Node{Name: name, DC: dc, Rack: "r1"}, State: ring.Normal}
		for _, v := range ts {
			m.Tokens = append(m.Tokens, tok(v))
		}
		return m
	}
	r, err := ring.NewRing(mk("host-l", "dc2", 0), mk("host-a", "dc1", -100), mk("host-b", "dc1", 100), mk("host-c", "dc1", 200))
	if err != nil {
		t.Fatal(err)
	}
	s := ring.NetworkTopologyStrategy{RF: map[string]int{"dc1": 2, "dc2": 1}}
	fr := &fakeRing{self: "host-l", r: r, ks: []Keyspace{{Name: "ks", Strategy: s}},
		down:  []Unavailable{{Name: "host-c", DC: "dc1", Where: "10.0.0.3", Why: "Cassandra DOWN"}},
		peers: map[string]string{"host-l": "self", "host-a": "sa", "host-b": "sb", "host-c": "sc"},
		tables: func(ks string, held []TableStatus) []TableStatus {
			return slices.DeleteFunc(slices.Clone(held), func(t TableStatus) bool { return t.Table == "gone" })
		}}
	f := &fakePeers{tabs: map[string][]TableStatus{
		"sa": {{Keyspace: "ks", Table: "t", ID: "1"}, {Keyspace: "ks", Table: "gone", ID: "2"}},
		"sb": {{Keyspace: "ks", Table: "t", ID: "1"}},
	}}
	in := &recordInstall{}
	c := &Cluster{Ring: fr, Peers: f, Install: in}
	o := NewOp(&OpStatus{Kind: adminapi.OpCassandraRebuild})
	if err := c.Rebuild(context.Background(), o, RebuildRequest{SourceDC: "dc1"}); err != nil {
		t.Fatal(err)
	}
	if len(f.fetched) != 0 {
		t.Fatalf("fetched into live directories: %q", f.fetched)
	}
	var covered token.RangeSet
	for _, g := range in.got {
		if !strings.HasPrefix(g, "self<-sa ks.t-1 ") && !strings.HasPrefix(g, "self<-sb ks.t-1 ") {
			t.Errorf("landed %q", g)
		}
		rs, err := token.ParseRanges(token.Murmur3, g[strings.LastIndex(g, " ")+1:])
		if err != nil {
			t.Fatal(err)
		}
		covered = append(covered, rs...)
	}
	if got := ring.Normalize(covered).String(); got != "(-9223372036854775808,-9223372036854775808]" {
		t.Errorf("landed ranges %s, want the whole ring (dc2's one node replicates all of it)", got)
	}
	if st := o.Status(); len(st.Imported) != len(in.got) || len(st.Transfers) != len(in.got) {
		t.Errorf("status %+v", st)
	}

	// A failed install fails the rebuild naming the table and the pair.
	in2 := &recordInstall{fail: map[string]bool{"t": true}}
	c.Install = in2
	err = c.Rebuild(context.Background(), NewOp(&OpStatus{Kind: adminapi.OpCassandraRebuild}), RebuildRequest{SourceDC: "dc1"})
	if err == nil || !strings.Contains(err.Error(), "ks.t sa->self") || !strings.Contains(err.Error(), "nodetool import failed") {
		t.Errorf("a failed install: %v", err)
	}

	// With host-a down too, the ranges whose dc1 replicas are host-a and host-c have no source,
	// and the error names the members that could not be.
	fr.down = append(fr.down, Unavailable{Name: "host-a", DC: "dc1", Where: "10.0.0.1", Why: "sidecar missing"})
	c.Install = &recordInstall{}
	err = c.Rebuild(context.Background(), NewOp(&OpStatus{Kind: adminapi.OpCassandraRebuild}), RebuildRequest{SourceDC: "dc1"})
	if !errors.Is(err, ring.ErrNoSource) || !strings.Contains(err.Error(), "host-a (10.0.0.1, dc1): sidecar missing") ||
		!strings.Contains(err.Error(), "host-c (10.0.0.3, dc1): Cassandra DOWN") {
		t.Errorf("no source: %v", err)
	}
	// An unknown source DC is the request's error.
	var br BadRequest
	if _, err := c.RebuildPlans(context.Background(), RebuildRequest{SourceDC: "dc9"}); !errors.As(err, &br) {
		t.Errorf("unknown DC: %v", err)
	}
}

// A retry whose plan takes a range from another source (the first source went down) fetches
// only the ranges the receiver did not install: what was installed counts, not where it came
// from (an earlier journal keyed by source installed 174 of 400 keys twice on a bootstrap).
func TestARetryFromAnotherSourceSkipsWhatWasInstalled(t *testing.T) {
	f := &fakePeers{
		tabs: map[string][]TableStatus{
			"a": {{Keyspace: "ks", Table: "t1", ID: "1"}},
			"b": {{Keyspace: "ks", Table: "t1", ID: "1"}},
		},
	}
	c := &Cluster{Ring: &fakeRing{self: "me"}, Peers: f, Journal: filepath.Join(t.TempDir(), JournalFile)}
	first := []Plan{{Keyspace: "ks", Transfers: []ring.Transfer{
		{From: "a", To: "me", Range: rng(t, "(0,10]")},
		{From: "b", To: "me", Range: rng(t, "(20,30]")},
	}}}
	// a's transfer lands, b's fails.
	f.failFrom = map[string]bool{"b": true}
	if err := c.execute(context.Background(), NewOp(&OpStatus{Kind: adminapi.OpBootstrap}), first); err == nil {
		t.Fatal("the first attempt did not fail")
	}
	// b is down: the retry takes both ranges from a.
	f.failFrom, f.fetched = nil, nil
	retry := []Plan{{Keyspace: "ks", Transfers: []ring.Transfer{
		{From: "a", To: "me", Range: rng(t, "(0,10]")},
		{From: "a", To: "me", Range: rng(t, "(20,30]")},
	}}}
	if err := c.execute(context.Background(), NewOp(&OpStatus{Kind: adminapi.OpBootstrap}), retry); err != nil {
		t.Fatal(err)
	}
	if want := []string{"me<-a ks.t1 (20,30]"}; fmt.Sprint(f.fetched) != fmt.Sprint(want) {
		t.Fatalf("retry fetched %q, want %q", f.fetched, want)
	}
}
