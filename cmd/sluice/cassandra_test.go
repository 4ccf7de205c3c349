package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
)

func TestPrintCassandraRing(t *testing.T) {
	v := adminapi.CassandraRing{Cluster: "c1", Partitioner: "org.apache.cassandra.dht.Murmur3Partitioner", ReadAt: time.Unix(0, 0).UTC(),
		Stale: "the Cassandra node does not answer",
		Nodes: []adminapi.CassandraNode{
			{HostID: "h1", Address: "10.0.0.1", DC: "dc1", Rack: "r1", State: "UP", Local: true, TokenCount: 16, Sidecar: adminapi.SidecarUp, SidecarName: "side1"},
			{HostID: "h2", Address: "10.0.0.2", DC: "dc1", Rack: "r2", State: "DOWN", TokenCount: 16, Sidecar: adminapi.SidecarMissing},
		},
		Keyspaces: []adminapi.CassandraKeyspace{{Name: "ks", Strategy: "SimpleStrategy{RF:3}", Tables: 2},
			{Name: "system", Unsupported: "LocalStrategy"}},
	}
	var b bytes.Buffer
	if err := printCassandraRing(&b, v); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"warning: the Cassandra node does not answer", "Cluster: c1 (Murmur3Partitioner)",
		"10.0.0.1 (local)", "up (side1)", "missing", "DOWN", "SimpleStrategy{RF:3}", "not placed by sluice: LocalStrategy"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestCassandraCommandsUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"cassandra", "import", "nodot", "/x"}, &out, &errb); code != 2 {
		t.Errorf("import without KEYSPACE.TABLE: exit %d: %s", code, errb.String())
	}
	if code := run([]string{"cassandra", "import", "k-s.t", "/x"}, &out, &errb); code != 2 {
		t.Errorf("import of a bad keyspace name: exit %d", code)
	}
	if code := run([]string{"cassandra", "ring", "extra"}, &out, &errb); code != 2 {
		t.Errorf("ring with an argument: exit %d", code)
	}
	if code := run([]string{"cassandra", "rebuild", "dc1", "dc2"}, &out, &errb); code != 2 {
		t.Errorf("rebuild with two source DCs: exit %d", code)
	}
	if code := run([]string{"cassandra", "rebuild", "--keyspace", "k-s"}, &out, &errb); code != 2 {
		t.Errorf("rebuild of a bad keyspace name: exit %d", code)
	}
	if code := run([]string{"cassandra", "load"}, &out, &errb); code != 2 {
		t.Errorf("load without a directory: exit %d", code)
	}
	if code := run([]string{"cassandra", "load", "/x", "--keyspace", "ks"}, &out, &errb); code != 2 {
		t.Errorf("load with --keyspace alone: exit %d", code)
	}
}

func TestSummarizeCassandraRebuild(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := adminapi.OpStatus{Kind: adminapi.OpCassandraRebuild, State: adminapi.OpFailed, Error: "ks.b from s2: fetch: boom",
		Started: start, Finished: start.Add(2500 * time.Millisecond),
		Transfers: []adminapi.TransferStatus{
			{From: "s1", To: "me", Keyspace: "ks", Table: "a", Ranges: "(1,5],(10,20]", State: adminapi.OpComplete, SSTables: 2, BytesReceived: 100},
			{From: "s2", To: "me", Keyspace: "ks", Table: "a", Ranges: "(5,10]", State: adminapi.OpComplete, SSTables: 1, BytesReceived: 50},
			{From: "s1", To: "me", Keyspace: "ks", Table: "b", Ranges: "(1,5],(10,20]", State: adminapi.OpComplete},
			{From: "s2", To: "me", Keyspace: "ks", Table: "b", Ranges: "(5,10]", State: adminapi.OpFailed, Error: "fetch: boom", BytesReceived: 7},
		}}
	s := summarizeCassandraRebuild(st)
	if s.Ranges != 3 || s.SSTables != 3 || s.BytesReceived != 157 || s.WallSeconds != 2.5 || len(s.Imported) != 2 ||
		len(s.Failed) != 1 || s.Failed[0].Table != "b" || s.Failed[0].From != "s2" || s.Failed[0].Ranges != "(5,10]" || s.Failed[0].Error != "fetch: boom" {
		t.Errorf("%+v", s)
	}
}

// A load's --json carries the fields another program reads: sstables, bytes_sent,
// wall_seconds, imported (with each replica's node), imported_per_node and failed.
func TestCassandraLoadJSONFields(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := adminapi.OpStatus{Kind: adminapi.OpCassandraLoad, State: adminapi.OpComplete, Started: start, Finished: start.Add(time.Second),
		Transfers: []adminapi.TransferStatus{
			{From: "me", To: "s1", Keyspace: "ks", Table: "a", Ranges: "(1,5]", State: adminapi.OpComplete, SSTables: 2, BytesReceived: 100},
			{From: "me", To: "s2", Keyspace: "ks", Table: "a", Ranges: "(5,9]", State: adminapi.OpComplete, SSTables: 1, BytesReceived: 40},
			{From: "me", To: "s2", Keyspace: "ks", Table: "b", Ranges: "(5,9]", State: adminapi.OpComplete, SSTables: 3, BytesReceived: 60},
		}}
	b, err := json.Marshal(summarizeCassandraLoad(summarizeCassandraRebuild(st)))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"sstables", "bytes_sent", "wall_seconds", "imported", "imported_per_node", "failed"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, b)
		}
	}
	per, _ := got["imported_per_node"].(map[string]any)
	if got["bytes_sent"] != 200.0 || per["s1"] != 2.0 || per["s2"] != 4.0 {
		t.Errorf("bytes_sent %v, imported_per_node %v", got["bytes_sent"], per)
	}
}

// Commands taking at most one argument refuse more as a usage error (exit 2), before any call.
func TestExtraArgumentsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"rebuild", "dc1", "dc2"}, {"cleanup", "ks.a", "ks.b"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "at most 1") {
			t.Errorf("%v: exit %d: %s", args, code, errb.String())
		}
	}
}
