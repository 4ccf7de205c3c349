package node

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// boundsNode runs a standalone node n1 with the QUIC stream server (so peer calls) and one
// table, ks1.users; mallory and eve hold node certificates of its CA but are no members.
func boundsNode(t *testing.T) (*Node, func(name string) *peerrpc.Client) {
	t.Helper()
	cfg := testConfig(t)
	if err := tlsx.WriteCA(cfg.TLSDir, false); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"n1", "mallory", "eve"} {
		if err := tlsx.WriteNode(cfg.TLSDir, name, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	generate(t, cfg.DataDirs[0], "ks1", "users", 7)
	r := start(t, Options{Config: cfg, Logger: zerolog.Nop(), NewStreamServer: QUICStreamServer, ShutdownTimeout: 5 * time.Second})
	return r.node, func(name string) *peerrpc.Client {
		id, err := tlsx.Load(cfg.TLSDir, name)
		if err != nil {
			t.Fatal(err)
		}
		return &peerrpc.Client{ID: id, HandshakeTimeout: 5 * time.Second}
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

// vmHWM is the process's peak resident set (VmHWM) in bytes.
func vmHWM(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}

// memoryGrowth runs fn and returns what the process allocated meanwhile (TotalAlloc, an upper
// bound of its heap's growth), how much its in-use heap grew, and how much its peak resident
// set grew.
func memoryGrowth(t *testing.T, fn func()) (alloc, heap, hwm int64) {
	t.Helper()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	h0 := vmHWM(t)
	fn()
	runtime.ReadMemStats(&m1)
	h1 := vmHWM(t)
	return int64(m1.TotalAlloc - m0.TotalAlloc), int64(m1.HeapInuse) - int64(m0.HeapInuse), h1 - h0
}

// A repair_tree call from any node certificate that asks for more than the bounds allow (10,000
// ranges; 256 copies of (0,1] at depth 15, the campaign's 981 MiB call; 16 copies, within the
// leaf bound but repeats) is refused at once with an error naming the bound, and the process's
// memory stays flat. A call at the bounds is answered.
func TestAHostileTreeCallIsRefusedBeforeItAllocates(t *testing.T) {
	n, client := boundsNode(t)
	mallory := client("mallory")
	addr := n.StreamAddr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	repeat := func(k int) string { return strings.TrimSuffix(strings.Repeat("(0,1],", k), ",") }
	const flat = 32 << 20
	for _, c := range []struct {
		name, ranges, bound string
	}{
		{"10,000 ranges", repeat(10000), "MaxCallRanges"},
		{"256 copies of (0,1]", repeat(256), "MaxTreeLeaves"},
		{"16 copies of (0,1]", repeat(16), "sorted and disjoint"},
	} {
		req := TreeRequest{Keyspace: "ks1", Table: "users", Ranges: c.ranges, Depth: 15}
		var err error
		var took time.Duration
		alloc, heap, hwm := memoryGrowth(t, func() {
			start := time.Now()
			err = mallory.Call(ctx, addr, "n1", peerRepairTree, req, nil)
			took = time.Since(start)
		})
		var pe *peerrpc.Error
		if !errors.As(err, &pe) || pe.Code != peerrpc.CodeBadRequest || !strings.Contains(pe.Msg, c.bound) {
			t.Fatalf("%s at depth 15: %v, want a bad request naming %s", c.name, err, c.bound)
		}
		t.Logf("%s at depth 15: refused in %v; allocated %.1f MiB, heap in use %+.1f MiB, peak RSS %+.1f MiB: %s",
			c.name, took, float64(alloc)/(1<<20), float64(heap)/(1<<20), float64(hwm)/(1<<20), pe.Msg)
		if alloc > flat || heap > flat || hwm > flat {
			t.Errorf("%s: allocated %d, heap grew %d, peak RSS grew %d bytes; want each under %d", c.name, alloc, heap, hwm, flat)
		}
		if took > 5*time.Second {
			t.Errorf("%s: refused after %v", c.name, took)
		}
	}
	if got := refusedCount(t, n, peerRepairTree, peerrpc.ReasonBounds); got != 3 {
		t.Errorf("sluice_peer_calls_refused_total{repair_tree,bounds} = %v, want 3", got)
	}

	// At the bounds: 16 disjoint ranges at depth 15.
	rs := disjointRanges(16, 1<<40)
	var tr TreeResponse
	if err := mallory.Call(ctx, addr, "n1", peerRepairTree, TreeRequest{Keyspace: "ks1", Table: "users", Ranges: rs.String(), Depth: 15}, &tr); err != nil {
		t.Fatalf("16 ranges at depth 15: %v", err)
	}
	if len(tr.Trees) != 16 || tr.Trees[15].Depth != 15 || !tr.Trees[15].Range.Left.Equal(rs[15].Left) {
		t.Fatalf("16 ranges at depth 15: %d trees", len(tr.Trees))
	}
	waitUntil(t, 10*time.Second, "the memory budget to be free", func() bool { return n.peerSrv.MemoryInUse() == 0 })
}

// A burst of heavy calls from one certificate beyond its HeavyPerPeer slots is refused at once
// as busy while the admitted calls run; another certificate still gets its own.
func TestABurstOfHeavyCallsFromOnePeerGetsBusy(t *testing.T) {
	n, client := boundsNode(t)
	mallory, eve := client("mallory"), client("eve")
	addr := n.StreamAddr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The admitted calls wait for the table's directory lock, held here, so they stay in
	// flight for as long as the test needs.
	dirs, err := n.catalog.TableDirs()
	if err != nil || len(dirs) != 1 {
		t.Fatalf("table dirs %v: %v", dirs, err)
	}
	lock := n.local.Lock(dirs[0].Path)
	lock.Lock()
	unlocked := false
	defer func() {
		if !unlocked {
			lock.Unlock()
		}
	}()

	req := TreeRequest{Keyspace: "ks1", Table: "users", Ranges: disjointRanges(1, 100).String(), Depth: 0}
	const burst = 6
	results := make(chan error, burst+1)
	var wg sync.WaitGroup
	for range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- mallory.Call(ctx, addr, "n1", peerRepairTree, req, nil)
		}()
	}
	for range burst - peerrpc.DefaultHeavyPerPeer {
		select {
		case err := <-results:
			if !peerrpc.IsBusy(err) || !strings.Contains(err.Error(), "HeavyPerPeer") {
				t.Fatalf("a call beyond mallory's slots: %v, want busy (HeavyPerPeer)", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the calls beyond mallory's slots were not refused at once")
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		results <- eve.Call(ctx, addr, "n1", peerRepairTree, req, nil)
	}()
	waitUntil(t, 20*time.Second, "three calls in flight", func() bool {
		return n.peerSrv.MemoryInUse() == 3*peerrpc.TreeCost(1, 0).Work
	})
	select {
	case err := <-results:
		t.Fatalf("a call ended while the table was locked: %v", err)
	default:
	}
	lock.Unlock()
	unlocked = true
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Errorf("an admitted call: %v", err)
		}
	}
	if got := refusedCount(t, n, peerRepairTree, peerrpc.ReasonPeer); got != burst-peerrpc.DefaultHeavyPerPeer {
		t.Errorf("sluice_peer_calls_refused_total{repair_tree,peer_busy} = %v, want %d", got, burst-peerrpc.DefaultHeavyPerPeer)
	}
}

// What a heavy call allocates stays within the work its request predicts, which it reserves:
// measured on the node's own handler for a tree call at the bounds and a digest page.
func TestHeavyCallsAllocateNoMoreThanTheyReserve(t *testing.T) {
	n, _ := boundsNode(t)
	ctx := context.Background()
	caller := tlsx.PeerIdentity{Name: "mallory", Role: tlsx.RoleNode}
	call := func(method string, req any) (peerrpc.Raw, int64) {
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		alloc, _, _ := memoryGrowth(t, func() { out, err = n.peerCall(ctx, caller, method, body) })
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return out.(peerrpc.Raw), alloc
	}
	rs := disjointRanges(16, 1<<40)
	raw, alloc := call(peerRepairTree, TreeRequest{Keyspace: "ks1", Table: "users", Ranges: rs.String(), Depth: 15})
	cost := peerrpc.TreeCost(16, 15)
	t.Logf("16 trees at depth 15: allocated %d bytes, reserved %d; answer %d bytes, predicted %d", alloc, cost.Work, len(raw), cost.Answer)
	if alloc > cost.Work || int64(len(raw)) > cost.Answer {
		t.Errorf("16 trees at depth 15: allocated %d bytes and answered %d, predicted %+v", alloc, len(raw), cost)
	}
	all := token.Range{Left: token.Murmur3.MinToken(), Right: token.Murmur3.MinToken()}
	raw, alloc = call(peerRepairDigests, DigestRequest{Keyspace: "ks1", Table: "users", Ranges: all.String()})
	if cost := peerrpc.DigestCost(0); alloc > cost.Work || int64(len(raw)) > cost.Answer {
		t.Errorf("a digest page: allocated %d bytes and answered %d, predicted %+v", alloc, len(raw), cost)
	}
}

// The answers the handler encodes itself decode as the responses the client reads.
func TestRawAnswersDecodeAsTheResponses(t *testing.T) {
	n, _ := boundsNode(t)
	ctx := context.Background()
	rs := ring.Normalize(token.RangeSet{{Left: token.Murmur3.MinToken(), Right: token.Murmur3.MinToken()}})
	specs := []repair.Spec{{Range: rs[0], Depth: 3}}
	trees, err := n.RepairTrees(ctx, "ks1", "users", specs)
	if err != nil {
		t.Fatal(err)
	}
	var tr TreeResponse
	if err := json.Unmarshal(treesAnswer(trees), &tr); err != nil || len(tr.Trees) != 1 || tr.Trees[0].Partitions() != trees[0].Partitions() || tr.Trees[0].Partitions() == 0 {
		t.Fatalf("trees answer: %v %+v", err, tr)
	}
	if d, err := repair.Diff(trees[0], tr.Trees[0]); err != nil || len(d) != 0 {
		t.Fatalf("trees answer differs: %v %v", d, err)
	}
	req := DigestRequest{Keyspace: "ks1", Table: "users", Ranges: rs.String(), Limit: 5}
	ds, more, err := n.digestPage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want, err := n.repairDigests(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var got DigestResponse
	if err := json.Unmarshal(digestsAnswer(ds, more), &got); err != nil || got != want || !got.More {
		t.Fatalf("digests answer %+v (%v), want %+v", got, err, want)
	}
	if raw, _ := base64.StdEncoding.DecodeString(got.Digests); len(raw) > repair.DigestPageSize(5) {
		t.Fatalf("a page of 5: %d bytes, DigestPageSize %d", len(raw), repair.DigestPageSize(5))
	}
}

// refusedCount is sluice_peer_calls_refused_total{method, reason} as the registry serves it.
func refusedCount(t *testing.T, n *Node, method string, reason peerrpc.Reason) float64 {
	t.Helper()
	fams, err := n.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "sluice_peer_calls_refused_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == method && labels["reason"] == string(reason) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no sluice_peer_calls_refused_total{method=%q,reason=%q}", method, reason)
	return 0
}
