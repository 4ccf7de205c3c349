package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// fakePeers stands in for the network: each member's tables, and a fetch that fails for the
// targets in fail.
type fakePeers struct {
	mu      sync.Mutex
	tabs    map[string][]TableStatus
	fail    map[string]bool
	fetched []string // "to<-source ks.table ranges"
}

func (f *fakePeers) tables(_ context.Context, name, keyspace string) ([]TableStatus, error) {
	var out []TableStatus
	for _, t := range f.tabs[name] {
		if t.Keyspace == keyspace {
			out = append(out, t)
		}
	}
	return out, nil
}

func (f *fakePeers) fetch(_ context.Context, to string, req FetchOpRequest) (FetchOpResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail[to] {
		return FetchOpResponse{}, fmt.Errorf("%s: disk full", to)
	}
	f.fetched = append(f.fetched, fmt.Sprintf("%s<-%s %s.%s %s", to, req.Source, req.Keyspace, req.Table, req.Ranges))
	return FetchOpResponse{SSTables: []string{"x"}, BytesReceived: 10}, nil
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
	n, err := New(Options{Config: Config{Name: "me", DataDirs: []string{t.TempDir()}, TLSDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePeers{
		tabs: map[string][]TableStatus{
			"a": {{Keyspace: "ks", Table: "t1", ID: "1"}, {Keyspace: "ks", Table: "t2", ID: "2"}, {Keyspace: "other", Table: "x"}},
			"b": {{Keyspace: "ks", Table: "t1", ID: "1"}},
		},
		fail: map[string]bool{"c": true},
	}
	c := &cluster{n: n, peers: f}
	plans := []ksPlan{{keyspace: "ks", transfers: []ring.Transfer{
		{From: "a", To: "me", Range: rng(t, "(0,10]")},
		{From: "a", To: "me", Range: rng(t, "(20,30]")},
		{From: "b", To: "c", Range: rng(t, "(40,50]")},
	}}}
	o := &op{n: n, s: &OpStatus{Kind: OpBootstrap}}
	err = c.execute(context.Background(), o, plans)
	if err == nil || !strings.Contains(err.Error(), "ks.t1 b->c") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("execute with a failing target: %v", err)
	}
	want := []string{"me<-a ks.t1 (0,10],(20,30]", "me<-a ks.t2 (0,10],(20,30]"}
	if fmt.Sprint(f.fetched) != fmt.Sprint(want) {
		t.Fatalf("fetched %q, want %q", f.fetched, want)
	}
	var failed, done int
	for _, ts := range o.s.Transfers {
		switch ts.State {
		case OpFailed:
			failed++
		case OpComplete:
			done++
		}
	}
	if failed != 1 || done != 2 {
		t.Fatalf("transfers %+v", o.s.Transfers)
	}

	// The retry: c has room now; a's tables are not fetched again.
	f.fail, f.fetched = nil, nil
	o = &op{n: n, s: &OpStatus{Kind: OpBootstrap}}
	if err := c.execute(context.Background(), o, plans); err != nil {
		t.Fatal(err)
	}
	if want := []string{"c<-b ks.t1 (40,50]"}; fmt.Sprint(f.fetched) != fmt.Sprint(want) {
		t.Fatalf("retry fetched %q, want %q", f.fetched, want)
	}
	// The journal is cleared: a later operation of the same plan fetches everything again.
	f.fetched = nil
	if err := c.execute(context.Background(), &op{n: n, s: &OpStatus{Kind: OpBootstrap}}, plans); err != nil {
		t.Fatal(err)
	}
	if len(f.fetched) != 3 {
		t.Fatalf("after a completed operation, fetched %q", f.fetched)
	}
}

// A member listening on every interface announces a wildcard stream address; peers reach it
// at its gossip host.
func TestStreamAddrOfAWildcardIsTheGossipHost(t *testing.T) {
	for _, tc := range []struct{ stream, gossip, want string }{
		{"10.0.0.1:7400", "10.0.0.1:7946", "10.0.0.1:7400"},
		{"0.0.0.0:7400", "10.0.0.2:7946", "10.0.0.2:7400"},
		{"[::]:7400", "[fd00::3]:7946", "[fd00::3]:7400"},
		{":7400", "10.0.0.4:7946", "10.0.0.4:7400"},
	} {
		got, err := streamAddr(gossip.Member{Name: "x", Addr: tc.gossip, Meta: gossip.NodeMeta{StreamAddr: tc.stream}})
		if err != nil || got != tc.want {
			t.Errorf("streamAddr(%s, gossip %s) = %q, %v; want %q", tc.stream, tc.gossip, got, err, tc.want)
		}
	}
	if _, err := streamAddr(gossip.Member{Name: "x", Meta: gossip.NodeMeta{StreamAddr: ""}}); err == nil {
		t.Error("a member without a stream address")
	}
}
