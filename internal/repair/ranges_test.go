package repair

import (
	"math"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

func TestIntersectOfNormalizedSets(t *testing.T) {
	all := token.RangeSet{rng(minTok, minTok)}
	for _, c := range []struct {
		name string
		a, b token.RangeSet
		want string
	}{
		{"disjoint", token.RangeSet{rng(0, 10)}, token.RangeSet{rng(10, 20)}, ""},
		{"overlap", token.RangeSet{rng(0, 10)}, token.RangeSet{rng(5, 20)}, "(5,10]"},
		{"contained", token.RangeSet{rng(-100, 100)}, token.RangeSet{rng(-5, 5), rng(50, 60)}, "(-5,5],(50,60]"},
		{"whole ring", all, token.RangeSet{rng(-5, 5), rng(50, minTok)}, "(-5,5],(50,-9223372036854775808]"},
		{"to the end on both", token.RangeSet{rng(10, minTok)}, token.RangeSet{rng(20, minTok)}, "(20,-9223372036854775808]"},
		{"to the end against a finite one", token.RangeSet{rng(10, minTok)}, token.RangeSet{rng(0, math.MaxInt64-1)}, "(10,9223372036854775806]"},
		{"adjacent pieces merge", token.RangeSet{rng(0, 10), rng(10, 20)}, token.RangeSet{rng(5, 15)}, "(5,15]"},
		{"empty", nil, all, ""},
	} {
		got := Intersect(c.a, c.b)
		if got.String() != c.want {
			t.Errorf("%s: %v, want %q", c.name, got, c.want)
		}
		if back := Intersect(c.b, c.a); back.String() != c.want {
			t.Errorf("%s reversed: %v, want %q", c.name, back, c.want)
		}
	}
}
