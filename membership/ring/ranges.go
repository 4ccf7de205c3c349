package ring

import (
	"slices"

	"github.com/sluicedb/sluice/sstable/token"
)

// Ranges produced by this package are normalized: none wraps except at the partitioner minimum
// (a range may end at MinToken, meaning "to the end of the ring", and the whole ring is
// (MinToken, MinToken]), so r.Unwrap(MinToken) returns r alone; they do not overlap, adjacent
// ranges are merged, and they are sorted by Left. Two normalized sets holding the same tokens
// are equal element by element.

// atoms works on sorted distinct boundary tokens b: atom k is (b[k-1], b[k]] and atom 0 is the
// wrapping (b[n-1], b[0]]. Every token of an atom lies in the same range of any ring whose
// tokens are all among the boundaries, so an atom can be judged by its right end b[k].

// emit returns the normalized set of the atoms k of bounds for which in(k) holds.
func emit(bounds []int64, in func(k int) bool) token.RangeSet {
	n := len(bounds)
	if n == 0 {
		return nil
	}
	if n == 1 {
		if in(0) {
			return token.RangeSet{{Left: tok(minToken), Right: tok(minToken)}}
		}
		return nil
	}
	type piece struct {
		l, r int64
		end  bool // r is the end of the ring (MinToken)
	}
	var out []piece
	add := func(l, r int64, end bool) {
		if k := len(out) - 1; k >= 0 && !out[k].end && out[k].r == l {
			out[k].r, out[k].end = r, end
			return
		}
		out = append(out, piece{l, r, end})
	}
	wrap := in(0)
	if wrap && bounds[0] != minToken {
		add(minToken, bounds[0], false)
	}
	for k := 1; k < n; k++ {
		if in(k) {
			add(bounds[k-1], bounds[k], false)
		}
	}
	if wrap {
		add(bounds[n-1], minToken, true)
	}
	rs := make(token.RangeSet, len(out))
	for i, p := range out {
		rs[i] = token.Range{Left: tok(p.l), Right: tok(p.r)}
	}
	return rs
}

// Normalize returns the normalized form of a set of Murmur3 ranges (see the package's range
// conventions): the same tokens, unwrapped at MinToken, merged and sorted. Ranges holding other
// kinds of token are ignored.
func Normalize(rs token.RangeSet) token.RangeSet {
	var bounds []int64
	for _, r := range rs {
		if r.Left.Kind == token.KindMurmur3 && r.Right.Kind == token.KindMurmur3 {
			bounds = append(bounds, r.Left.Long, r.Right.Long)
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	return emit(bounds, func(k int) bool {
		t := tok(bounds[k])
		for _, r := range rs {
			if r.Left.Kind == token.KindMurmur3 && r.Right.Kind == token.KindMurmur3 && r.Contains(t) {
				return true
			}
		}
		return false
	})
}

// union merges the distinct sorted token lists of layouts into one boundary list.
func union(ls ...*layout) []int64 {
	var b []int64
	for _, l := range ls {
		if l != nil {
			b = append(b, l.toks...)
		}
	}
	slices.Sort(b)
	return slices.Compact(b)
}

// Size returns the fraction of the Murmur3 ring a range covers: (Left, Right] spans
// Right-Left tokens modulo 2^64, and Left == Right is the whole ring (1).
func Size(r token.Range) float64 { return width(r.Left.Long, r.Right.Long) }

func width(l, r int64) float64 {
	if l == r {
		return 1
	}
	return float64(uint64(r)-uint64(l)) / (1 << 64)
}
