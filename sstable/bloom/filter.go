package bloom

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/token"
)

// MaxHashCount bounds the hash count Parse accepts. Cassandra's own specifications never exceed
// 14; the bound only stops a corrupt file from making every lookup loop billions of times.
const MaxHashCount = 64

// Filter is a Cassandra Bloom filter (Murmur3BloomFilter over an OffHeapBitSet). Bit i of the
// filter is bit i&63 of Words[i>>6]; on disk (new format) the words are little-endian, which
// makes bit i bit i&7 of byte i>>3, the OffHeapBitSet memory layout.
//
// Add and MayContain allocate nothing. A Filter is not safe for concurrent Add; concurrent
// MayContain calls are fine.
type Filter struct {
	HashCount int
	Words     []uint64
	release   func() // unmaps Words (NewOffHeap), or nil
	// words is the reduction by len(Words), kept beside the words so that finding a key's
	// bits costs no division (see bitIndex).
	words reducer
}

// New returns an empty filter sized as FilterFactory.getFilter(numElements, fpChance): the
// hash count and buckets per element from ComputeSpec and WordCount words. A caller should ask
// Needed(fpChance) first: at 1.0 Cassandra has no filter, and New fails.
func New(numElements int64, fpChance float64) (*Filter, error) {
	k, words, err := shape(numElements, fpChance)
	if err != nil {
		return nil, err
	}
	return NewSized(k, words), nil
}

// shape is the hash count and word count of a filter for numElements at fpChance.
func shape(numElements int64, fpChance float64) (k, words int, err error) {
	k, buckets, err := ComputeSpec(numElements, fpChance)
	if err != nil {
		return 0, 0, err
	}
	words, err = WordCount(numElements, buckets)
	return k, words, err
}

// NewSized returns an empty filter with the given hash count and number of 64-bit words, for
// rebuilding a filter with the parameters read from an existing Filter.db. It panics unless
// 1 <= hashCount <= MaxHashCount and wordCount >= 1.
func NewSized(hashCount, wordCount int) *Filter {
	if hashCount < 1 || hashCount > MaxHashCount || wordCount < 1 {
		panic(fmt.Sprintf("bloom: invalid filter size: %d hashes, %d words", hashCount, wordCount))
	}
	return newFilter(hashCount, make([]uint64, wordCount))
}

func newFilter(hashCount int, words []uint64) *Filter {
	return &Filter{HashCount: hashCount, Words: words, words: newReducer(uint64(len(words)))}
}

// Hash is the filter hash of a partition key, DecoratedKey.filterHash: Cassandra's
// MurmurHash3 x64_128 with seed 0. Under Murmur3Partitioner h0 is also the token, so a caller
// that already hashed the key can use AddHash and MayContainHash instead.
func Hash(key []byte) (h0, h1 uint64) { return token.Hash3x64_128(key, 0) }

// Add sets the key's bits.
func (f *Filter) Add(key []byte) { f.AddHash(Hash(key)) }

// MayContain reports whether all the key's bits are set: false means the key is certainly
// absent.
func (f *Filter) MayContain(key []byte) bool { return f.MayContainHash(Hash(key)) }

// AddHash sets the bits of a key whose filter hash is (h0, h1). The bit indexes are
// BloomFilter.setIndexes(base = h1, inc = h0, max = 64*len(Words)): abs(base % max) with Java's
// signed remainder, then base += inc with int64 wrap-around, HashCount times.
//
// It keeps its own loop rather than calling AddHashes with one key: through the slice it
// measured twice as slow per key (BenchmarkAddHash).
func (f *Filter) AddHash(h0, h1 uint64) {
	if f.words.d != uint64(len(f.Words)) {
		f.words = newReducer(uint64(len(f.Words))) // Words replaced since it was made
	}
	r, words := f.words, f.Words
	base := h1
	for range f.HashCount {
		w, bit := r.bitIndex(base)
		words[w] |= 1 << bit
		base += h0
	}
}

// AddHashes is AddHash of each (h0, h1) in hs. Setting many keys' bits in one tight loop lets
// the processor fetch many of the filter's cache lines at once, where AddHash between other
// work waits for each key's few: once the filter no longer fits the cache (a big child's, or
// any while data streams through), those waits are most of a key's cost.
func (f *Filter) AddHashes(hs [][2]uint64) {
	if f.words.d != uint64(len(f.Words)) {
		f.words = newReducer(uint64(len(f.Words)))
	}
	r, words, k := f.words, f.Words, f.HashCount
	for _, h := range hs {
		base := h[1]
		for range k {
			w, bit := r.bitIndex(base)
			words[w] |= 1 << bit
			base += h[0]
		}
	}
}

// MayContainHash is MayContain for a precomputed filter hash.
func (f *Filter) MayContainHash(h0, h1 uint64) bool {
	r, words := f.words, f.Words
	if r.d != uint64(len(words)) {
		r = newReducer(uint64(len(words))) // not kept: lookups may run concurrently
	}
	base := h1
	for range f.HashCount {
		w, bit := r.bitIndex(base)
		if words[w]&(1<<bit) == 0 {
			return false
		}
		base += h0
	}
	return true
}

// bitIndex is Java's abs(base % max) for max = 64·d bits, as a word and a bit in it, computed
// without a division:
//
//   - for a positive divisor, abs(base % max) is |base| mod max: Java's remainder takes the
//     dividend's sign and has magnitude |base| mod max. |base| is taken as an unsigned number,
//     2^63 for math.MinInt64, whose remainder Java computes the same way.
//   - max is 64·d, so u mod max is ((u>>6) mod d)·64 + (u & 63): the word is (u>>6) mod d, the
//     bit is u & 63.
func (x reducer) bitIndex(base uint64) (word, bit uint64) {
	neg := uint64(int64(base) >> 63)
	u := (base ^ neg) - neg
	return x.mod(u >> 6), u & 63
}

// reducer computes u mod d for a fixed 1 <= d <= 2^63 without a division (Barrett reduction):
// with r = floor((2^64-1)/d), q = floor(u·r / 2^64) is floor(u/d) or one less, for every
// 64-bit u, so u - q·d is the remainder or the remainder plus d, and one conditional
// subtraction is exact:
//
//	q ≤ u/d because r ≤ 2^64/d;
//	q > u/d - 1 because r·d > 2^64-1-d, so u·r/2^64 > u/d - u/2^64 > u/d - 1.
//
// A 64-bit division costs several times the multiplication, and a filter takes HashCount of
// them per key. The subtraction is branch-free: for a filter's dividends (below 2^58) it is
// rarely needed, but for others it would be a coin toss for the branch predictor.
type reducer struct{ d, r uint64 }

func newReducer(d uint64) reducer { return reducer{d: d, r: math.MaxUint64 / max(d, 1)} }

func (x reducer) mod(u uint64) uint64 {
	q, _ := bits.Mul64(u, x.r)
	t := u - q*x.d - x.d // the remainder minus d: negative (as d <= 2^63) unless q was one short
	return t + x.d&uint64(int64(t)>>63)
}

// Parse decodes a Filter.db:
//
//	i32 hashCount, i32 wordCount, wordCount 8-byte words
//
// In the new format (na+, and BTI) each word is the raw little-endian memory of the bitset; in
// the old format (hasOldBfFormat: md, me) each word is stored byte-reversed, as a big-endian
// long. The words are copied; nothing may follow them. Errors carry the Filter.db offset.
func Parse(b []byte, oldFormat bool) (*Filter, error) {
	r := encoding.NewReader(b)
	hashCount := r.I32()
	words := r.Count("bloom filter words", 8)
	if err := r.Err(); err != nil {
		return nil, err
	}
	switch {
	case hashCount < 1 || hashCount > MaxHashCount:
		return nil, parseErr(0, "hash count %d outside 1..%d", hashCount, MaxHashCount)
	case words < 1:
		return nil, parseErr(4, "filter with no words")
	case r.Len() != 8*words:
		return nil, parseErr(int64(8+8*words), "%d trailing bytes after %d words", r.Len()-8*words, words)
	}
	f := newFilter(int(hashCount), make([]uint64, words))
	raw := r.Rest()
	for i := range f.Words {
		if oldFormat {
			f.Words[i] = binary.BigEndian.Uint64(raw[8*i:])
		} else {
			f.Words[i] = binary.LittleEndian.Uint64(raw[8*i:])
		}
	}
	return f, nil
}

func parseErr(at int64, format string, args ...any) error {
	r := encoding.NewReaderAt(nil, at)
	r.Failf("bloom filter: "+format, args...)
	return r.Err()
}

// Size is the encoded size of f in either format.
func (f *Filter) Size() int { return 8 + 8*len(f.Words) }

// Append appends f in the new Filter.db format, the only one Cassandra 4.0+ writes.
func (f *Filter) Append(b []byte) []byte {
	return appendWords(f.appendHeader(b), f.Words, false)
}

// AppendOld appends f in the old (pre-na) format, each word byte-reversed. sluice writes only
// na+ versions; this exists so md/me filters can be shown to round-trip.
func (f *Filter) AppendOld(b []byte) []byte {
	return appendWords(f.appendHeader(b), f.Words, true)
}

// Encode writes f as Append (oldFormat: AppendOld) would, through a small buffer: a filter
// is ~1.2 bytes per partition, and a second copy of it for the write would double that.
func (f *Filter) Encode(w io.Writer, oldFormat bool) error {
	const batch = 8 << 10 // words per write
	buf := f.appendHeader(make([]byte, 0, 8*min(batch, len(f.Words))+8))
	words := f.Words
	for {
		n := min(batch, len(words))
		buf = appendWords(buf, words[:n], oldFormat)
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if words = words[n:]; len(words) == 0 {
			return nil
		}
		buf = buf[:0]
	}
}

func (f *Filter) appendHeader(b []byte) []byte {
	b = encoding.AppendI32(b, int32(f.HashCount))
	return encoding.AppendI32(b, int32(len(f.Words)))
}

// appendWords appends words little-endian (the new format) or byte-reversed (oldFormat).
func appendWords(b []byte, words []uint64, oldFormat bool) []byte {
	for _, w := range words {
		if oldFormat {
			b = binary.BigEndian.AppendUint64(b, w)
		} else {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
	}
	return b
}

// Equal reports whether two filters have the same hash count and bits. A verifier rebuilds the
// filter of an sstable's keys with the file's sizes and compares: Cassandra sets exactly the
// keys' bits, so any other difference is damage.
func (f *Filter) Equal(o *Filter) bool {
	if f.HashCount != o.HashCount || len(f.Words) != len(o.Words) {
		return false
	}
	for i, w := range f.Words {
		if o.Words[i] != w {
			return false
		}
	}
	return true
}
