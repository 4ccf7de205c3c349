package stats

import (
	"bytes"
	"testing"

	"github.com/sluicedb/sluice/internal/fixtures"
)

// Cassandra's COMPACTION component is HyperLogLogPlus(13, 25).getBytes() over every partition
// key; recomputing it from the *-keys.tsv oracle must give the fixture's bytes, in sparse
// mode (1 to 35 keys) and in register mode (10,000 keys).
func TestCardinalityReproducesEveryFixture(t *testing.T) {
	for _, f := range fixtures.All(t) {
		t.Run(f.Name, func(t *testing.T) {
			s, err := Parse(f.Read(t, "Statistics.db"), fixtureVersion(t, f))
			if err != nil {
				t.Fatal(err)
			}
			c := NewCardinality()
			for _, k := range f.Keys(t) {
				c.Add(k.Key)
			}
			if got, want := c.Bytes(), s.Compaction.Cardinality; !bytes.Equal(got, want) {
				t.Fatalf("cardinality bytes differ:\n got %x\nwant %x", got[:min(len(got), 64)], want[:min(len(want), 64)])
			}
		})
	}
}
