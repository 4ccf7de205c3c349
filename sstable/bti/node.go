package bti

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// nodeType is TrieNode.Types' ordinal, the high nibble of a node's first byte.
type nodeType uint8

const (
	typePayloadOnly nodeType = iota
	typeSingleNoPayload4
	typeSingle8
	typeSingleNoPayload12
	typeSingle16
	typeSparse8
	typeSparse12
	typeSparse16
	typeSparse24
	typeSparse40
	typeDense12
	typeDense16
	typeDense24
	typeDense32
	typeDense40
	typeLongDense
)

var typeNames = [16]string{"PAYLOAD_ONLY", "SINGLE_NOPAYLOAD_4", "SINGLE_8", "SINGLE_NOPAYLOAD_12",
	"SINGLE_16", "SPARSE_8", "SPARSE_12", "SPARSE_16", "SPARSE_24", "SPARSE_40", "DENSE_12",
	"DENSE_16", "DENSE_24", "DENSE_32", "DENSE_40", "LONG_DENSE"}

func (t nodeType) String() string { return typeNames[t&15] }

// bytesPerPointer is TrieNode.bytesPerPointer; 0 marks the fractional (4- or 12-bit) types.
var bytesPerPointer = [16]int{0, 0, 1, 0, 2, 1, 0, 2, 3, 5, 0, 2, 3, 4, 5, 8}

// The selection tables of TrieNode.Types, indexed by the pointer-size class that typeFor
// finds with the singles' fits().
var (
	singleTypes = [8]nodeType{typeSingleNoPayload4, typeSingle8, typeSingleNoPayload12, typeSingle16, typeDense24, typeDense32, typeDense40, typeLongDense}
	sparseTypes = [8]nodeType{typeSparse8, typeSparse8, typeSparse12, typeSparse16, typeSparse24, typeSparse40, typeSparse40, typeLongDense}
	denseTypes  = [8]nodeType{typeDense12, typeDense12, typeDense12, typeDense16, typeDense24, typeDense32, typeDense40, typeLongDense}
)

func (t nodeType) isSingle() bool { return t >= typeSingleNoPayload4 && t <= typeSingle16 }
func (t nodeType) isSparse() bool { return t >= typeSparse8 && t <= typeSparse40 }
func (t nodeType) isDense() bool  { return t >= typeDense12 }

// fits is TrieNode.fits: whether a backward distance can be stored in the type's pointers.
func (t nodeType) fits(delta int64) bool {
	switch t {
	case typeSingleNoPayload4:
		return delta >= 0 && delta <= 0xF
	case typeSingleNoPayload12, typeSparse12, typeDense12:
		return delta >= 0 && delta <= 0xFFF
	case typeLongDense:
		return true
	}
	return delta >= 0 && delta < int64(1)<<(8*bytesPerPointer[t])
}

// maxPayloadSize bounds the payload bytes a node carries: a row-index payload's 7-byte offset
// and 12-byte open marker (a partition payload is at most 9). readNode takes that many bytes
// after the node, or what the trie area has, so payloads decode from the node's own copy.
const maxPayloadSize = 7 + deletionTimeSize

// node is a decoded trie node. b holds its bytes from pos: header, transitions and pointers,
// then up to maxPayloadSize payload bytes (fewer where the trie area ends). Offsets into b
// are relative to pos. A paged node with children owns a copy, as its children are read
// while it is in use; a leaf's bytes may alias the cache, valid until the next read.
type node struct {
	pos     int64
	b       []byte
	typ     nodeType
	flags   int // payload bits; 0 for the types that cannot carry a payload
	n       int // transition range (child slots)
	first   int // dense: first transition byte
	trans   int // sparse: offset of the transition bytes; single: offset of the byte
	ptrs    int // offset of the pointer area
	payload int // first byte after the node, where its payload starts
}

// payloadPos is where the node's payload starts in the file.
func (nd *node) payloadPos() int64 { return nd.pos + int64(nd.payload) }

// readNode decodes the node at pos into nd, checking that the node itself lies inside the
// trie area. Paged, a node with children gets a copy of its bytes in *buf (its children are
// read while it is in use); a leaf aliases the cache unless it crosses a block boundary.
func readNode(r *trieReader, pos int64, nd *node, buf *[]byte) error {
	if pos < 0 || pos >= r.size {
		return corruptAt(pos, "trie node position outside the file (size %d)", r.size)
	}
	w, err := r.window(pos)
	if err != nil {
		return err
	}
	// The header (type, and a sparse node's count or a dense node's range) is in the first
	// three bytes; they give the node's length.
	h := w
	var hb [3]byte
	if hn := min(3, r.size-pos); int64(len(h)) < hn {
		if h, err = hb[:hn], r.cache.copyAt(hb[:hn], pos); err != nil {
			return err
		}
	}
	*nd = node{pos: pos, typ: nodeType(h[0] >> 4), flags: int(h[0] & 0xF)}
	need := func(end int) error {
		if pos+int64(end) > r.size {
			return corruptAt(pos, "%s node runs past the end of the file", nd.typ)
		}
		return nil
	}
	switch t := nd.typ; {
	case t == typePayloadOnly:
		nd.payload = 1
	case t == typeSingleNoPayload4:
		nd.flags, nd.n, nd.trans, nd.payload = 0, 1, 1, 2
	case t == typeSingleNoPayload12:
		nd.flags, nd.n, nd.trans, nd.payload = 0, 1, 2, 3
	case t.isSingle():
		nd.n, nd.trans, nd.ptrs = 1, 1, 2
		nd.payload = 2 + bytesPerPointer[t]
	case t.isSparse():
		if err := need(2); err != nil {
			return err
		}
		nd.n = int(h[1])
		nd.trans = 2
		nd.ptrs = 2 + nd.n
		if t == typeSparse12 {
			nd.payload = 2 + (5*nd.n+1)/2
		} else {
			nd.payload = nd.ptrs + nd.n*bytesPerPointer[t]
		}
	default: // dense
		if err := need(3); err != nil {
			return err
		}
		nd.first = int(h[1])
		nd.n = int(h[2]) + 1
		if nd.first+nd.n > 256 {
			return corruptAt(pos, "%s node transitions run past 0xFF", t)
		}
		nd.ptrs = 3
		if t == typeDense12 {
			nd.payload = 3 + (nd.n*3+1)/2
		} else {
			nd.payload = 3 + nd.n*bytesPerPointer[t]
		}
	}
	if err := need(nd.payload); err != nil {
		return err
	}
	l := int(min(int64(nd.payload+maxPayloadSize), r.size-pos))
	switch {
	case l <= len(w) && (r.cache == nil || nd.n == 0):
		nd.b = w[:l]
	case l <= len(w):
		if cap(*buf) < l {
			*buf = make([]byte, l, max(l, 64))
		}
		nd.b = (*buf)[:l]
		copy(nd.b, w)
	default:
		nd.b, err = r.copyAt(pos, l, buf)
	}
	return err
}

// transition returns the transition byte of child slot i (0 <= i < n).
func (nd *node) transition(i int) int {
	if nd.typ.isDense() {
		return nd.first + i
	}
	return int(nd.b[nd.trans+i])
}

// child returns the position of child slot i (0 <= i < n), or -1 for an empty dense slot.
// A pointer must go strictly backwards and stay inside the file.
func (nd *node) child(i int) (int64, error) {
	b := nd.b
	var delta uint64
	switch t := nd.typ; t {
	case typeSingleNoPayload4:
		delta = uint64(b[0] & 0xF)
	case typeSingleNoPayload12:
		delta = uint64(binary.BigEndian.Uint16(b) & 0xFFF)
	case typeSparse12, typeDense12:
		delta = uint64(read12(b, nd.ptrs, i))
	default:
		bpp := bytesPerPointer[t]
		p := nd.ptrs + i*bpp
		for _, c := range b[p : p+bpp] {
			delta = delta<<8 | uint64(c)
		}
	}
	if delta == 0 {
		if nd.typ.isDense() {
			return -1, nil
		}
		return 0, corruptAt(nd.pos, "%s node has a zero child pointer", nd.typ)
	}
	if delta > uint64(nd.pos) {
		return 0, corruptAt(nd.pos, "%s node child pointer %d reaches before the file start", nd.typ, delta)
	}
	return nd.pos - int64(delta), nil
}

// read12 is TrieNode.read12Bits: entry i of a packed 12-bit pointer array at base.
func read12(b []byte, base int, i int) int {
	w := int(binary.BigEndian.Uint16(b[base+3*i/2:]))
	if i&1 == 0 {
		w >>= 4
	}
	return w & 0xFFF
}

// search finds the child slot for transition byte c, as TrieNode.search does for an exact
// match; it returns -1 when there is none.
func (nd *node) search(c int) int {
	switch {
	case nd.n == 0:
		return -1
	case nd.typ.isDense():
		i := c - nd.first
		if i < 0 || i >= nd.n {
			return -1
		}
		return i
	case nd.typ.isSingle():
		if int(nd.b[nd.trans]) == c {
			return 0
		}
		return -1
	}
	lo, hi := 0, nd.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch t := int(nd.b[nd.trans+m]); {
		case t == c:
			return m
		case t < c:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// readSized is SizedInts.read: a big-endian signed integer of n (1..8) bytes.
func readSized(p []byte) int64 {
	v := int64(int8(p[0]))
	for _, c := range p[1:] {
		v = v<<8 | int64(c)
	}
	return v
}

// nonZeroSize is SizedInts.nonZeroSize: bytes needed for v as a signed integer, at least 1.
func nonZeroSize(v int64) int {
	if v < 0 {
		v = ^v
	}
	// The magnitude's bits and a sign bit, in whole bytes.
	return (bits.Len64(uint64(v)) + 1 + 7) / 8
}

// appendSized is SizedInts.write.
func appendSized(dst []byte, v int64, size int) []byte {
	for i := size - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*uint(i))))
	}
	return dst
}

// --- Serialization (TrieNode.typeFor / sizeofNode / serialize) ---

// sizeofType is TrieNode.sizeofNode for a node of this writer.
func sizeofType(t nodeType, n *wnode) int {
	c := n.childCount()
	switch {
	case t == typePayloadOnly:
		return 1
	case t == typeSingleNoPayload4:
		return 2
	case t == typeSingleNoPayload12:
		return 3
	case t.isSingle():
		return 2 + bytesPerPointer[t]
	case t == typeSparse12:
		return 2 + (c*5+1)/2
	case t.isSparse():
		return 2 + c*(1+bytesPerPointer[t])
	}
	r := n.childTransition(c-1) - n.childTransition(0) + 1
	if t == typeDense12 {
		return 3 + (r*3+1)/2
	}
	return 3 + r*bytesPerPointer[t]
}

// typeFor is TrieNode.typeFor: the smallest type whose pointers reach the farthest child.
func typeFor(n *wnode, nodePos int64) nodeType {
	c := n.childCount()
	if c == 0 {
		return typePayloadOnly
	}
	delta := n.maxPositionDelta(nodePos)
	i := 0
	for !singleTypes[i].fits(-delta) {
		i++
	}
	if c == 1 {
		if n.payload.set && bytesPerPointer[singleTypes[i]] == 0 {
			i++ // the fractional singles cannot carry a payload
		}
		return singleTypes[i]
	}
	sp, de := sparseTypes[i], denseTypes[i]
	if sizeofType(sp, n) < sizeofType(de, n) {
		return sp
	}
	return de
}

// appendNodeBody is TrieNode.serialize: the node without its payload.
func appendNodeBody(dst []byte, t nodeType, n *wnode, payloadBits int, nodePos int64) ([]byte, error) {
	c := n.childCount()
	delta := func(i int) (int64, error) {
		pos := n.childPos(i)
		if pos < 0 {
			return 0, fmt.Errorf("%w: child %#x of node at %d not written", errInternal, n.childTransition(i), nodePos)
		}
		d := nodePos - pos
		if d <= 0 || !t.fits(d) {
			return 0, fmt.Errorf("%w: pointer %d does not fit %s at %d", errInternal, d, t, nodePos)
		}
		return d, nil
	}
	head := byte(t)<<4 | byte(payloadBits&0xF)
	switch {
	case t == typePayloadOnly:
		return append(dst, head), nil
	case t == typeSingleNoPayload4:
		d, err := delta(0)
		if err != nil {
			return dst, err
		}
		return append(dst, byte(t)<<4|byte(d), byte(n.childTransition(0))), nil
	case t == typeSingleNoPayload12:
		d, err := delta(0)
		if err != nil {
			return dst, err
		}
		return append(dst, byte(t)<<4|byte(d>>8&0xF), byte(d), byte(n.childTransition(0))), nil
	case t.isSingle():
		d, err := delta(0)
		if err != nil {
			return dst, err
		}
		dst = append(dst, head, byte(n.childTransition(0)))
		return appendSized(dst, d, bytesPerPointer[t]), nil
	case t.isSparse():
		dst = append(dst, head, byte(c))
		for i := range c {
			dst = append(dst, byte(n.childTransition(i)))
		}
		if t != typeSparse12 {
			for i := range c {
				d, err := delta(i)
				if err != nil {
					return dst, err
				}
				dst = appendSized(dst, d, bytesPerPointer[t])
			}
			return dst, nil
		}
		i := 0
		for ; i+2 <= c; i += 2 {
			p0, err := delta(i)
			if err != nil {
				return dst, err
			}
			p1, err := delta(i + 1)
			if err != nil {
				return dst, err
			}
			dst = append(dst, byte(p0>>4), byte(p0<<4)|byte(p1>>8), byte(p1))
		}
		if i < c {
			d, err := delta(i)
			if err != nil {
				return dst, err
			}
			dst = append(dst, byte(d>>4), byte(d<<4))
		}
		return dst, nil
	}
	// Dense: slots from the first to the last transition, 0 for absent ones.
	l := n.childTransition(0)
	r := n.childTransition(c - 1)
	dst = append(dst, head, byte(l), byte(r-l))
	start, carry := l, 0
	put := func(v int64) {
		switch t {
		case typeDense12:
			if (l-start)&1 == 0 {
				dst = append(dst, byte(v>>4))
				carry = int(v<<4) & 0xF0
			} else {
				dst = append(dst, byte(carry)|byte(v>>8), byte(v))
				carry = 0
			}
		default:
			dst = appendSized(dst, v, bytesPerPointer[t])
		}
	}
	for i := range c {
		for next := n.childTransition(i); l < next; l++ {
			put(0)
		}
		d, err := delta(i)
		if err != nil {
			return dst, err
		}
		put(d)
		l++
	}
	if t == typeDense12 && (l-start)&1 == 1 {
		dst = append(dst, byte(carry))
	}
	return dst, nil
}

// above is the first child slot whose transition byte is greater than c (n when none).
func (nd *node) above(c int) int {
	switch {
	case nd.n == 0:
		return 0
	case nd.typ.isDense():
		return min(max(c-nd.first+1, 0), nd.n)
	case nd.typ.isSingle():
		if int(nd.b[nd.trans]) > c {
			return 0
		}
		return 1
	}
	lo, hi := 0, nd.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(nd.b[nd.trans+m]) <= c {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
