package repair

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

// MarshalJSON writes the leaves three at a time; the result must be the base64 of the whole
// leaf encoding (whatever the remainder of the leaf count by three) and fit TreeWireSize.
func TestTreeJSONIsTheBase64OfItsLeavesAndFitsTreeWireSize(t *testing.T) {
	widest := token.Range{Left: tk(minTok + 1), Right: tk(math.MaxInt64)}
	for depth := 0; depth <= MaxDepth; depth++ {
		tr := &Tree{Range: widest, Depth: depth, Leaves: make([]Leaf, 1<<depth)}
		for i := range tr.Leaves {
			tr.Leaves[i] = Leaf{Hash: uint64(i)*0x9e3779b97f4a7c15 + 1, Partitions: uint64(i)}
		}
		b, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > TreeWireSize(depth) {
			t.Fatalf("depth %d: %d bytes, TreeWireSize %d", depth, len(b), TreeWireSize(depth))
		}
		var w wireTree
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		if want := base64.StdEncoding.EncodeToString(tr.AppendLeaves(nil)); w.Leaves != want || w.Depth != depth || w.Range != widest.String() {
			t.Fatalf("depth %d: %s", depth, b)
		}
		var back Tree
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if d, err := Diff(tr, &back); err != nil || len(d) != 0 {
			t.Fatalf("depth %d: round trip differs: %v %v", depth, d, err)
		}
	}
}
