package stats

import (
	"math/bits"
	"slices"

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
	// sparse holds, while in sparse mode, one entry per key offered: the sparse index in the
	// high 32 bits and the encoding, biased so that unsigned order is stream-lib's signed
	// order, in the low 32. It is sorted and deduplicated (compact) only when it reaches
	// limit and at Bytes, instead of keeping a map of the merged set up to date per key:
	// appending is what a rebuild pays per partition, and a child of a few thousand keys is
	// sorted once.
	sparse    []uint64
	limit     int      // compact at this many entries (at least 2·hllSparseThreshold)
	scratch   []uint64 // sortSparse's second buffer
	registers []int32  // 1366 words of six 5-bit registers, once converted
}

const (
	hllP               = 13
	hllSP              = 25
	hllSparseThreshold = (1 << hllP) * 3 / 4
	hllRegisterWords   = (1<<hllP)/6 + 1 // RegisterSet.getSizeForCount(8192)
	// sparseBias flips the sign bit of an encoding, so that unsigned order is signed order.
	sparseBias = 1 << 31
)

// NewCardinality returns an empty estimator.
func NewCardinality() *Cardinality { return &Cardinality{} }

// Add offers one partition key.
func (c *Cardinality) Add(key []byte) { c.AddHash(token.Hash2_64(key, 0)) }

// AddHash offers a key already hashed with token.Hash2_64(key, 0) (offerHashed).
func (c *Cardinality) AddHash(x uint64) {
	if c.registers != nil {
		c.updateRegister(int(x>>(64-hllP)), runLength(x))
		return
	}
	k := encodeHash(x)
	c.sparse = append(c.sparse, uint64(sparseIndex(k))<<32|uint64(uint32(k)^sparseBias))
	if len(c.sparse) >= max(c.limit, 2*hllSparseThreshold) {
		c.compact()
	}
}

// compact merges the sparse entries into the set stream-lib keeps (per sparse index the
// smallest encoding, which holds the longest run) and converts to registers once the set
// exceeds the sparse threshold, as stream-lib does; otherwise the next compaction waits until
// the entries have doubled, so that appending stays amortised O(1).
func (c *Cardinality) compact() {
	c.sortSparse()
	set := c.sparse[:0]
	for i, e := range c.sparse {
		if i > 0 && e>>32 == set[len(set)-1]>>32 {
			continue // a larger encoding of the same index
		}
		set = append(set, e)
	}
	c.sparse = set
	if len(set) > hllSparseThreshold {
		c.registers = make([]int32, hllRegisterWords)
		for _, e := range set {
			k := sparseEncoding(e)
			c.updateRegister(int(sparseIndex(k)>>(hllSP-hllP)), decodeRunLength(k))
		}
		c.sparse, c.scratch = nil, nil
		return
	}
	c.limit = 2 * len(set)
}

// sortSparse sorts the entries: a counting sort on the index's top 13 bits (the hash's
// uniform top bits spread thousands of entries about one per bucket), then an insertion sort
// within each bucket. A comparison sort of a child's few thousand entries costs more than the
// map this replaced.
func (c *Cardinality) sortSparse() {
	e := c.sparse
	if len(e) < 256 {
		slices.Sort(e)
		return
	}
	const shift = 32 + hllSP - hllP
	var start [1<<hllP + 1]int32
	for _, x := range e {
		start[x>>shift+1]++
	}
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	c.scratch = slices.Grow(c.scratch[:0], len(e))[:len(e)]
	next := start
	for _, x := range e {
		b := x >> shift
		c.scratch[next[b]] = x
		next[b]++
	}
	for b := 0; b+1 < len(start); b++ {
		bucket := c.scratch[start[b]:start[b+1]]
		for i := 1; i < len(bucket); i++ {
			for j := i; j > 0 && bucket[j] < bucket[j-1]; j-- {
				bucket[j], bucket[j-1] = bucket[j-1], bucket[j]
			}
		}
	}
	c.sparse, c.scratch = c.scratch, e
}

// sparseEncoding is the encoding held in a sparse entry.
func sparseEncoding(e uint64) int32 { return int32(uint32(e) ^ sparseBias) }

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
	if c.registers == nil {
		c.compact()
	}
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
	b = appendVarint(b, 1)
	b = appendVarint(b, uint32(len(c.sparse)))
	prev := int32(0)
	for _, e := range c.sparse {
		k := sparseEncoding(e)
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
