package cassandra

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

func TestParseReplication(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]string
		want Replication
		err  error
	}{
		{"simple", map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "3"},
			Replication{Class: SimpleStrategy, RF: 3}, nil},
		{"simple short class", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"},
			Replication{Class: SimpleStrategy, RF: 1}, nil},
		{"nts", map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3", "dc2": "0"},
			Replication{Class: NetworkTopologyStrategy, DCs: map[string]int{"dc1": 3, "dc2": 0}}, nil},
		{"nts no dc", map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy"},
			Replication{Class: NetworkTopologyStrategy, DCs: map[string]int{}}, nil},
		{"local", map[string]string{"class": "org.apache.cassandra.locator.LocalStrategy"}, Replication{}, ErrUnsupportedStrategy},
		{"everywhere", map[string]string{"class": "org.apache.cassandra.locator.EverywhereStrategy"}, Replication{}, ErrUnsupportedStrategy},
		{"transient", map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3/1"}, Replication{}, ErrUnsupportedStrategy},
		{"simple transient", map[string]string{"class": "SimpleStrategy", "replication_factor": "3/1"}, Replication{}, ErrUnsupportedStrategy},
		{"simple without rf", map[string]string{"class": "SimpleStrategy"}, Replication{}, ErrUnsupportedStrategy},
		{"nts with rf", map[string]string{"class": "NetworkTopologyStrategy", "replication_factor": "3"}, Replication{}, ErrUnsupportedStrategy},
		{"not a number", map[string]string{"class": "NetworkTopologyStrategy", "dc1": "three"}, Replication{}, ErrUnsupportedStrategy},
		{"negative", map[string]string{"class": "NetworkTopologyStrategy", "dc1": "-1"}, Replication{}, ErrUnsupportedStrategy},
		{"no class", map[string]string{"replication_factor": "1"}, Replication{}, ErrUnsupportedStrategy},
	} {
		got, err := ParseReplication(tc.in)
		if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestReplicationStrategy(t *testing.T) {
	s, err := Replication{Class: SimpleStrategy, RF: 2}.Strategy()
	if err != nil || !reflect.DeepEqual(s, ring.SimpleStrategy{RF: 2}) {
		t.Errorf("simple: %v %v", s, err)
	}
	s, err = Replication{Class: NetworkTopologyStrategy, DCs: map[string]int{"a": 2, "b": 1}}.Strategy()
	if err != nil || !reflect.DeepEqual(s, ring.NetworkTopologyStrategy{RF: map[string]int{"a": 2, "b": 1}}) {
		t.Errorf("nts: %v %v", s, err)
	}
	if _, err := (Replication{Class: SimpleStrategy}).Strategy(); !errors.Is(err, ErrUnsupportedStrategy) {
		t.Errorf("simple RF 0: %v", err)
	}
	if got := (Replication{Class: NetworkTopologyStrategy, DCs: map[string]int{"b": 1, "a": 2}}).String(); got != "{'class': 'NetworkTopologyStrategy', 'a': 2, 'b': 1}" {
		t.Errorf("String: %s", got)
	}
}

func TestParseTokens(t *testing.T) {
	got, err := ParseTokens([]string{"42", "-9223372036854775807", "9223372036854775807", " 0 "})
	if err != nil || !reflect.DeepEqual(got, []int64{-9223372036854775807, 0, 42, 9223372036854775807}) {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range [][]string{{"x"}, {"-9223372036854775808"}, {"1", "1"}, {"9223372036854775808"}, {"1.5"}} {
		if _, err := ParseTokens(bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("%q: %v, want ErrBadToken", bad, err)
		}
	}
}

func TestTableID(t *testing.T) {
	id, err := TableID("612B82ED-DB69-7779-BD8B-EFAC7D193E8B")
	if err != nil || id != "612b82eddb697779bd8befac7d193e8b" {
		t.Errorf("%q %v", id, err)
	}
	for _, bad := range []string{"", "612b82ed", "zz2b82eddb697779bd8befac7d193e8b"} {
		if _, err := TableID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Three nodes in two DCs, as the reader builds them: the ring and the strategies give the
// replicas Cassandra places.
func TestSnapshotRing(t *testing.T) {
	s := Snapshot{Partitioner: Murmur3Partitioner,
		Nodes: []Node{
			{HostID: "a", DC: "dc1", Rack: "r1", Tokens: []int64{-100, 100}, State: Up, Local: true},
			{HostID: "b", DC: "dc1", Rack: "r2", Tokens: []int64{0, 200}, State: Down},
			{HostID: "c", DC: "dc2", Rack: "r1", Tokens: []int64{50}, State: Unknown},
			{HostID: "d", DC: "dc2", Rack: "r1"}, // no tokens: left out
		},
		Keyspaces: []Keyspace{
			{Name: "ks1", Replication: map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "2"}},
			{Name: "ks2", Replication: map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "1", "dc2": "1"}},
			{Name: "system", Replication: map[string]string{"class": "org.apache.cassandra.locator.LocalStrategy"}},
		},
	}
	r, skipped, err := s.Ring()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(skipped, []string{"d"}) || len(r.Members()) != 3 {
		t.Fatalf("skipped %v, members %v", skipped, r.Members())
	}
	tok := func(v int64) token.Token { return token.Token{Kind: token.KindMurmur3, Long: v} }
	names := func(ns []ring.Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	// Token 10 is in (0, 50]: primary c, then the walk goes on to 100 (a).
	st, err := s.Strategy("ks1")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(st.Replicas(r, tok(10))); !reflect.DeepEqual(got, []string{"c", "a"}) {
		t.Errorf("ks1 replicas of 10: %v", got)
	}
	st, err = s.Strategy("ks2")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(st.Replicas(r, tok(150))); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Errorf("ks2 replicas of 150: %v", got)
	}
	if _, err := s.Strategy("system"); !errors.Is(err, ErrUnsupportedStrategy) {
		t.Errorf("system: %v", err)
	}
	if _, err := s.Strategy("nope"); err == nil {
		t.Error("an unknown keyspace has a strategy")
	}
	s.Partitioner = "org.apache.cassandra.dht.RandomPartitioner"
	if _, _, err := s.Ring(); !errors.Is(err, ErrUnsupportedPartitioner) {
		t.Errorf("RandomPartitioner: %v", err)
	}
	// Two nodes claiming one token: the ring refuses it.
	s.Partitioner = Murmur3Partitioner
	s.Nodes[1].Tokens = []int64{100}
	if _, _, err := s.Ring(); !errors.Is(err, ring.ErrTokenConflict) {
		t.Errorf("conflict: %v", err)
	}
}
