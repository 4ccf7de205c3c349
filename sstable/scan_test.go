package sstable

import (
	"bytes"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
)

// The partition scan of every fixture, BIG and BTI, equals the independently computed
// *-keys.tsv listing: ordinal, key, token, Data.db position and index entry position.
func TestScanPartitionsMatchesKeyListings(t *testing.T) {
	for _, f := range fixtures.All(t) {
		t.Run(f.Name, func(t *testing.T) {
			tb, err := Open(f.Path("Data.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer tb.Close()
			want := f.Keys(t)
			i := 0
			err = tb.ScanPartitions(func(p *Partition) error {
				if i >= len(want) {
					t.Fatalf("more partitions than the listing's %d", len(want))
				}
				w := want[i]
				if p.Ordinal != int64(w.Ordinal) || !bytes.Equal(p.Key, w.Key) || p.Token.String() != w.Token ||
					p.Position != w.DataPos || p.IndexPos != w.IndexPos {
					t.Errorf("partition %d: got (%d %x %s %d %d), want (%d %x %s %d %d)", i,
						p.Ordinal, p.Key, p.Token, p.Position, p.IndexPos, w.Ordinal, w.Key, w.Token, w.DataPos, w.IndexPos)
				}
				i++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if i != len(want) {
				t.Fatalf("scanned %d partitions, listing has %d", i, len(want))
			}
		})
	}
}
