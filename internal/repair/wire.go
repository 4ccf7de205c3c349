package repair

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

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

// MarshalJSON encodes the tree as {"range": "(l,r]", "depth": d, "leaves": base64}.
func (t *Tree) MarshalJSON() ([]byte, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(wireTree{Range: t.Range.String(), Depth: t.Depth,
		Leaves: base64.StdEncoding.EncodeToString(t.AppendLeaves(make([]byte, 0, leafSize*len(t.Leaves))))})
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
