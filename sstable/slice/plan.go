package slice

import (
	"errors"
	"fmt"
	"sort"

	"github.com/sluicedb/sluice/sstable/token"
)

// ErrOverlap reports requested ranges that share tokens: a partition must land in one child.
var ErrOverlap = errors.New("token ranges overlap")

// piece is a non-wrapping part of one requested range. A wrapping range becomes two pieces
// (one each side of the ring's minimum), and each piece with partitions becomes one child:
// a child must be one contiguous run of the parent.
type piece struct {
	rng   int         // index of the requested range
	r     token.Range // non-wrapping, or ending at the minimum token (to the end of the ring)
	toEnd bool        // Right is the minimum token: the piece runs to the end of the ring
}

// Pieces unwraps ranges into ordered, disjoint pieces, or reports overlapping ranges.
type Pieces struct {
	min    token.Token
	pieces []piece
}

// NewPieces prepares a range set for lookups.
func NewPieces(p token.Partitioner, ranges token.RangeSet) (*Pieces, error) {
	min := p.MinToken()
	ps := &Pieces{min: min}
	for i, r := range ranges {
		if r.Left.Equal(r.Right) {
			// The whole ring: everything from the minimum.
			ps.pieces = append(ps.pieces, piece{rng: i, r: token.Range{Left: min, Right: min}, toEnd: true})
			continue
		}
		for _, u := range r.Unwrap(min) {
			ps.pieces = append(ps.pieces, piece{rng: i, r: u, toEnd: u.Right.Equal(min)})
		}
	}
	sort.Slice(ps.pieces, func(a, b int) bool { return ps.pieces[a].r.Left.Compare(ps.pieces[b].r.Left) < 0 })
	for k := 1; k < len(ps.pieces); k++ {
		prev, cur := ps.pieces[k-1], ps.pieces[k]
		if prev.toEnd || cur.r.Left.Compare(prev.r.Right) < 0 {
			return nil, fmt.Errorf("%w: %s and %s", ErrOverlap, ranges[prev.rng], ranges[cur.rng])
		}
	}
	return ps, nil
}

// Len is the number of pieces.
func (ps *Pieces) Len() int { return len(ps.pieces) }

// Range is the requested range piece k belongs to, and its index in the request.
func (ps *Pieces) Range(k int) (token.Range, int) { return ps.pieces[k].r, ps.pieces[k].rng }

// holds reports whether piece k holds t.
func (ps *Pieces) holds(k int, t token.Token) bool {
	p := &ps.pieces[k]
	return t.Compare(p.r.Left) > 0 && (p.toEnd || t.Compare(p.r.Right) <= 0)
}

// Find returns the piece holding t, or -1.
func (ps *Pieces) Find(t token.Token) int {
	k, in := ps.locate(t)
	if !in {
		return -1
	}
	return k
}

// locate returns the last piece whose Left is below t (-1 if none) and whether it holds t.
func (ps *Pieces) locate(t token.Token) (int, bool) {
	k := sort.Search(len(ps.pieces), func(k int) bool { return ps.pieces[k].r.Left.Compare(t) >= 0 }) - 1
	if k < 0 {
		return -1, false
	}
	p := &ps.pieces[k]
	return k, p.toEnd || t.Compare(p.r.Right) <= 0
}

// inGap reports whether t lies between the right end of piece g-1 and the left end of piece g
// (g-1 = -1: from the ring's start; g = Len(): to its end), in no piece.
func (ps *Pieces) inGap(g int, t token.Token) bool {
	return (g == 0 || t.Compare(ps.pieces[g-1].r.Right) > 0) && (g == len(ps.pieces) || t.Compare(ps.pieces[g].r.Left) <= 0)
}

// RunPlan is one run of a child: consecutive parent partitions that one piece selects, in
// parent Data.db [Lo, Hi).
type RunPlan struct {
	FirstOrdinal int64
	Partitions   int64
	Lo, Hi       int64
	// IndexLo and IndexHi are the run's entries in a BIG parent's Index.db, [IndexLo, IndexHi),
	// when the pass that planned it recorded them (planMeasured); IndexHi is 0 otherwise.
	IndexLo, IndexHi int64
}

// ChildPlan is one child: one run (split: one child per piece) or every run a parent has for
// a range set (slice, streaming, cleanup: one child per parent), in parent order. The scalar
// fields summarise the runs: the first run's ordinal and Lo, the last run's Hi, the total
// partition count, the first key (a dead head's filler sorts before it), the first and last
// token.
type ChildPlan struct {
	Piece        int
	Range        token.Range // the requested range of the first run (split: the child's range)
	RangeIndex   int
	FirstOrdinal int64
	Partitions   int64
	Lo, Hi       int64
	First        []byte
	FirstTok     token.Token
	LastTok      token.Token
	Runs         []RunPlan
	// IndexBytes is the length of the child's index slice (AppendIndexRecord records), when
	// the pass that planned it measured them (planMeasured); Merge adds them up.
	IndexBytes int64
}

// Contains reports whether ordinal is a partition of one of the child's runs; ordinals must
// be asked in increasing order from run k on, and the returned k is where to ask next.
func (c *ChildPlan) Contains(k int, ordinal int64) (int, bool) {
	for k < len(c.Runs) && ordinal >= c.Runs[k].FirstOrdinal+c.Runs[k].Partitions {
		k++
	}
	return k, k < len(c.Runs) && ordinal >= c.Runs[k].FirstOrdinal
}

// LastOrdinal is the ordinal of the child's last partition.
func (c *ChildPlan) LastOrdinal() int64 {
	r := c.Runs[len(c.Runs)-1]
	return r.FirstOrdinal + r.Partitions - 1
}

// Merge makes one child of every run of plans (which are in parent order, as the Planner
// returns them). Runs that touch (a range set that splits adjacent partitions between two
// ranges) become one run.
func Merge(plans []ChildPlan) ChildPlan {
	c := plans[0]
	c.Runs = nil
	c.Partitions, c.IndexBytes = 0, 0
	for _, p := range plans {
		c.IndexBytes += p.IndexBytes
		for _, r := range p.Runs {
			if n := len(c.Runs); n > 0 && c.Runs[n-1].Hi == r.Lo && c.Runs[n-1].FirstOrdinal+c.Runs[n-1].Partitions == r.FirstOrdinal {
				c.Runs[n-1].Hi, c.Runs[n-1].IndexHi = r.Hi, r.IndexHi
				c.Runs[n-1].Partitions += r.Partitions
			} else {
				c.Runs = append(c.Runs, r)
			}
			c.Partitions += r.Partitions
		}
	}
	last := plans[len(plans)-1]
	c.Hi, c.LastTok = last.Hi, last.LastTok
	return c
}

// Planner accumulates children from the partition index in order. Feed every partition with
// Add, then call Finish with the parent's uncompressed data length. It is pure: the caller
// does the scan.
type Planner struct {
	ps       *Pieces
	children []ChildPlan
	cur      int // index into children of the open child, -1 if none
	// gap, when no child is open and not -1, is the gap between pieces the last partition
	// fell in (Pieces.inGap): the next ones are checked against it before a search.
	gap int
	// last is the token of the open child's last partition so far (its bytes in lastBuf for
	// a byte-ordered token), cloned into the child when it closes: most partitions continue
	// a child, and are not cloned.
	last    token.Token
	lastBuf []byte
	n       int64
}

// NewPlanner starts a plan.
func NewPlanner(ps *Pieces) *Planner { return &Planner{ps: ps, cur: -1, gap: -1} }

// Add places one partition (in index order) and returns the index of the child it joined in
// the plan Finish returns, or -1. Index order is token order: most partitions continue the
// child of the one before, or the gap between pieces of the one before, and cost two token
// comparisons; the answer does not depend on the order, only the cost.
func (pl *Planner) Add(ordinal int64, key []byte, t token.Token, position int64) int {
	pl.n++
	if pl.cur >= 0 {
		c := &pl.children[pl.cur]
		if pl.ps.holds(c.Piece, t) {
			c.Partitions++
			pl.setLast(t)
			return pl.cur
		}
		pl.close(position)
	} else if pl.gap >= 0 && pl.ps.inGap(pl.gap, t) {
		return -1
	}
	k, in := pl.ps.locate(t)
	if !in {
		pl.gap = k + 1
		return -1
	}
	pl.gap = -1
	_, ri := pl.ps.Range(k)
	pl.children = append(pl.children, ChildPlan{Piece: k, RangeIndex: ri, FirstOrdinal: ordinal, Lo: position,
		First: append([]byte(nil), key...), FirstTok: cloneToken(t), Partitions: 1})
	pl.cur = len(pl.children) - 1
	pl.setLast(t)
	return pl.cur
}

func (pl *Planner) setLast(t token.Token) {
	pl.last = t
	if t.Bytes != nil {
		pl.lastBuf = append(pl.lastBuf[:0], t.Bytes...)
		pl.last.Bytes = pl.lastBuf
	}
}

// close ends the open child before the partition at position.
func (pl *Planner) close(position int64) {
	c := &pl.children[pl.cur]
	c.Hi, c.LastTok = position, cloneToken(pl.last)
	pl.cur = -1
}

// Append continues pl's plan with next's, a plan of the partitions that follow pl's (the
// first of them at data position pos), made apart (in parallel): next's ordinals follow pl's,
// and a child open at pl's end continues into next's first child when that starts with
// next's first partition in the same piece. The plan is then the one a single Planner fed
// every partition would have made. It reports whether pl's last child and next's first became
// one. next is not used again.
func (pl *Planner) Append(next *Planner, pos int64) (joined bool) {
	if next.n == 0 {
		return false
	}
	base := len(pl.children)
	for i := range next.children {
		next.children[i].FirstOrdinal += pl.n
	}
	nc := next.children
	if pl.cur >= 0 {
		c := &pl.children[pl.cur]
		if len(nc) > 0 && nc[0].FirstOrdinal == pl.n && nc[0].Piece == c.Piece {
			joined = true
			// Where next closed it (a child still open gets both when it closes).
			c.Partitions, c.Hi, c.LastTok = c.Partitions+nc[0].Partitions, nc[0].Hi, nc[0].LastTok
			nc = nc[1:]
			base--
		} else {
			pl.close(pos)
		}
	}
	pl.children = append(pl.children, nc...)
	pl.cur, pl.gap = -1, next.gap
	if next.cur >= 0 {
		pl.cur = base + next.cur
		pl.setLast(next.last)
	}
	pl.n += next.n
	return joined
}

// Partitions is the number of partitions added so far.
func (pl *Planner) Partitions() int64 { return pl.n }

func cloneToken(t token.Token) token.Token {
	if t.Bytes != nil {
		t.Bytes = append([]byte(nil), t.Bytes...)
	}
	return t
}

// Finish closes the plan; dataLength ends the last partition.
func (pl *Planner) Finish(ranges token.RangeSet, dataLength int64) []ChildPlan {
	if pl.cur >= 0 {
		pl.close(dataLength)
	}
	for i := range pl.children {
		c := &pl.children[i]
		c.Range = ranges[c.RangeIndex]
		c.Runs = []RunPlan{{FirstOrdinal: c.FirstOrdinal, Partitions: c.Partitions, Lo: c.Lo, Hi: c.Hi}}
	}
	return pl.children
}
