package node

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// liveOf lists the live sstables of the test table on a node.
func liveOf(t *testing.T, n *Node) []catalog.LiveSSTable {
	t.Helper()
	dir, err := n.local.TableDirFor(testKS, testTable, "")
	if err != nil {
		t.Fatal(err)
	}
	live, err := catalog.ListLive(dir)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// complement is the normalized set of tokens outside the normalized range x.
func complement(x token.Range) token.RangeSet {
	min := token.Murmur3.MinToken()
	var out token.RangeSet
	if !x.Left.Equal(min) {
		out = append(out, token.Range{Left: min, Right: x.Left})
	}
	if !x.Right.Equal(min) {
		out = append(out, token.Range{Left: x.Right, Right: min})
	}
	return out
}

// checkReplicasHoldEveryKey checks that every key is held (at least once) by each of its
// replicas on r.
func checkReplicasHoldEveryKey(t *testing.T, r ring.Ring, keys [][]byte, nodes ...*Node) {
	t.Helper()
	held := map[string]map[string]int{}
	for _, n := range nodes {
		held[n.cfg.Name] = heldKeys(t, n)
	}
	bad := 0
	for _, k := range keys {
		for _, rep := range (ring.SimpleStrategy{RF: testRF}).Replicas(r, token.Murmur3.Token(k)) {
			if held[rep.Name][string(k)] == 0 {
				if bad++; bad <= 5 {
					t.Errorf("key %s (token %v) missing on its replica %s", k, token.Murmur3.Token(k), rep.Name)
				}
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d replicas of %d keys missing", bad, len(keys))
	}
}

// checkTreesAgree builds the trees of every pair of replicas over their common ranges and
// fails on any difference.
func checkTreesAgree(t *testing.T, r ring.Ring, nodes ...*Node) {
	t.Helper()
	s := ring.SimpleStrategy{RF: testRF}
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			common := ring.CommonRanges(r, s, a.cfg.Name, b.cfg.Name)
			if len(common) == 0 {
				continue
			}
			specs, err := a.local.RepairSpecs(testKS, testTable, common)
			if err != nil {
				t.Fatal(err)
			}
			ta, err := a.RepairTrees(context.Background(), testKS, testTable, specs)
			if err != nil {
				t.Fatal(err)
			}
			tb, err := b.RepairTrees(context.Background(), testKS, testTable, specs)
			if err != nil {
				t.Fatal(err)
			}
			for k := range ta {
				if ta[k].Partitions() == 0 {
					t.Errorf("%s and %s: no partitions in %v", a.cfg.Name, b.cfg.Name, ta[k].Range)
				}
				if d, err := repair.Diff(ta[k], tb[k]); err != nil || len(d) != 0 {
					t.Errorf("%s and %s differ in %v (%v)", a.cfg.Name, b.cfg.Name, d, err)
				}
			}
		}
	}
}

// Three nodes at RF 2 hold data by ownership; one loses a range it shares with a second, a
// third loses everything. Repair run on the two damaged nodes (through the admin API) brings
// every key back to every replica, streaming only towards the damaged side, after which every pair of replicas has equal trees, and a
// second repair finds nothing to stream.
func TestRepairRestoresEveryReplicaAndConverges(t *testing.T) {
	tc := newTestCluster(t, "r1", "r2", "r3")
	names := []string{"r1", "r2", "r3"}
	initial := map[string][]int64{}
	for i, name := range names {
		initial[name] = tokensOf(uint64(10+i), 4)
	}
	nodes, keys := tc.startPlaced(t, names, initial)
	r1, r2, r3 := nodes[0], nodes[1], nodes[2]
	r := ringOf(t, r1)
	s := ring.SimpleStrategy{RF: testRF}
	checkReplicasHoldEveryKey(t, r, keys, nodes...)
	checkTreesAgree(t, r, nodes...)

	// r1 loses the widest range it shares only with r3: its sstable is split without it.
	lost := ring.CommonRanges(r, s, "r1", "r3")[0]
	for _, c := range ring.CommonRanges(r, s, "r1", "r3") {
		if ring.Size(c) > ring.Size(lost) {
			lost = c
		}
	}
	keep := repair.Intersect(ring.ReplicaRanges(r, s, "r1"), complement(lost))
	mover, err := fsx.NewMover(fsx.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var dropped int64
	for _, st := range liveOf(t, r1) {
		res, err := ops.CleanupSSTable(context.Background(), st, keep, mover)
		if err != nil {
			t.Fatal(err)
		}
		dropped += res.Partitions - res.Kept
	}
	if dropped == 0 {
		t.Fatalf("r1 held no partition in %v", lost)
	}
	// r2 loses everything.
	for _, st := range liveOf(t, r2) {
		if err := ops.RemoveSSTable(st); err != nil {
			t.Fatal(err)
		}
	}
	if len(heldKeys(t, r2)) != 0 {
		t.Fatal("r2 still holds keys")
	}

	// r2 repairs first, with both peers; r1 then finds only its range shared with r3 to repair.
	wantMismatch := map[string]map[string]bool{"r2": {"r1": true, "r3": true}, "r1": {"r2": false, "r3": true}}
	for _, n := range []*Node{r2, r1} {
		start := func() (OpStatus, error) {
			var st OpStatus
			err := NewAdminClient(n.AdminAddr().String(), "", nil).Call(context.Background(), http.MethodPost, "/v1/ops/repair",
				RepairRequest{Keyspace: testKS, Table: testTable}, &st)
			return st, err
		}
		st, err := start()
		if err != nil {
			t.Fatal(err)
		}
		// Each peer's repair as the first attempt that completed it did it (a retry finds
		// nothing more to do with a peer an earlier attempt repaired).
		var repaired []RepairResult
		for _, a := range opRetried(t, n, st.ID, nodes, start) {
			for _, rr := range a.Repair {
				if rr.State == OpComplete && !slices.ContainsFunc(repaired, func(x RepairResult) bool { return x.Peer == rr.Peer }) {
					repaired = append(repaired, rr)
				}
			}
		}
		if len(repaired) != 2 {
			t.Fatalf("%s repaired with %d peers: %+v", n.cfg.Name, len(repaired), repaired)
		}
		for _, rr := range repaired {
			want := wantMismatch[n.cfg.Name][rr.Peer]
			if rr.State != OpComplete || (rr.Mismatched != "") != want || (rr.BytesFetched+rr.BytesSent > 0) != want {
				t.Errorf("%s: %+v: want mismatches streamed: %v", n.cfg.Name, rr, want)
			}
			// Only the damaged side lacked anything: nothing goes the other way.
			if want && (rr.PartitionsFetched == 0 || rr.PartitionsSent != 0 || rr.BytesSent != 0) {
				t.Errorf("%s with %s: fetched %d partitions, sent %d (%d bytes); want some fetched, none sent",
					n.cfg.Name, rr.Peer, rr.PartitionsFetched, rr.PartitionsSent, rr.BytesSent)
			}
		}
	}
	checkReplicasHoldEveryKey(t, r, keys, nodes...)
	checkTreesAgree(t, r, nodes...)

	// Converged: a repair of a subrange from r3 finds every tree equal and streams nothing.
	again := RepairRequest{Keyspace: testKS, Table: testTable, Ranges: ring.ReplicaRanges(r, s, "r3").String()}
	st, err := r3.StartRepair(again)
	if err != nil {
		t.Fatal(err)
	}
	attempts := opRetried(t, r3, st.ID, nodes, func() (OpStatus, error) { return r3.StartRepair(again) })
	for _, a := range attempts {
		if len(a.Transfers) != 0 {
			t.Fatalf("second repair streamed: %+v, transfers %+v", a.Repair, a.Transfers)
		}
	}
	st = attempts[len(attempts)-1]
	if len(st.Repair) != 2 {
		t.Fatalf("second repair: %+v", st.Repair)
	}
	for _, rr := range st.Repair {
		if rr.Mismatched != "" || rr.Partitions == 0 {
			t.Errorf("after repair: %+v", rr)
		}
	}

	// The digest peer call pages within its bounds and refuses requests it cannot answer.
	all := token.Range{Left: token.Murmur3.MinToken(), Right: token.Murmur3.MinToken()}
	page, err := r3.repairDigests(context.Background(), DigestRequest{Keyspace: testKS, Table: testTable, Ranges: all.String(), Limit: 5})
	if err != nil || !page.More {
		t.Fatalf("a page of 5: more %v, %v", page.More, err)
	}
	raw, _ := base64.StdEncoding.DecodeString(page.Digests)
	if ds, err := repair.ParseDigests(raw, token.RangeSet{all}, nil, 5); err != nil || len(ds) != 5 {
		t.Fatalf("a page of 5 holds %d digests: %v", len(ds), err)
	}
	for name, req := range map[string]DigestRequest{
		"bad ranges":     {Keyspace: testKS, Table: testTable, Ranges: "(1,"},
		"wrapping range": {Keyspace: testKS, Table: testTable, Ranges: "(10,-10]"},
		"bad table":      {Keyspace: testKS, Table: "../x", Ranges: all.String()},
	} {
		var pe *peerrpc.Error
		if _, err := r3.repairDigests(context.Background(), req); !errors.As(err, &pe) || pe.Code != peerrpc.CodeBadRequest {
			t.Errorf("%s: %v, want a bad request", name, err)
		}
	}
}
