package testcluster

import (
	"context"
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
