package repair

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sluicedb/sluice/sstable/token"
)

// leafSize is a leaf's encoded size: its hash and partition count, little-endian.
const leafSize = 16

// wireTree is a Tree's JSON form; the leaves are base64 of leafSize bytes each, so a tree of
// the maximum depth stays well under a megabyte.
type wireTree struct {
	Range  string `json:"range"`
	Depth  int    `json:"depth"`
	Leaves string `json:"leaves"`
}

// AppendLeaves appends the encoding of the leaves to dst.
func (t *Tree) AppendLeaves(dst []byte) []byte {
	for _, l := range t.Leaves {
		dst = binary.LittleEndian.AppendUint64(dst, l.Hash)
		dst = binary.LittleEndian.AppendUint64(dst, l.Partitions)
	}
	return dst
}

// ParseLeaves decodes the leaves of a tree of the given depth.
func ParseLeaves(b []byte, depth int) ([]Leaf, error) {
	if depth < 0 || depth > MaxDepth {
		return nil, fmt.Errorf("%w: depth %d outside [0, %d]", ErrBadTree, depth, MaxDepth)
	}
	if len(b) != leafSize<<depth {
		return nil, fmt.Errorf("%w: %d bytes of leaves for depth %d, want %d", ErrBadTree, len(b), depth, leafSize<<depth)
	}
	out := make([]Leaf, 1<<depth)
	for i := range out {
		out[i] = Leaf{Hash: binary.LittleEndian.Uint64(b[i*leafSize:]), Partitions: binary.LittleEndian.Uint64(b[i*leafSize+8:])}
	}
	return out, nil
}

// MarshalJSON encodes the tree as {"range": "(l,r]", "depth": d, "leaves": base64} (AppendJSON
// into a buffer of TreeWireSize(depth) bytes).
func (t *Tree) MarshalJSON() ([]byte, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	return t.AppendJSON(make([]byte, 0, TreeWireSize(t.Depth))), nil
}

// AppendJSON appends what MarshalJSON returns, adding at most TreeWireSize(depth) bytes: the
// leaves are encoded three at a time (48 bytes, whole base64 quanta) straight into dst, so an
// answer of many trees is one buffer and no copy. The tree must be valid (as Build and
// UnmarshalJSON make them).
func (t *Tree) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"range":"`...)
	dst = append(dst, t.Range.String()...)
	dst = append(dst, `","depth":`...)
	dst = strconv.AppendInt(dst, int64(t.Depth), 10)
	dst = append(dst, `,"leaves":"`...)
	var chunk [3 * leafSize]byte
	for i := 0; i < len(t.Leaves); i += 3 {
		n := 0
		for _, l := range t.Leaves[i:min(i+3, len(t.Leaves))] {
			binary.LittleEndian.PutUint64(chunk[n:], l.Hash)
			binary.LittleEndian.PutUint64(chunk[n+8:], l.Partitions)
			n += leafSize
		}
		dst = base64.StdEncoding.AppendEncode(dst, chunk[:n])
	}
	return append(dst, `"}`...)
}

// treeEnvelope is the longest JSON of a tree without its leaves: the widest Murmur3 range and
// a two-digit depth.
const treeEnvelope = len(`{"range":"(-9223372036854775808,-9223372036854775808]","depth":15,"leaves":""}`)

// TreeWireSize bounds the bytes of a tree's JSON form (MarshalJSON) at depth: what a peer's
// answer holds per tree, known before the tree is built.
func TreeWireSize(depth int) int {
	return treeEnvelope + base64.StdEncoding.EncodedLen(leafSize<<depth)
}

// UnmarshalJSON decodes what MarshalJSON encodes, checking the range, depth and leaf count.
func (t *Tree) UnmarshalJSON(b []byte) error {
	var w wireTree
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("%w: %w", ErrBadTree, err)
	}
	rs, err := token.ParseRanges(token.Murmur3, w.Range)
	if err != nil || len(rs) != 1 {
		return fmt.Errorf("%w: range %q: want one range (%v)", ErrBadTree, w.Range, err)
	}
	if w.Depth < 0 || w.Depth > MaxDepth || base64.StdEncoding.DecodedLen(len(w.Leaves)) > leafSize<<w.Depth+3 {
		return fmt.Errorf("%w: depth %d with %d base64 characters of leaves", ErrBadTree, w.Depth, len(w.Leaves))
	}
	raw, err := base64.StdEncoding.DecodeString(w.Leaves)
	if err != nil {
		return fmt.Errorf("%w: leaves: %w", ErrBadTree, err)
	}
	leaves, err := ParseLeaves(raw, w.Depth)
	if err != nil {
		return err
	}
	*t = Tree{Range: rs[0], Depth: w.Depth, Leaves: leaves}
	return nil
}
