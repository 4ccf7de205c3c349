package stats

import (
	"math/bits"
	"sort"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/token"
)

// Cardinality is the partition-key cardinality estimator Cassandra stores in the COMPACTION
// component: stream-lib's HyperLogLogPlus(p=13, sp=25) fed MurmurHash.hash2_64(key, 0) per
// partition (MetadataCollector.addKey).
//
// HLL++ starts in sparse mode, a set of 32-bit encodings of the hash's top 25 bits (plus the
// run length when those bits after the first 13 are all zero), one per 25-bit index, keeping
// the longest run. It converts to 8192 five-bit registers once the merged set exceeds
// 0.75·8192 entries. stream-lib merges its buffer at irregular points, but the final state
// depends only on the set of keys: sparse exactly when the distinct 25-bit indices are at most
// 6144, and otherwise registers equal to the per-index maximum run length. Bytes reproduces
// HyperLogLogPlus.getBytes for that state.
type Cardinality struct {
	sparse    map[uint32]int32 // sparse index -> encoding, while in sparse mode
	registers []int32          // 1366 words of six 5-bit registers, once converted
}

const (
	hllP               = 13
	hllSP              = 25
	hllSparseThreshold = (1 << hllP) * 3 / 4
	hllRegisterWords   = (1<<hllP)/6 + 1 // RegisterSet.getSizeForCount(8192)
)

// NewCardinality returns an empty estimator.
func NewCardinality() *Cardinality { return &Cardinality{sparse: map[uint32]int32{}} }

// Add offers one partition key.
func (c *Cardinality) Add(key []byte) { c.AddHash(token.Hash2_64(key, 0)) }

// AddHash offers a key already hashed with token.Hash2_64(key, 0) (offerHashed).
func (c *Cardinality) AddHash(x uint64) {
	if c.registers != nil {
		c.updateRegister(int(x>>(64-hllP)), runLength(x))
		return
	}
	k := encodeHash(x)
	idx := sparseIndex(k)
	if old, ok := c.sparse[idx]; !ok || k < old {
		c.sparse[idx] = k
	}
	if len(c.sparse) > hllSparseThreshold {
		c.registers = make([]int32, hllRegisterWords)
		for _, k := range c.sparse {
			c.updateRegister(int(sparseIndex(k)>>(hllSP-hllP)), decodeRunLength(k))
		}
		c.sparse = nil
	}
}

// runLength is 1 + the leading zeros after the first p bits, capped by a sentinel bit.
func runLength(x uint64) int32 {
	return int32(bits.LeadingZeros64(x<<hllP|1<<(hllP-1))) + 1
}

// encodeHash is HyperLogLogPlus.encodeHash for p=13, sp=25.
func encodeHash(x uint64) int32 {
	idx := int32(x >> (64 - hllSP))
	if idx<<((32-hllSP)+hllP) == 0 {
		return ((idx<<6 | (runLength(x) ^ 63)) << 1) | 1
	}
	return idx << 1
}

func sparseIndex(k int32) uint32 {
	if k&1 == 1 {
		return uint32(k) >> 7
	}
	return uint32(k) >> 1
}

func decodeRunLength(k int32) int32 {
	if k&1 == 1 {
		return int32((uint32(k)>>1)&63) ^ 63
	}
	return int32(bits.LeadingZeros32(uint32(k)<<(hllP+(31-hllSP)))) + 1
}

// updateRegister is RegisterSet.updateIfGreater, including its lack of masking: a run length
// above 31 spills into the next register exactly as it does in stream-lib.
func (c *Cardinality) updateRegister(pos int, value int32) {
	word := pos / 6
	shift := uint(5 * (pos - word*6))
	mask := int32(0x1f) << shift
	cur, nv := int64(c.registers[word]&mask), int64(value<<shift)
	if cur < nv {
		c.registers[word] = int32((int64(c.registers[word]&^mask) | nv))
	}
}

// Bytes is HyperLogLogPlus.getBytes: i32 -2, varints p and sp, then either varint 1, the
// sparse set size and the set as varint deltas (sorted by sparse index), or varint 0, the
// register byte count and the register words as big-endian i32s. Varints are stream-lib's
// little-endian base-128 varints of the 32-bit value.
func (c *Cardinality) Bytes() []byte {
	b := encoding.AppendI32(nil, -2)
	b = appendVarint(b, hllP)
	b = appendVarint(b, hllSP)
	if c.registers != nil {
		b = appendVarint(b, 0)
		b = appendVarint(b, uint32(4*len(c.registers)))
		for _, w := range c.registers {
			b = encoding.AppendI32(b, w)
		}
		return b
	}
	set := make([]int32, 0, len(c.sparse))
	for _, k := range c.sparse {
		set = append(set, k)
	}
	sort.Slice(set, func(i, j int) bool { return sparseIndex(set[i]) < sparseIndex(set[j]) })
	b = appendVarint(b, 1)
	b = appendVarint(b, uint32(len(set)))
	prev := int32(0)
	for _, k := range set {
		b = appendVarint(b, uint32(k-prev))
		prev = k
	}
	return b
}

func appendVarint(b []byte, v uint32) []byte {
	for v&^0x7f != 0 {
		b = append(b, byte(v&0x7f|0x80))
		v >>= 7
	}
	return append(b, byte(v))
}
