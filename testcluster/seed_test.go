package testcluster

import (
	"context"
	"github.com/sluicedb/sluice/sstable/token"
	"testing"
	"time"
)

// A freshly seeded cluster holds S overlapping sstables per node whose reconciled content is
// the reference's on every replica: the flushes and the compacted reference agree.
func TestSeededFlushesReconcileToTheReference(t *testing.T) {
	c := New(t, Options{Nodes: 3, DataPerNode: 1 << 20, Exec: selfExec})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := c.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.PartitionsChecked == 0 {
		t.Fatalf("%+v", rep)
	}
	cen, err := c.Census(ctx, c.Names(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range cen.SSTables {
		if n != c.Options().SSTables {
			t.Errorf("%s holds %d sstables, want %d", name, n, c.Options().SSTables)
		}
	}
	t.Logf("%d partitions, %d sstables", rep.PartitionsChecked, rep.SSTables)
}

// A replica that missed the last flush in half its ranges still holds every partition, but
// its reconciled content differs (overwrites and deletions missing): the check sees it.
func TestCheckSeesAReplicaThatMissedAFlush(t *testing.T) {
	c := New(t, Options{Nodes: 3, DataPerNode: 1 << 20, SeedStale: "n1", Exec: selfExec})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := c.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.Diverged == 0 || rep.Lost != 0 || rep.Misplaced != 0 {
		t.Fatalf("want only diverged partitions: %+v", rep)
	}
	t.Logf("%d of %d partitions diverged on n1", rep.Diverged, rep.PartitionsChecked)
}

// Shipping a run of partitions whole-chunk costs the edge chunks' bytes outside the run; a
// run that starts and ends on chunk boundaries costs nothing extra.
func TestLayoutShipCountsChunkEdges(t *testing.T) {
	// Four partitions of 100 uncompressed bytes in chunks of 100 (ratio 1: offsets 0,100,...),
	// then the same with partitions straddling chunks.
	aligned := Layout{Tokens: []int64{10, 20, 30, 40}, Positions: []int64{0, 100, 200, 300}, DataLength: 400,
		FileLength: 400, Chunk: 100, Offsets: []int64{0, 100, 200, 300}}
	rs := token.RangeSet{{Left: token.Token{Kind: token.KindMurmur3, Long: 15}, Right: token.Token{Kind: token.KindMurmur3, Long: 30}}}
	if live, dead := aligned.Ship(rs); live != 200 || dead != 0 {
		t.Fatalf("aligned: live %d dead %d, want 200 0", live, dead)
	}
	straddling := aligned
	straddling.Positions = []int64{0, 150, 250, 350}
	if live, dead := straddling.Ship(rs); live != 200 || dead != 100 {
		// partitions 20 and 30 span [150,350): chunks 1..3 = 300 bytes on disk
		t.Fatalf("straddling: live %d dead %d, want 200 100", live, dead)
	}
	if live, dead := straddling.Ship(nil); live != 0 || dead != 0 {
		t.Fatalf("nothing shipped: %d %d", live, dead)
	}
}
