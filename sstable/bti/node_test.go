package bti

import (
	"math"
	"testing"
)

// TestNodeCodecEveryType serializes one node of each of the 16 types (chosen by typeFor
// from its children's distances, as the writer does) and decodes it again.
func TestNodeCodecEveryType(t *testing.T) {
	const nodePos = int64(1) << 44
	seq := func(first, n int) []int {
		var out []int
		for i := range n {
			out = append(out, first+i)
		}
		return out
	}
	for _, tc := range []struct {
		want        nodeType
		transitions []int
		deltas      []int64 // backward distance of each child
		withPayload bool
	}{
		{typePayloadOnly, nil, nil, true},
		{typeSingleNoPayload4, []int{0x41}, []int64{15}, false},
		{typeSingle8, []int{0x41}, []int64{15}, true},
		{typeSingle8, []int{0x00}, []int64{255}, false},
		{typeSingleNoPayload12, []int{0xFF}, []int64{4095}, false},
		{typeSingle16, []int{0x41}, []int64{4095}, true},
		{typeSingle16, []int{0x41}, []int64{65535}, false},
		{typeDense24, []int{0x41}, []int64{1 << 20}, true},
		{typeDense32, []int{0x41}, []int64{1 << 30}, false},
		{typeDense40, []int{0x41}, []int64{1 << 39}, false},
		{typeLongDense, []int{0x41}, []int64{1 << 41}, true},
		{typeSparse8, []int{0x00, 0xFF}, []int64{200, 3}, true},
		{typeSparse12, []int{0x10, 0x80, 0xF0}, []int64{4095, 2000, 1}, false},
		{typeSparse12, []int{0x10, 0xF0}, []int64{4095, 1}, true},
		{typeSparse16, []int{0x10, 0xF0}, []int64{65535, 1}, false},
		{typeSparse24, []int{0x10, 0xF0}, []int64{1 << 23, 1}, true},
		{typeSparse40, []int{0x10, 0xF0}, []int64{1 << 33, 1}, false},
		{typeSparse40, []int{0x10, 0xF0}, []int64{1 << 39, 1}, false},
		{typeDense12, seq(0x30, 5), []int64{19, 16, 12, 8, 4}, true},
		{typeDense12, []int{0x30, 0x32, 0x33}, []int64{4095, 8, 7}, false},
		{typeDense16, seq(0x30, 4), []int64{65535, 9, 8, 7}, true},
		{typeDense24, seq(0x00, 4), []int64{1 << 23, 9, 8, 7}, false},
		{typeDense32, []int{0x01, 0x02, 0x04}, []int64{1 << 31, 9, 7}, true},
		{typeDense40, seq(0xFC, 4), []int64{1 << 39, 3, 2, 1}, false},
		{typeLongDense, seq(0x10, 3), []int64{1 << 42, 3, 2}, true},
	} {
		n := &wnode{filePos: -1, hasOutOfPageChildren: true}
		for i, tr := range tc.transitions {
			n.children = append(n.children, &wnode{transition: tr, filePos: nodePos - tc.deltas[i]})
		}
		if tc.withPayload {
			n.payload = payload{set: true, pos: -12345, hash: 0xAB}
		}
		ty := typeFor(n, nodePos)
		if ty != tc.want {
			t.Errorf("%v %v: typeFor chose %s, want %s", tc.transitions, tc.deltas, ty, tc.want)
			continue
		}
		bits := partitionPayloads.bits(&n.payload)
		b, err := appendNodeBody(nil, ty, n, bits, nodePos)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != sizeofType(ty, n) {
			t.Errorf("%s: wrote %d bytes, sized %d", ty, len(b), sizeofType(ty, n))
		}
		b = partitionPayloads.append(b, &n.payload)
		nd, err := decodeNode(b, 0)
		if err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
		if nd.typ != ty || nd.payload != sizeofType(ty, n) {
			t.Errorf("%s: decoded %s with payload at %d", ty, nd.typ, nd.payload)
		}
		if tc.withPayload != (nd.flags != 0) {
			t.Errorf("%s: payload flags %d", ty, nd.flags)
		}
		if tc.withPayload {
			hash, _, pos, err := partitionPayload(&nd)
			if err != nil || hash != 0xAB || pos != -12345 {
				t.Errorf("%s: payload %#x %d %v", ty, hash, pos, err)
			}
		}
		// Pointers are relative: decode them as if the node sat at nodePos.
		nd.pos = nodePos
		if ty == typeSingleNoPayload4 || ty == typeSingleNoPayload12 {
			nd.pos = 0
		}
		found := 0
		for i := range nd.n {
			c, err := nd.child(i)
			if ty == typeSingleNoPayload4 || ty == typeSingleNoPayload12 {
				c, err = nodePos-int64(childDelta(b, ty)), nil
			}
			if err != nil {
				t.Fatalf("%s: %v", ty, err)
			}
			if c < 0 {
				continue
			}
			if nd.transition(i) != tc.transitions[found] || c != nodePos-tc.deltas[found] {
				t.Errorf("%s child %d: %#x at %d, want %#x at %d", ty, i, nd.transition(i), c, tc.transitions[found], nodePos-tc.deltas[found])
			}
			if nd.search(tc.transitions[found]) != i {
				t.Errorf("%s: search(%#x) != %d", ty, tc.transitions[found], i)
			}
			found++
		}
		if found != len(tc.transitions) {
			t.Errorf("%s: %d children decoded, want %d", ty, found, len(tc.transitions))
		}
	}
}

// childDelta reads the in-header pointer of the two payload-less single types.
func childDelta(b []byte, ty nodeType) int {
	if ty == typeSingleNoPayload4 {
		return int(b[0] & 0xF)
	}
	return int(b[0]&0xF)<<8 | int(b[1])
}

func TestReadNodeRejectsCorruptNodes(t *testing.T) {
	for name, tc := range map[string]struct {
		b   []byte
		pos int64
	}{
		"outside":           {[]byte{0x00}, 1},
		"negative":          {[]byte{0x00}, -1},
		"sparse truncated":  {[]byte{0x50}, 0},
		"sparse pointers":   {[]byte{0x50, 0x03, 1, 2, 3}, 0},
		"dense truncated":   {[]byte{0xa0, 0x30}, 0},
		"dense past 0xff":   {[]byte{0xb0, 0xf0, 0x20, 0, 0}, 0},
		"single truncated":  {[]byte{0x40, 0x41, 0x00}, 0},
		"long dense":        {[]byte{0xf0, 0x00, 0x00, 0, 0, 0}, 0},
		"nopayload12 short": {[]byte{0x30, 0x00}, 0},
	} {
		if _, err := decodeNode(tc.b, tc.pos); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	// Pointers must go backwards and not be zero.
	for name, b := range map[string][]byte{
		"zero":         {0x10, 0x41},
		"before start": {0x21, 0x41, 0x05},
	} {
		pos := int64(len(b) - 2)
		if name == "before start" {
			pos = 0
		}
		nd, err := decodeNode(b, pos)
		if err != nil {
			continue
		}
		if _, err := nd.child(0); err == nil {
			t.Errorf("%s: pointer accepted", name)
		}
	}
}

// decodeNode is readNode over a trie held in b.
func decodeNode(b []byte, pos int64) (node, error) {
	var nd node
	r := memTrie(b)
	err := readNode(&r, pos, &nd, nil)
	return nd, err
}

// nonZeroSize is SizedInts.nonZeroSize: the bytes of a two's complement big-endian integer
// that holds v, at least one.
func TestNonZeroSize(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want int
	}{{0, 1}, {1, 1}, {127, 1}, {128, 2}, {-1, 1}, {-128, 1}, {-129, 2}, {32767, 2}, {32768, 3},
		{1<<55 - 1, 7}, {1 << 55, 8}, {math.MaxInt64, 8}, {math.MinInt64, 8}, {^int64(1 << 40), 6}} {
		if got := nonZeroSize(tc.v); got != tc.want {
			t.Errorf("nonZeroSize(%d) = %d, want %d", tc.v, got, tc.want)
		}
	}
}
