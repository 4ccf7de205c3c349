package stats

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/token"
)

// Cassandra's COMPACTION component is HyperLogLogPlus(13, 25).getBytes() over every partition
// key; recomputing it from the *-keys.tsv oracle must give the fixture's bytes, in sparse
// mode (1 to 35 keys) and in register mode (10,000 keys).
func TestCardinalityReproducesEveryFixture(t *testing.T) {
	for _, f := range fixtures.All(t) {
		t.Run(f.Name, func(t *testing.T) {
			s, err := Parse(f.Read(t, "Statistics.db"), fixtureVersion(t, f))
			if err != nil {
				t.Fatal(err)
			}
			c := NewCardinality()
			for _, k := range f.Keys(t) {
				c.Add(k.Key)
			}
			if got, want := c.Bytes(), s.Compaction.Cardinality; !bytes.Equal(got, want) {
				t.Fatalf("cardinality bytes differ:\n got %x\nwant %x", got[:min(len(got), 64)], want[:min(len(want), 64)])
			}
		})
	}
}

// The estimator's state depends only on the set of keys offered (class comment): sparse, as
// the sorted set of the smallest encoding per 25-bit index, while at most 6144 indices are
// distinct, else 8192 registers holding each 13-bit index's longest run. Around the threshold
// and far past it, with repeated keys, Bytes must equal that state encoded as stream-lib does.
func TestCardinalityIsAFunctionOfTheKeySet(t *testing.T) {
	for _, n := range []int{0, 1, 100, 6000, 6144, 6145, 6200, 12288, 12289, 30000} {
		for _, dups := range []int{1, 3} {
			c := NewCardinality()
			var hashes []uint64
			for i := 0; i < n; i++ {
				key := []byte(fmt.Sprintf("key-%d", i))
				for d := 0; d < dups; d++ {
					c.Add(key)
				}
				hashes = append(hashes, token.Hash2_64(key, 0))
			}
			if got, want := c.Bytes(), referenceHLL(hashes); !bytes.Equal(got, want) {
				t.Fatalf("%d keys offered %d times each: bytes differ\n got %x\nwant %x", n, dups, got[:min(len(got), 48)], want[:min(len(want), 48)])
			}
		}
	}
}

// referenceHLL encodes the state the class comment describes, computed directly from the set.
func referenceHLL(hashes []uint64) []byte {
	best := map[uint32]int32{}
	for _, x := range hashes {
		k := encodeHash(x)
		if old, ok := best[sparseIndex(k)]; !ok || k < old {
			best[sparseIndex(k)] = k
		}
	}
	b := encoding.AppendI32(nil, -2)
	b = appendVarint(appendVarint(b, hllP), hllSP)
	if len(best) > hllSparseThreshold {
		c := &Cardinality{registers: make([]int32, hllRegisterWords)}
		for _, x := range hashes {
			c.updateRegister(int(x>>(64-hllP)), runLength(x))
		}
		b = appendVarint(appendVarint(b, 0), uint32(4*len(c.registers)))
		for _, w := range c.registers {
			b = encoding.AppendI32(b, w)
		}
		return b
	}
	idx := make([]uint32, 0, len(best))
	for i := range best {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	b = appendVarint(appendVarint(b, 1), uint32(len(idx)))
	prev := int32(0)
	for _, i := range idx {
		b = appendVarint(b, uint32(best[i]-prev))
		prev = best[i]
	}
	return b
}

// A split child's estimator: a few thousand keys offered, then encoded once.
func BenchmarkCardinalityChild(b *testing.B) {
	hashes := make([]uint64, 8192)
	for i := range hashes {
		hashes[i] = token.Hash2_64([]byte(fmt.Sprintf("key-%d", i)), 0)
	}
	b.ReportAllocs()
	for b.Loop() {
		c := NewCardinality()
		for _, h := range hashes {
			c.AddHash(h)
		}
		_ = c.Bytes()
	}
}
