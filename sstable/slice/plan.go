package slice

import (
	"errors"
	"fmt"
	"sort"

	"github.com/sluicedb/sluice/sstable/compress"
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

// Find returns the piece holding t, or -1.
func (ps *Pieces) Find(t token.Token) int {
	// The last piece whose Left is below t, if its right end admits t.
	k := sort.Search(len(ps.pieces), func(k int) bool { return ps.pieces[k].r.Left.Compare(t) >= 0 }) - 1
	if k < 0 {
		return -1
	}
	p := ps.pieces[k]
	if p.toEnd || t.Compare(p.r.Right) <= 0 {
		return k
	}
	return -1
}

// ChildPlan is one child: a contiguous run of parent partitions that one piece selects.
type ChildPlan struct {
	Piece        int
	Range        token.Range // the requested range (not the piece)
	RangeIndex   int
	FirstOrdinal int64
	Partitions   int64
	Lo, Hi       int64 // parent uncompressed Data.db: start of the first partition, end of the last
	First, Last  []byte
	FirstTok     token.Token
	LastTok      token.Token
}

// Planner accumulates children from the partition index in order. Feed every partition with
// Add, then call Finish with the parent's uncompressed data length. It is pure: the caller
// does the scan.
type Planner struct {
	ps       *Pieces
	children []ChildPlan
	cur      int // index into children of the open child, -1 if none
	prevPos  int64
	n        int64
}

// NewPlanner starts a plan.
func NewPlanner(ps *Pieces) *Planner { return &Planner{ps: ps, cur: -1} }

// Add places one partition (in index order).
func (pl *Planner) Add(ordinal int64, key []byte, t token.Token, position int64) {
	k := pl.ps.Find(t)
	if pl.cur >= 0 && pl.children[pl.cur].Piece != k {
		pl.children[pl.cur].Hi = position
		pl.cur = -1
	}
	if k >= 0 {
		if pl.cur < 0 {
			r, ri := pl.ps.Range(k)
			_ = r
			pl.children = append(pl.children, ChildPlan{Piece: k, RangeIndex: ri, FirstOrdinal: ordinal, Lo: position,
				First: append([]byte(nil), key...), FirstTok: cloneToken(t)})
			pl.cur = len(pl.children) - 1
		}
		c := &pl.children[pl.cur]
		c.Partitions++
		c.Last = append(c.Last[:0], key...)
		c.LastTok = cloneToken(t)
	}
	pl.n++
}

func cloneToken(t token.Token) token.Token {
	if t.Bytes != nil {
		t.Bytes = append([]byte(nil), t.Bytes...)
	}
	return t
}

// Finish closes the plan; dataLength ends the last partition.
func (pl *Planner) Finish(ranges token.RangeSet, dataLength int64) []ChildPlan {
	if pl.cur >= 0 {
		pl.children[pl.cur].Hi = dataLength
	}
	for i := range pl.children {
		pl.children[i].Range = ranges[pl.children[i].RangeIndex]
	}
	return pl.children
}

// Run is where a child's Data.db bytes come from and how its positions map.
type Run struct {
	Lo, Hi     int64 // parent uncompressed range the child's partitions occupy
	FirstChunk int   // parent chunks [FirstChunk, LastChunk]; for uncompressed parents 0, 0
	LastChunk  int
	Shift      int64 // child position = parent position - Shift
	SrcOff     int64 // parent Data.db bytes [SrcOff, SrcEnd) are copied after Pad bytes of head pad
	SrcEnd     int64
	Pad        int64 // head pad: parent bytes [SrcOff-Pad, SrcOff) copied first, keeping offsets block-congruent
	DataLength int64 // the child's uncompressed length
	Dead       int64 // bytes in the child belonging to other partitions: head pad, dead prefix, unaddressable tail
}

// FileLength is the child's Data.db length.
func (r Run) FileLength() int64 { return r.Pad + r.SrcEnd - r.SrcOff }

// Chunks is the child's chunk count (compressed parents).
func (r Run) Chunks() int { return r.LastChunk - r.FirstChunk + 1 }

// LayoutCompressed maps [lo, hi) of a compressed parent to the run of whole chunks that holds
// it (FORMAT.md §5 rules 2-3). align > 1 adds a head pad so that the child's first chunk sits
// at the same offset modulo align as in the parent, which lets FICLONERANGE share its blocks.
func LayoutCompressed(info *compress.Info, fileLength, lo, hi, align int64) Run {
	L := int64(info.ChunkLength)
	i, j := int(lo/L), int((hi-1)/L)
	r := Run{Lo: lo, Hi: hi, FirstChunk: i, LastChunk: j, Shift: int64(i) * L}
	r.SrcOff = info.Offsets[i]
	// The end of chunk j comes from the next offset: the parent's file length only when j is its
	// last entry (a trailing empty chunk after j must not be taken in).
	if j+1 < len(info.Offsets) {
		r.SrcEnd = info.Offsets[j+1]
	} else {
		r.SrcEnd = fileLength
	}
	if align > 1 {
		r.Pad = r.SrcOff % align
	}
	r.DataLength = hi - r.Shift
	chunkEnd := min(int64(j+1)*L, info.DataLength)
	r.Dead = r.Pad + (lo - r.Shift) + (chunkEnd - hi)
	return r
}

// LayoutUncompressed maps [lo, hi) of an uncompressed parent: the bytes themselves, behind a
// head pad when align > 1.
func LayoutUncompressed(lo, hi, align int64) Run {
	r := Run{Lo: lo, Hi: hi, SrcOff: lo, SrcEnd: hi}
	if align > 1 {
		r.Pad = lo % align
	}
	r.Shift = lo - r.Pad
	r.DataLength = hi - r.Shift
	r.Dead = r.Pad
	return r
}

// Info is the child's CompressionInfo.db: the parent's compressor, options, chunk length and
// maxCompressedLength, the run's chunk offsets rebased (after the head pad) and its length.
func (r Run) Info(parent *compress.Info) *compress.Info {
	c := *parent
	c.DataLength = r.DataLength
	c.Offsets = make([]int64, r.Chunks())
	base := parent.Offsets[r.FirstChunk]
	for k := range c.Offsets {
		c.Offsets[k] = r.Pad + parent.Offsets[r.FirstChunk+k] - base
	}
	return &c
}
