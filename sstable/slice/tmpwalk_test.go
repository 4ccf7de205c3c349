package slice

import (
	"os"
	"testing"
	"time"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/token"
)

func TestTmpWalkCost(t *testing.T) {
	path := os.Getenv("TMPWALK")
	if path == "" {
		t.Skip()
	}
	tb, err := sstable.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		f, _ := os.Open(tb.Path("Partitions.db"))
		st, _ := f.Stat()
		pi, err := bti.OpenPartitionIndexAt(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		n := 0
		pi.Walk(func(e bti.PartitionEntry) error { n++; return nil })
		t.Logf("walk: %d entries %v (%.0f ns each)", n, time.Since(start), float64(time.Since(start).Nanoseconds())/float64(n))
		f.Close()
		start = time.Now()
		n = 0
		tb.ScanIndex(func(e *sstable.IndexEntry) error { n++; return nil })
		t.Logf("scanindex: %v (%.0f ns each)", time.Since(start), float64(time.Since(start).Nanoseconds())/float64(n))
		ranges := token.RangeSet{{Left: token.Token{Kind: token.KindMurmur3, Long: -9223372036854775808}, Right: token.Token{Kind: token.KindMurmur3, Long: -4599584422388553795}}, {Left: token.Token{Kind: token.KindMurmur3, Long: 12474905833797391}, Right: token.Token{Kind: token.KindMurmur3, Long: 4616220940579883285}}}
		ps, err := NewPieces(tb.Partitioner, ranges)
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		_, _, parts, ok, err := btiPlanMeasured(tb, ps, ranges, &trieMeasure{positions: true})
		t.Logf("plan: %v ok %v %v partitions %d", time.Since(start), ok, err, parts)
	}
}
