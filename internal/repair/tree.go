package repair

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/cespare/xxhash/v2"

	"github.com/sluicedb/sluice/sstable/token"
)

// MaxDepth bounds a tree's depth: 2^15 leaves of 16 bytes, half a megabyte on the wire.
const MaxDepth = 15

// Leaf is one leaf of a tree: the hash of its partitions' hashes in token order (0 when it has
// none) and how many there are.
type Leaf struct {
	Hash       uint64
	Partitions uint64
}

// Tree is a fixed-depth Merkle tree over one Murmur3 token range (Left, Right]; Left == Right
// is the whole ring. Leaf i covers (b(i), b(i+1)] with b(i) = Left + floor(i*W/2^Depth), W being
// the range's width in tokens, so every leaf has the same width to within one token.
type Tree struct {
	Range  token.Range
	Depth  int
	Leaves []Leaf // 1 << Depth
}

// DepthFor is the depth giving about one partition per leaf for an estimated partition count:
// ceil(log2(partitions)), at most MaxDepth.
func DepthFor(partitions int64) int {
	if partitions <= 1 {
		return 0
	}
	return min(bits.Len64(uint64(partitions-1)), MaxDepth)
}

func checkShape(r token.Range, depth int) error {
	if r.Left.Kind != token.KindMurmur3 || r.Right.Kind != token.KindMurmur3 {
		return fmt.Errorf("%w: range %v is not a Murmur3 range", ErrBadTree, r)
	}
	if depth < 0 || depth > MaxDepth {
		return fmt.Errorf("%w: depth %d outside [0, %d]", ErrBadTree, depth, MaxDepth)
	}
	return nil
}

// width is the range's width in tokens; 0 stands for 2^64 (the whole ring).
func width(r token.Range) uint64 { return uint64(r.Right.Long) - uint64(r.Left.Long) }

// leafIndex returns the leaf of a token inside the range, or false when the range does not
// contain it.
func leafIndex(r token.Range, depth int, t token.Token) (int, bool) {
	if t.Kind != token.KindMurmur3 || !r.Contains(t) {
		return 0, false
	}
	p := uint64(t.Long) - uint64(r.Left.Long) // in [1, W], 0 standing for W = 2^64
	w := width(r)
	if depth == 0 {
		return 0, true
	}
	if w == 0 {
		return int((p - 1) >> (64 - depth)), true
	}
	// leaf i holds p with i < p*2^d/W <= i+1: i = ceil(p*2^d/W) - 1.
	hi, lo := bits.Mul64(p, 1<<depth)
	q, rem := bits.Div64(hi, lo, w)
	if rem != 0 {
		q++
	}
	return int(q - 1), true
}

// bound is b(i) of the leaf layout.
func bound(r token.Range, depth, i int) token.Token {
	var off uint64
	switch w := width(r); {
	case i == 1<<depth:
		return r.Right
	case w == 0:
		off = uint64(i) << (64 - depth)
	default:
		hi, lo := bits.Mul64(uint64(i), w)
		off, _ = bits.Div64(hi, lo, 1<<depth)
	}
	return token.Token{Kind: token.KindMurmur3, Long: int64(uint64(r.Left.Long) + off)}
}

// LeafRange is the token range leaf i covers.
func (t *Tree) LeafRange(i int) token.Range {
	return token.Range{Left: bound(t.Range, t.Depth, i), Right: bound(t.Range, t.Depth, i+1)}
}

// Partitions is the number of partitions the tree covers.
func (t *Tree) Partitions() uint64 {
	var n uint64
	for _, l := range t.Leaves {
		n += l.Partitions
	}
	return n
}

// combine is an inner node's hash: 0 for an empty subtree, so that empty leaves cost nothing.
func combine(a, b uint64) uint64 {
	if a == 0 && b == 0 {
		return 0
	}
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], a)
	binary.LittleEndian.PutUint64(buf[8:], b)
	return xxhash.Sum64(buf[:])
}

// levels returns every level's hashes, the root level first.
func (t *Tree) levels() [][]uint64 {
	out := make([][]uint64, t.Depth+1)
	leaf := make([]uint64, len(t.Leaves))
	for i, l := range t.Leaves {
		leaf[i] = l.Hash
	}
	out[t.Depth] = leaf
	for d := t.Depth - 1; d >= 0; d-- {
		up := make([]uint64, 1<<d)
		for i := range up {
			up[i] = combine(out[d+1][2*i], out[d+1][2*i+1])
		}
		out[d] = up
	}
	return out
}

// Root is the hash of the whole tree.
func (t *Tree) Root() uint64 { return t.levels()[0][0] }

// Diff returns the token ranges of the leaves where two trees of the same range and depth
// differ, adjacent leaves merged.
func Diff(a, b *Tree) (token.RangeSet, error) {
	leaves, err := DiffLeaves(a, b)
	if err != nil {
		return nil, err
	}
	return a.Ranges(leaves), nil
}

// Ranges returns the token ranges of the given leaves (in increasing order), adjacent ones
// merged.
func (t *Tree) Ranges(leaves []int) token.RangeSet {
	var out token.RangeSet
	for _, i := range leaves {
		r := t.LeafRange(i)
		if n := len(out); n > 0 && out[n-1].Right.Equal(r.Left) {
			out[n-1].Right = r.Right
		} else {
			out = append(out, r)
		}
	}
	return out
}

// DiffLeaves returns, in increasing order, the leaves where two trees of the same range and
// depth differ, walking down from the root only into differing subtrees.
func DiffLeaves(a, b *Tree) ([]int, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	if err := b.validate(); err != nil {
		return nil, err
	}
	if a.Depth != b.Depth || !a.Range.Left.Equal(b.Range.Left) || !a.Range.Right.Equal(b.Range.Right) {
		return nil, fmt.Errorf("%w: trees of %v depth %d and %v depth %d", ErrBadTree, a.Range, a.Depth, b.Range, b.Depth)
	}
	la, lb := a.levels(), b.levels()
	var out []int
	var walk func(d, i int)
	walk = func(d, i int) {
		if la[d][i] == lb[d][i] && (d < a.Depth || a.Leaves[i] == b.Leaves[i]) {
			return
		}
		if d == a.Depth {
			out = append(out, i)
			return
		}
		walk(d+1, 2*i)
		walk(d+1, 2*i+1)
	}
	walk(0, 0)
	return out, nil
}

func (t *Tree) validate() error {
	if err := checkShape(t.Range, t.Depth); err != nil {
		return err
	}
	if len(t.Leaves) != 1<<t.Depth {
		return fmt.Errorf("%w: %d leaves for depth %d", ErrBadTree, len(t.Leaves), t.Depth)
	}
	return nil
}

// Builder builds a Tree from partition hashes given in token order (by offset from the range's
// left end, so a range wrapping past the maximum token takes its tokens in ring order).
type Builder struct {
	t    Tree
	leaf int    // leaf being filled
	last uint64 // offset of the last token added
	d    *xxhash.Digest
	buf  [8]byte
	any  bool
}

// NewBuilder starts a tree of the given depth over a Murmur3 range.
func NewBuilder(r token.Range, depth int) (*Builder, error) {
	if err := checkShape(r, depth); err != nil {
		return nil, err
	}
	return &Builder{t: Tree{Range: r, Depth: depth, Leaves: make([]Leaf, 1<<depth)}, d: xxhash.New()}, nil
}

// Add adds a partition of token t with content hash h. Partitions must come in token order;
// several may share a token (in key order, as sstables hold them).
func (b *Builder) Add(t token.Token, h uint64) error {
	i, ok := leafIndex(b.t.Range, b.t.Depth, t)
	if !ok {
		return fmt.Errorf("%w: token %v outside %v", ErrOrder, t, b.t.Range)
	}
	off := uint64(t.Long) - uint64(b.t.Range.Left.Long) - 1
	if b.any && off < b.last {
		return fmt.Errorf("%w: token %v after a greater one", ErrOrder, t)
	}
	if b.any && i != b.leaf {
		b.flush()
	}
	b.leaf, b.last, b.any = i, off, true
	binary.LittleEndian.PutUint64(b.buf[:], h)
	b.d.Write(b.buf[:])
	b.t.Leaves[i].Partitions++
	return nil
}

func (b *Builder) flush() {
	h := b.d.Sum64()
	if h == 0 {
		h = 1 // 0 marks an empty leaf
	}
	b.t.Leaves[b.leaf].Hash = h
	b.d.Reset()
}

// Tree finishes the tree; the Builder must not be used afterwards.
func (b *Builder) Tree() *Tree {
	if b.any {
		b.flush()
		b.any = false
	}
	return &b.t
}
