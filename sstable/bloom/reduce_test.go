package bloom

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/cputime"
)

// javaIndex is BloomFilter's bit index as Java computes it: abs(base % max), with Java's
// signed remainder (the sign of the dividend) and FBUtilities.abs. It is the specification the
// division-free index is held to.
func javaIndex(base int64, max int64) uint64 {
	r := base % max
	neg := r >> 63 // FBUtilities.abs, branch-free as the replaced Go code had it
	return uint64((r ^ neg) - neg)
}

// divisors are bit counts of every shape: the smallest filters, powers of two and their
// neighbours' word counts, word counts with large prime factors, the largest a Filter.db can
// declare (2^31-1 words) and far beyond, up to 2^63-64.
func divisors(rng *rand.Rand) []uint64 {
	words := []uint64{1, 2, 3, 5, 7, 63, 64, 65, 1 << 20, 1<<20 - 1, 1<<20 + 1, 156_251, 1_198_203,
		1<<31 - 1, 1 << 31, 1<<32 - 1, 1 << 32, 1<<32 + 1, 1<<40 + 15, 1<<56 - 1, 1 << 56, 1<<57 - 1}
	for range 200 {
		words = append(words, 1+rng.Uint64N(1<<20), 1+rng.Uint64N(1<<31), 1+rng.Uint64N(1<<57-1))
	}
	out := make([]uint64, len(words))
	for i, w := range words {
		out[i] = 64 * w
	}
	return out
}

// dividends are the edges of int64 and of each divisor's multiples, then random values.
func dividends(rng *rand.Rand, d uint64) []int64 {
	out := []int64{0, 1, -1, 2, -2, 63, 64, -64, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1}
	for _, k := range []uint64{1, 2, 3, math.MaxInt64 / d, math.MaxInt64/d - 1} {
		if k == 0 || k > math.MaxInt64/d {
			continue
		}
		m := int64(k * d)
		out = append(out, m, m-1, m+1, -m, -m+1, -m-1)
	}
	for range 2000 {
		out = append(out, int64(rng.Uint64()))
	}
	return out
}

// The division-free bit index is Java's abs(base % max) for every divisor shape and every
// int64 base, math.MinInt64 and the multiples of the divisor included.
func TestBitIndexIsJavasSignedRemainder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range divisors(rng) {
		r := newReducer(d / 64)
		for _, base := range dividends(rng, d) {
			w, bit := r.bitIndex(uint64(base))
			if got, want := w<<6|bit, javaIndex(base, int64(d)); got != want {
				t.Fatalf("max %d, base %d: index %d, Java's %d", d, base, got, want)
			}
		}
	}
}

// The reduction is exact for every 64-bit dividend and every divisor up to 2^63, not only the
// word counts and dividends of a filter: at the top of the range the estimate of the quotient
// is furthest from the truth.
func TestReducerIsExactOverTheWholeRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ds := append([]uint64{1, 2, 3, 7, 1 << 62, 1<<62 + 1, 1<<63 - 1, 1 << 63}, divisors(rng)...)
	for range 500 {
		ds = append(ds, 1+rng.Uint64N(1<<63), 1+rng.Uint64N(1000))
	}
	for _, d := range ds {
		r := newReducer(d)
		us := []uint64{0, 1, d - 1, d, d + 1, math.MaxUint64, math.MaxUint64 - 1, math.MaxUint64 - d, 1 << 63}
		if k := math.MaxUint64 / d; k > 0 {
			us = append(us, k*d, k*d-1, (k-1)*d+d-1)
		}
		for range 2000 {
			us = append(us, rng.Uint64())
		}
		for _, u := range us {
			if got, want := r.mod(u), u%d; got != want {
				t.Fatalf("%d mod %d: got %d, want %d", u, d, got, want)
			}
		}
	}
}

// addHashByRemainder and mayContainByRemainder are AddHash and MayContainHash as Java writes
// them, one signed remainder per hash.
func addHashByRemainder(f *Filter, h0, h1 uint64) {
	limit := int64(len(f.Words)) * 64
	base, inc := int64(h1), int64(h0)
	for range f.HashCount {
		i := javaIndex(base, limit)
		f.Words[i>>6] |= 1 << (i & 63)
		base += inc
	}
}

func mayContainByRemainder(f *Filter, h0, h1 uint64) bool {
	limit := int64(len(f.Words)) * 64
	base, inc := int64(h1), int64(h0)
	for range f.HashCount {
		i := javaIndex(base, limit)
		if f.Words[i>>6]&(1<<(i&63)) == 0 {
			return false
		}
		base += inc
	}
	return true
}

// AddHash (and AddHashes, in batches) sets exactly the bits Java's setIndexes sets, and
// MayContainHash answers as Java's
// isPresent, on filters of many sizes and hash counts, including hashes whose base or
// increment is math.MinInt64 and filters whose words were replaced after they were made.
func TestAddHashSetsJavasBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	edge := []uint64{0, 1, math.MaxUint64, 1 << 63, 1<<63 - 1, 1<<63 + 1}
	for _, words := range []int{1, 2, 3, 7, 64, 1000, 1 << 14, 15_625, 156_251} {
		for _, k := range []int{1, 2, 7, 14, MaxHashCount} {
			got, want := NewSized(k, words), NewSized(k, words)
			var hs [][2]uint64
			for _, a := range edge {
				for _, b := range edge {
					hs = append(hs, [2]uint64{a, b})
				}
			}
			for range 3000 {
				hs = append(hs, [2]uint64{rng.Uint64(), rng.Uint64()})
			}
			batched := NewSized(k, words)
			for _, h := range hs[:len(hs)/2] {
				got.AddHash(h[0], h[1])
				addHashByRemainder(want, h[0], h[1])
			}
			for rest := hs[:len(hs)/2]; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(40)) // batches of every size, the last one short
				batched.AddHashes(rest[:n])
				rest = rest[n:]
			}
			batched.AddHashes(nil)
			if !slices.Equal(got.Words, want.Words) || !slices.Equal(batched.Words, want.Words) {
				t.Fatalf("%d words, %d hashes: bits differ from Java's", words, k)
			}
			for _, h := range hs {
				if g, w := got.MayContainHash(h[0], h[1]), mayContainByRemainder(want, h[0], h[1]); g != w {
					t.Fatalf("%d words, %d hashes: MayContainHash(%d, %d) = %v, Java's %v", words, k, h[0], h[1], g, w)
				}
			}
		}
	}
	// A filter whose words were swapped for a different count after it was made (or one built
	// as a literal) still indexes by its current size.
	f := NewSized(3, 10)
	f.Words = make([]uint64, 77)
	lit := &Filter{HashCount: 3, Words: make([]uint64, 77)}
	ref := NewSized(3, 77)
	for range 1000 {
		h0, h1 := rng.Uint64(), rng.Uint64()
		f.AddHash(h0, h1)
		lit.AddHash(h0, h1)
		addHashByRemainder(ref, h0, h1)
	}
	hs := make([][2]uint64, 1000)
	for i := range hs {
		hs[i] = [2]uint64{rng.Uint64(), rng.Uint64()}
	}
	lits := &Filter{HashCount: 3, Words: make([]uint64, 77)}
	lits.AddHashes(hs)
	ref2 := NewSized(3, 77)
	for _, h := range hs {
		addHashByRemainder(ref2, h[0], h[1])
	}
	if !slices.Equal(lits.Words, ref2.Words) {
		t.Fatal("AddHashes on a literal filter sets other bits than Java's")
	}
	if !slices.Equal(f.Words, ref.Words) || !slices.Equal(lit.Words, ref.Words) {
		t.Fatal("a filter whose words were replaced sets other bits than Java's")
	}
	probe := &Filter{HashCount: 3, Words: ref.Words}
	for range 1000 {
		h0, h1 := rng.Uint64(), rng.Uint64()
		if probe.MayContainHash(h0, h1) != mayContainByRemainder(ref, h0, h1) {
			t.Fatal("MayContainHash on a literal filter answers other than Java's")
		}
	}
}

// BenchmarkAddHash sets one key's bits per op, for a filter of a 1M-partition child at
// fp 0.01 (1.2 MiB) and of a 64M-partition one (76 MiB, every word a cache miss), by the
// division-free index and by Java's remainder (the implementation it replaced).
func BenchmarkAddHash(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	hs := make([][2]uint64, 1<<16)
	for i := range hs {
		hs[i] = [2]uint64{rng.Uint64(), rng.Uint64()}
	}
	for _, n := range []int64{8 << 10, 1 << 20, 64 << 20} {
		f, err := New(n, 0.01)
		if err != nil {
			b.Fatal(err)
		}
		for i := range f.Words {
			f.Words[i] = uint64(i) // fault every page in before either variant runs
		}
		for _, impl := range []struct {
			name string
			add  func(f *Filter, h0, h1 uint64)
		}{{"reducer", (*Filter).AddHash}, {"remainder", addHashByRemainder}} {
			b.Run(fmt.Sprintf("%s/%dK", impl.name, n>>10), func(b *testing.B) {
				i := 0
				m := cputime.Start(b)
				for b.Loop() {
					h := hs[i&(len(hs)-1)]
					impl.add(f, h[0], h[1])
					i++
				}
				m.Report(1, "cpu-ns/op")
			})
		}
	}
}

// BenchmarkAddHashStreaming is BenchmarkAddHash for a 1M-key filter while data streams through
// the cache, as on a receiver: before each key 1.5 KiB is copied from a 64 MiB ring (512 bytes of
// data received, decrypted and written). "copy" is the copying alone; the others add the key's
// bits by AddHash per key, or by AddHashes every 32 keys.
func BenchmarkAddHashStreaming(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	hs := make([][2]uint64, 1<<16)
	for i := range hs {
		hs[i] = [2]uint64{rng.Uint64(), rng.Uint64()}
	}
	f, err := New(1<<20, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	for i := range f.Words {
		f.Words[i] = uint64(i)
	}
	src := make([]byte, 64<<20)
	for i := range src {
		src[i] = byte(i)
	}
	dst := make([]byte, 1536)
	const batch = 32
	for _, mode := range []string{"copy", "AddHash", "AddHashes"} {
		b.Run(mode, func(b *testing.B) {
			i, off := 0, 0
			pending := make([][2]uint64, 0, batch)
			m := cputime.Start(b)
			for b.Loop() {
				copy(dst, src[off:off+len(dst)])
				if off += len(dst); off+len(dst) > len(src) {
					off = 0
				}
				h := hs[i&(len(hs)-1)]
				i++
				switch mode {
				case "AddHash":
					f.AddHash(h[0], h[1])
				case "AddHashes":
					if pending = append(pending, h); len(pending) == batch {
						f.AddHashes(pending)
						pending = pending[:0]
					}
				}
			}
			m.Report(1, "cpu-ns/op")
		})
	}
}
