package bti

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/token"
)

// btiFixtures returns every BTI fixture sstable.
func btiFixtures(t *testing.T) []fixtures.SSTable {
	t.Helper()
	var out []fixtures.SSTable
	for _, s := range fixtures.All(t) {
		if s.Format == "bti" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatal("no BTI fixtures")
	}
	return out
}

// expectedPosition is what Partitions.db must store for a keys.tsv row.
func expectedPosition(k fixtures.Key) int64 {
	if k.IndexPos >= 0 {
		return k.IndexPos
	}
	return ^k.DataPos
}

func hashByte(key []byte) byte {
	_, h1 := token.Hash3x64_128(key, 0)
	return byte(h1)
}

func TestWalkMatchesKeysOracle(t *testing.T) {
	for _, s := range btiFixtures(t) {
		t.Run(s.Name, func(t *testing.T) {
			keys := s.Keys(t)
			p, err := OpenPartitionIndex(s.Read(t, "Partitions.db"))
			if err != nil {
				t.Fatal(err)
			}
			if p.KeyCount != int64(len(keys)) {
				t.Errorf("key count %d, want %d", p.KeyCount, len(keys))
			}
			if !bytes.Equal(p.FirstKey, keys[0].Key) || !bytes.Equal(p.LastKey, keys[len(keys)-1].Key) {
				t.Errorf("first/last %x/%x, want %x/%x", p.FirstKey, p.LastKey, keys[0].Key, keys[len(keys)-1].Key)
			}
			i := 0
			err = p.Walk(func(e PartitionEntry) error {
				if i >= len(keys) {
					t.Fatalf("walk yields more than %d entries", len(keys))
				}
				k := keys[i]
				i++
				comparable := AppendDecoratedKey(nil, token.ByteOrdered.Token(k.Key), k.Key)
				if !bytes.HasPrefix(comparable, e.Prefix) {
					t.Errorf("key %x: path %x is not a prefix of %x", k.Key, e.Prefix, comparable)
				}
				if !e.HasHash || e.HashByte != hashByte(k.Key) {
					t.Errorf("key %x: hash byte %#02x (has %v), want %#02x", k.Key, e.HashByte, e.HasHash, hashByte(k.Key))
				}
				if want := expectedPosition(k); e.Position != want {
					t.Errorf("key %x: position %d, want %d", k.Key, e.Position, want)
				}
				got, ok, err := p.Lookup(comparable)
				if err != nil || !ok || got.Position != e.Position || !bytes.Equal(got.Prefix, e.Prefix) {
					t.Errorf("Lookup(%x) = %+v, %v, %v; want the walked entry %+v", comparable, got, ok, err, e)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if i != len(keys) {
				t.Errorf("walk yielded %d entries, want %d", i, len(keys))
			}
		})
	}
}

func TestRebuildPartitionsByteIdentical(t *testing.T) {
	for _, s := range btiFixtures(t) {
		t.Run(s.Name, func(t *testing.T) {
			want := s.Read(t, "Partitions.db")
			keys := s.Keys(t)
			var out bytes.Buffer
			b := NewPartitionIndexBuilder(&out)
			for _, k := range keys {
				c := AppendDecoratedKey(nil, token.ByteOrdered.Token(k.Key), k.Key)
				if err := b.Add(c, hashByte(k.Key), expectedPosition(k)); err != nil {
					t.Fatal(err)
				}
			}
			size, err := b.Finish(keys[0].Key, keys[len(keys)-1].Key)
			if err != nil {
				t.Fatal(err)
			}
			if size != int64(out.Len()) || !bytes.Equal(out.Bytes(), want) {
				t.Errorf("rebuilt Partitions.db differs:\n got %x\nwant %x", out.Bytes(), want)
			}
		})
	}
}

func TestLookupMisses(t *testing.T) {
	s := btiFixtures(t)[0]
	p, err := OpenPartitionIndex(s.Read(t, "Partitions.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range [][]byte{[]byte("5"), []byte("/"), {}} {
		c := AppendDecoratedKey(nil, token.ByteOrdered.Token(key), key)
		if e, ok, err := p.Lookup(c); err != nil || ok {
			t.Errorf("Lookup(%x) = %+v, %v, %v; want a miss", c, e, ok, err)
		}
	}
	// A longer key under an existing leaf is a candidate: the trie keeps prefixes only.
	key := []byte("0x")
	c := AppendDecoratedKey(nil, token.ByteOrdered.Token(key), key)
	if _, ok, err := p.Lookup(c); err != nil || !ok {
		t.Errorf("Lookup(%x): want a prefix candidate, got %v, %v", c, ok, err)
	}
}

func TestOpenPartitionIndexRejectsBadFooters(t *testing.T) {
	good := btiFixtures(t)[0].Read(t, "Partitions.db")
	f := len(good) - footerSize
	mutate := func(off int, v int64) []byte {
		b := bytes.Clone(good)
		copy(b[off:], encoding.AppendI64(nil, v))
		return b
	}
	for name, b := range map[string][]byte{
		"short":               good[:10],
		"firstKeyPos past":    mutate(f, int64(f+1)),
		"firstKeyPos zero":    mutate(f, 0),
		"negative count":      mutate(f+8, -1),
		"root past trie":      mutate(f+16, int64(f)),
		"negative root":       mutate(f+16, -5),
		"key past footer":     append(bytes.Clone(good[:f-1]), good[f:]...),
		"extra bytes in keys": mutate(f, int64(f-7)),
	} {
		if _, err := OpenPartitionIndex(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
		var oe *encoding.OffsetError
		if _, err := OpenPartitionIndex(b); !errors.As(err, &oe) {
			t.Errorf("%s: err %v carries no offset", name, err)
		}
	}
}

// WalkFrom a key's form walks from that key's partition; from a form that is no key's, from
// the first partition above it; either way exactly the entries Walk gives from there, in an
// index held in memory and one read through its cache.
func TestPartitionIndexWalkFrom(t *testing.T) {
	keys := murmurKeys(20000)
	b := buildIndex(t, keys)
	mem, err := OpenPartitionIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	paged, err := openPartitionIndexPaged(bytes.NewReader(b), int64(len(b)), 4096, 4)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		prefix string
		pos    int64
	}
	var all []entry
	if err := mem.Walk(func(e PartitionEntry) error {
		all = append(all, entry{string(e.Prefix), e.Position})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(all) != len(keys) {
		t.Fatalf("walked %d of %d", len(all), len(keys))
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, p := range []*PartitionIndex{mem, paged} {
		for range 300 {
			var from []byte
			switch k := rnd.IntN(len(keys)); rnd.IntN(4) {
			case 0:
				from = keys[k].comparable
			case 1:
				from = []byte(all[k].prefix[:rnd.IntN(len(all[k].prefix))]) // a path cut short
			case 2:
				from = []byte{0xFF, 0xFF} // above every key
			default:
				from = []byte{0x40}
				for range 1 + rnd.IntN(10) {
					from = append(from, byte(rnd.IntN(256)))
				}
			}
			// The entries from the first whose path is a prefix of from (the partition Lookup
			// finds: paths are prefix-free, each a leaf) or sorts above it.
			i := 0
			for i < len(all) && all[i].prefix < string(from) && !bytes.HasPrefix(from, []byte(all[i].prefix)) {
				i++
			}
			var got []entry
			stop := errors.New("stop")
			err := p.WalkFrom(from, func(e PartitionEntry) error {
				got = append(got, entry{string(e.Prefix), e.Position})
				if len(got) == 50 {
					return stop
				}
				return nil
			})
			if err != nil && err != stop {
				t.Fatal(err)
			}
			if e, ok, err := p.Lookup(from); err != nil || (ok && (len(got) == 0 || got[0] != entry{string(e.Prefix), e.Position})) {
				t.Fatalf("from %x: Lookup finds %x at %d (%v, %v), the walk starts at %v", from, e.Prefix, e.Position, ok, err, got[:min(1, len(got))])
			}
			want := all[i:min(i+50, len(all))]
			if len(got) != len(want) {
				t.Fatalf("from %x (entry %d): %d entries, want %d", from, i, len(got), len(want))
			}
			for j := range want {
				if got[j] != want[j] {
					t.Fatalf("from %x (entry %d): entry %d is %x at %d, want %x at %d", from, i, j, got[j].prefix, got[j].pos, want[j].prefix, want[j].pos)
				}
			}
		}
	}
}
