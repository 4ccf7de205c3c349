package bti

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

// testKey is a partition for the generated-index tests.
type testKey struct {
	key, comparable []byte
	pos             int64
}

func murmurKeys(n int) []testKey {
	keys := make([]testKey, n)
	for i := range keys {
		k := binary.BigEndian.AppendUint32(nil, uint32(i))
		keys[i] = testKey{key: k, comparable: AppendDecoratedKey(nil, token.Murmur3.Token(k), k)}
	}
	slices.SortFunc(keys, func(a, b testKey) int { return bytes.Compare(a.comparable, b.comparable) })
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range keys {
		// Mix Rows.db positions and ^Data.db positions of every payload size.
		v := rnd.Int64N(int64(1) << (4 + rnd.IntN(59)))
		if i%3 == 0 {
			v = ^v
		}
		keys[i].pos = v
	}
	return keys
}

// byteOrderedKeys makes keys with long shared prefixes, zero bytes (escaping) and keys long
// enough that their distinguishing prefixes alone exceed a page.
func byteOrderedKeys() []testKey {
	var raw [][]byte
	long := bytes.Repeat([]byte("x"), 6000)
	for i := range 3000 {
		raw = append(raw, fmt.Appendf(nil, "tenant/%03d/user/%06d", i%7, i*7919%100003))
	}
	for i := range 40 {
		k := append(bytes.Clone(long), fmt.Appendf(nil, "%04d", i)...)
		raw = append(raw, k)
		raw = append(raw, append(bytes.Clone(long[:4000+i*50]), 0, 0, byte(i)))
	}
	for i := range 300 {
		raw = append(raw, []byte{0, 0, byte(i >> 8), byte(i), 0})
	}
	slices.SortFunc(raw, bytes.Compare)
	raw = slices.CompactFunc(raw, bytes.Equal)
	keys := make([]testKey, len(raw))
	for i, k := range raw {
		keys[i] = testKey{key: k, comparable: AppendDecoratedKey(nil, token.ByteOrdered.Token(k), k), pos: int64(i) * 977}
	}
	return keys
}

func buildIndex(t testing.TB, keys []testKey) []byte {
	var out bytes.Buffer
	b := NewPartitionIndexBuilder(&out)
	for _, k := range keys {
		if err := b.Add(k.comparable, hashByte(k.key), k.pos); err != nil {
			t.Fatal(err)
		}
	}
	var first, last []byte
	if len(keys) > 0 {
		first, last = keys[0].key, keys[len(keys)-1].key
	}
	if _, err := b.Finish(first, last); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// checkNodes visits every node reachable from root and checks the page-aware invariant: no
// node (with its payload) crosses a page boundary. It returns the node types seen.
func checkNodes(t *testing.T, b []byte, root int64, payloadSize func(flags int) int) map[nodeType]int {
	t.Helper()
	types := map[nodeType]int{}
	stack := []int64{root}
	for len(stack) > 0 {
		pos := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nd, err := decodeNode(b, pos)
		if err != nil {
			t.Fatal(err)
		}
		types[nd.typ]++
		end := nd.payloadPos() + int64(payloadSize(nd.flags))
		if pos/pageSize != (end-1)/pageSize {
			t.Fatalf("%s node at %d..%d crosses a page boundary", nd.typ, pos, end)
		}
		for i := range nd.n {
			c, err := nd.child(i)
			if err != nil {
				t.Fatal(err)
			}
			if c >= 0 {
				stack = append(stack, c)
			}
		}
	}
	return types
}

func partitionPayloadSize(flags int) int {
	if flags >= flagHasHashByte {
		return flags - 6
	}
	return flags
}

func verifyIndex(t *testing.T, idx []byte, keys []testKey) map[nodeType]int {
	t.Helper()
	p, err := OpenPartitionIndex(idx)
	if err != nil {
		t.Fatal(err)
	}
	if p.KeyCount != int64(len(keys)) {
		t.Fatalf("key count %d, want %d", p.KeyCount, len(keys))
	}
	i := 0
	err = p.Walk(func(e PartitionEntry) error {
		k := keys[i]
		if !bytes.HasPrefix(k.comparable, e.Prefix) || e.Position != k.pos || e.HashByte != hashByte(k.key) {
			return fmt.Errorf("entry %d: %x pos %d hash %#x; want a prefix of %x, pos %d", i, e.Prefix, e.Position, e.HashByte, k.comparable, k.pos)
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != len(keys) {
		t.Fatalf("walked %d entries, want %d", i, len(keys))
	}
	for _, k := range keys {
		e, ok, err := p.Lookup(k.comparable)
		if err != nil || !ok || e.Position != k.pos {
			t.Fatalf("Lookup(%x) = %+v, %v, %v; want pos %d", k.comparable, e, ok, err, k.pos)
		}
	}
	return checkNodes(t, idx[:p.FirstKeyPos], p.Root, partitionPayloadSize)
}

func TestPartitionIndexMurmur3RoundTrip(t *testing.T) {
	keys := murmurKeys(100_000)
	idx := buildIndex(t, keys)
	types := verifyIndex(t, idx, keys)
	t.Logf("%d keys: %d bytes, node types %v", len(keys), len(idx), types)
	if len(idx) < 50*pageSize {
		t.Errorf("index of %d bytes is too small to exercise page packing", len(idx))
	}
}

func TestPartitionIndexByteOrderedRoundTrip(t *testing.T) {
	keys := byteOrderedKeys()
	idx := buildIndex(t, keys)
	types := verifyIndex(t, idx, keys)
	t.Logf("%d keys: %d bytes, node types %v", len(keys), len(idx), types)
}

func TestPartitionIndexSmallShapes(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 17, 255, 256, 1000} {
		keys := murmurKeys(n)
		verifyIndex(t, buildIndex(t, keys), keys)
	}
}

func TestPartitionIndexBuilderRejectsUnsortedKeys(t *testing.T) {
	b := NewPartitionIndexBuilder(&bytes.Buffer{})
	if err := b.Add([]byte{0x40, 2, 0x38}, 0, 1); err != nil {
		t.Fatal(err)
	}
	for _, k := range [][]byte{{0x40, 1, 0x38}, {0x40, 2, 0x38}, {0x40, 2}} {
		if err := b.Add(k, 0, 2); err == nil {
			t.Errorf("Add(%x) after 400238 accepted", k)
		}
	}
}
