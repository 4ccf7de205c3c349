package repair

import (
	"math"

	"github.com/sluicedb/sluice/sstable/token"
)

// Intersect returns the tokens two normalized Murmur3 range sets (see ring.Normalize: sorted,
// disjoint, wrapping only to the end of the ring) have in common, normalized likewise.
func Intersect(a, b token.RangeSet) token.RangeSet {
	var out token.RangeSet
	for _, x := range a {
		xl, xr := span(x)
		for _, y := range b {
			yl, yr := span(y)
			if max(xl, yl) >= min(xr, yr) {
				continue
			}
			left, right := x.Left, x.Right
			if yl > xl {
				left = y.Left
			}
			if yr < xr {
				right = y.Right
			}
			if n := len(out); n > 0 && out[n-1].Right.Equal(left) && !out[n-1].Right.Equal(token.Murmur3.MinToken()) {
				out[n-1].Right = right
				continue
			}
			out = append(out, token.Range{Left: left, Right: right})
		}
	}
	return out
}

// span maps a normalized range to (l, r] over the tokens shifted to unsigned order
// (t + 2^63), the end of the ring becoming MaxUint64.
func span(r token.Range) (l, rt uint64) {
	l = uint64(r.Left.Long) ^ 1<<63
	if r.Right.Long == math.MinInt64 {
		return l, math.MaxUint64
	}
	return l, uint64(r.Right.Long) ^ 1<<63
}
