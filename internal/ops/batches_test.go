package ops

import (
	"encoding/json"
	"testing"

	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// A repair's requests fit the bounds the peer holds them to: every batch of trees and of
// digests passes the server's own checks, and together they cover every range once.
func TestRepairRequestsStayWithinThePeerBounds(t *testing.T) {
	// 3,000 ranges (more than one request holds by count or by text) at depths 0, 9 and 15.
	rs := disjointRanges(3000, 1<<50)
	if n := len(ring.Normalize(rs)); n != len(rs) {
		t.Fatalf("%d ranges normalize to %d", len(rs), n)
	}
	specs := make([]repair.Spec, len(rs))
	for i, r := range rs {
		specs[i] = repair.Spec{Range: r, Depth: []int{0, 9, 15}[i%3]}
	}
	seen := make([]int, len(specs))
	for _, batch := range TreeBatches(specs) {
		var br token.RangeSet
		for _, i := range batch {
			if specs[i].Depth != specs[batch[0]].Depth {
				t.Fatalf("a batch of depths %d and %d", specs[batch[0]].Depth, specs[i].Depth)
			}
			br = append(br, specs[i].Range)
			seen[i]++
		}
		checkCall(t, peerrpc.MethodRepairTree, TreeRequest{Keyspace: "ks", Table: "t", Ranges: br.String(), Depth: specs[batch[0]].Depth})
	}
	for i, k := range seen {
		if k != 1 {
			t.Fatalf("spec %d in %d batches", i, k)
		}
	}
	total := 0
	for _, br := range BatchRanges(ring.Normalize(rs), peerrpc.MaxCallRanges, RangesBudget) {
		total += len(br)
		checkCall(t, peerrpc.MethodRepairDigests, DigestRequest{Keyspace: "ks", Table: "t", Ranges: br.String(), Limit: repair.MaxDigestsPerPage})
	}
	if total != len(rs) {
		t.Fatalf("digest batches hold %d of %d ranges", total, len(rs))
	}
}

// checkCall holds a request to the server's table, as a server would.
func checkCall(t *testing.T, method string, req any) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := (*peerrpc.Limits)(nil).Lookup(method)
	if !ok {
		t.Fatalf("no %s in the table", method)
	}
	frame, _ := json.Marshal(peerrpc.Request{Method: method, Body: body})
	if len(body) > m.MaxBody || len(frame) > peerrpc.MaxRequest {
		t.Fatalf("%s: a body of %d bytes, a frame of %d", method, len(body), len(frame))
	}
	cost, err := m.Check(body)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if cost.Answer > int64(m.MaxAnswer) || cost.Work > peerrpc.DefaultMemoryBudget {
		t.Fatalf("%s: cost %+v", method, cost)
	}
}

// disjointRanges is n ranges of width w from 0, a gap of w between two, normalized.
func disjointRanges(n int, w int64) token.RangeSet {
	var rs token.RangeSet
	for i := range int64(n) {
		rs = append(rs, token.Range{Left: token.Token{Kind: token.KindMurmur3, Long: 2 * i * w},
			Right: token.Token{Kind: token.KindMurmur3, Long: (2*i + 1) * w}})
	}
	return rs
}
