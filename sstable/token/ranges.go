package token

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Range is Cassandra's (Left, Right] token range. It wraps when Left >= Right: it then holds
// every token > Left and every token <= Right. Left == Right is the whole ring.
type Range struct {
	Left, Right Token
}

// ErrBadRange reports an unparseable range specification.
var ErrBadRange = errors.New("bad token range")

// Contains reports whether t is in the range.
func (r Range) Contains(t Token) bool {
	c := r.Left.Compare(r.Right)
	switch {
	case c == 0:
		return true
	case c < 0:
		return t.Compare(r.Left) > 0 && t.Compare(r.Right) <= 0
	default:
		return t.Compare(r.Left) > 0 || t.Compare(r.Right) <= 0
	}
}

// Width is the number of tokens of a Murmur3 range: 2^64 for the whole ring (Left == Right).
func (r Range) Width() float64 {
	if r.Left.Long == r.Right.Long {
		return math.Exp2(64)
	}
	return float64(uint64(r.Right.Long) - uint64(r.Left.Long))
}

// RingShare is the share of the Murmur3 ring the set covers (1 for the whole ring, at most 1
// for overlapping ranges); false for other partitioners' tokens, whose ring has no width.
func (s RangeSet) RingShare() (float64, bool) {
	var w float64
	for _, r := range s {
		if r.Left.Kind != KindMurmur3 || r.Right.Kind != KindMurmur3 {
			return 0, false
		}
		w += r.Width()
	}
	return min(1, w/math.Exp2(64)), true
}

// IsWrapping reports Left >= Right (the full ring counts as wrapping).
func (r Range) IsWrapping() bool { return r.Left.Compare(r.Right) >= 0 }

// Unwrap splits a wrapping range at the partitioner minimum into (Left, min] and (min, Right],
// as Range.unwrap does; a range whose Right is min already runs to the end of the ring and is
// returned alone. A non-wrapping range is returned as is.
func (r Range) Unwrap(min Token) []Range {
	if !r.IsWrapping() || r.Right.Equal(min) {
		return []Range{r}
	}
	return []Range{{Left: r.Left, Right: min}, {Left: min, Right: r.Right}}
}

func (r Range) String() string { return "(" + r.Left.String() + "," + r.Right.String() + "]" }

// RangeSet is a list of ranges; a token is in the set when any range contains it.
type RangeSet []Range

func (s RangeSet) Contains(t Token) bool {
	for _, r := range s {
		if r.Contains(t) {
			return true
		}
	}
	return false
}

func (s RangeSet) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// ParseRanges reads a comma-separated list of ranges such as "(-100,250],(300,-200]".
func ParseRanges(p Partitioner, spec string) (RangeSet, error) {
	var out RangeSet
	s := strings.TrimSpace(spec)
	if s == "" {
		return nil, fmt.Errorf("%w: empty specification", ErrBadRange)
	}
	for len(s) > 0 {
		if s[0] != '(' {
			return nil, fmt.Errorf("%w: %q: expected '(' at %q", ErrBadRange, spec, s)
		}
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return nil, fmt.Errorf("%w: %q: missing ']'", ErrBadRange, spec)
		}
		body := s[1:end]
		comma := strings.IndexByte(body, ',')
		if comma < 0 {
			return nil, fmt.Errorf("%w: %q: expected (left,right]", ErrBadRange, spec)
		}
		l, err := p.ParseToken(strings.TrimSpace(body[:comma]))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadRange, err)
		}
		r, err := p.ParseToken(strings.TrimSpace(body[comma+1:]))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadRange, err)
		}
		out = append(out, Range{Left: l, Right: r})
		s = strings.TrimSpace(s[end+1:])
		if strings.HasPrefix(s, ",") {
			s = strings.TrimSpace(s[1:])
			if s == "" {
				return nil, fmt.Errorf("%w: %q: trailing comma", ErrBadRange, spec)
			}
		} else if s != "" {
			return nil, fmt.Errorf("%w: %q: expected ',' at %q", ErrBadRange, spec, s)
		}
	}
	return out, nil
}

// Within answers whether tokens fall in a RangeSet for a pass that asks in increasing order:
// each question starts with the range that held the last token, so most cost a comparison or
// two; a token the cached range does not hold costs a look at every range.
type Within struct {
	rs RangeSet
	k  int // the range that held the last token, or -1
}

// Within starts a pass over s.
func (s RangeSet) Within() *Within { return &Within{rs: s, k: -1} }

// Holds reports whether a range of the set holds t.
func (w *Within) Holds(t Token) bool {
	if w.k >= 0 && w.rs[w.k].Contains(t) {
		return true
	}
	for i := range w.rs {
		if w.rs[i].Contains(t) {
			w.k = i
			return true
		}
	}
	return false
}
