package bti

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"unsafe"
)

// rowIndexBytes writes Rows.db for 20 partitions of blocks index blocks each, every seventh
// block opening a range tombstone.
func rowIndexBytes(t *testing.T, blocks int) []byte {
	var out bytes.Buffer
	w := NewRowIndexWriter(&out)
	for p := range 20 {
		for k := range blocks {
			del := Live
			if k%7 == 3 {
				del = DeletionTime{MarkedForDeleteAt: int64(k), LocalDeletionTime: int64(k)}
			}
			first, last := fmt.Appendf(nil, "ck%06d-%d", 2*k, p), fmt.Appendf(nil, "ck%06d-%d", 2*k+1, p)
			if err := w.AddBlock(first, last, int64(k*100), del); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.FinishPartition([]byte("key"), int64(p)*1_000_000, int64(blocks*100), Live); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// The trie writer packs a waiting branch into bytes as soon as it completes instead of keeping
// it as nodes until its parent is laid out. That must not move a byte: these digests are of
// the files the writer produced before it packed anything, when it kept every node as
// Cassandra's IncrementalTrieWriterPageAware does, step by step.
func TestPackingKeepsTheLayout(t *testing.T) {
	digest := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:8]) }
	cases := []struct {
		name string
		file func() []byte
		want string
	}{
		{"Partitions.db, 100,000 Murmur3 keys", func() []byte { return buildIndex(t, murmurKeys(100_000)) }, "d338392a4633910d"},
		{"Partitions.db, 1,000 Murmur3 keys", func() []byte { return buildIndex(t, murmurKeys(1000)) }, "1007b82299501393"},
		{"Partitions.db, long shared prefixes", func() []byte { return buildIndex(t, byteOrderedKeys()) }, "8528481097fb380b"},
		{"Rows.db, 3 blocks per partition", func() []byte { return rowIndexBytes(t, 3) }, "6e65b87da459e74a"},
		{"Rows.db, 700 blocks per partition", func() []byte { return rowIndexBytes(t, 700) }, "f499f65cae276f9e"},
		{"Rows.db, 20,000 blocks per partition", func() []byte { return rowIndexBytes(t, 20_000) }, "6f2419f5ed4666fd"},
	}
	for _, c := range cases {
		if got := digest(c.file()); got != c.want {
			t.Errorf("%s: digest %s, want %s", c.name, got, c.want)
		}
	}
}

// writerMemory builds the partition index of keys and returns how many trie nodes the writer
// made (it makes one only when none is free, so that is the most it held at once) and the
// most bytes it held besides them: its arena of packed branches and its placed children
// (recycled, never freed, so their capacity is their peak).
func writerMemory(t *testing.T, keys []testKey) (nodes, other int) {
	b := NewPartitionIndexBuilder(&bytes.Buffer{})
	for _, k := range keys {
		if err := b.Add(k.comparable, hashByte(k.key), k.pos); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Finish(nil, nil); err != nil {
		t.Fatal(err)
	}
	other = cap(b.trie.arena)
	for _, class := range b.trie.placed {
		for _, ps := range class {
			other += cap(ps) * int(unsafe.Sizeof(placedChild{}))
		}
	}
	// Every node is back on the free list but the root.
	return len(b.trie.free) + 1, other
}

// The writer holds a few hundred nodes whatever the key count: the path of the last key and
// the children of the nodes on it, each waiting branch below a page packed into bytes and
// each written child placed in 16 bytes, so past the key count where the root's grandchildren
// are all there (256 x 256 for Murmur3 keys) its memory stops growing. Kept as nodes, as
// Cassandra keeps them, they were 69,000 nodes (7.4 MiB) at 800,000 keys, and for half the
// ring grew from 41,000 nodes at 1M keys to 133,000 (14 MiB) at 10M.
func TestPartitionIndexWriterMemoryIsFlat(t *testing.T) {
	small, smallOther := writerMemory(t, murmurKeys(250_000))
	big, bigOther := writerMemory(t, murmurKeys(800_000))
	size := int(unsafe.Sizeof(wnode{}))
	t.Logf("250,000 keys: %d nodes (%d KiB) and %d KiB; 800,000 keys: %d nodes (%d KiB) and %d KiB",
		small, small*size>>10, smallOther>>10, big, big*size>>10, bigOther>>10)
	if small > 2000 || big > 2000 {
		t.Errorf("the writer held %d nodes for 250,000 keys and %d for 800,000: want a few hundred", small, big)
	}
	if big*size+bigOther > (small*size+smallOther)*5/4 {
		t.Errorf("800,000 keys held %d bytes, 250,000 keys %d: memory grows with the keys", big*size+bigOther, small*size+smallOther)
	}
}
