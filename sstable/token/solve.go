package token

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Modular inverses (mod 2^64) of the odd multipliers of Murmur3, checked against inv64 in the
// tests.
const (
	invFmixM1 = 0x4f74430c22a54005 // 0xff51afd7ed558ccd^-1
	invFmixM2 = 0x9cb4b2f8129337db // 0xc4ceb9fe1a85ec53^-1
	invC1     = 0xa98409e882ce4d7d // c1^-1
	invC2     = 0xa81e14edd9de2c7f // c2^-1
	inv5      = 0xcccccccccccccccd // 5^-1

	// seedMix spreads successive seed counters over the free parameter (odd, so bijective).
	seedMix = 0x9e3779b97f4a7c15
	// asciiMask has the high bit of every byte: a word w is ASCII iff w&asciiMask == 0.
	asciiMask = 0x8080808080808080
)

// inv64 is the inverse of an odd a modulo 2^64, by Newton's iteration (each step doubles the
// number of correct low bits; a is its own inverse modulo 8).
func inv64(a uint64) uint64 {
	x := a
	for range 5 {
		x *= 2 - a*x
	}
	return x
}

// fmix64inv inverts fmix64: x ^= x>>33 is an involution on 64 bits and the multipliers are odd.
func fmix64inv(k uint64) uint64 {
	k ^= k >> 33
	k *= invFmixM2
	k ^= k >> 33
	k *= invFmixM1
	k ^= k >> 33
	return k
}

// mix1 and mix2 are the per-word mixes of a block's k1 and k2; unmix1 and unmix2 invert them.
func mix1(k uint64) uint64   { return bits.RotateLeft64(k*c1, 31) * c2 }
func mix2(k uint64) uint64   { return bits.RotateLeft64(k*c2, 33) * c1 }
func unmix1(m uint64) uint64 { return bits.RotateLeft64(m*invC2, -31) * invC1 }
func unmix2(m uint64) uint64 { return bits.RotateLeft64(m*invC1, -33) * invC2 }

// tailXor is what murmurFinish's tail step xors into h1 and h2 (with the signed-byte quirk).
func tailXor(tail []byte) (x1, x2 uint64) {
	var k1, k2 uint64
	for i := len(tail) - 1; i >= 0; i-- {
		v := uint64(int64(int8(tail[i])))
		if i >= 8 {
			k2 ^= v << (8 * uint(i-8))
		} else {
			k1 ^= v << (8 * uint(i))
		}
	}
	if len(tail) > 8 {
		x2 = mix2(k2)
	}
	if len(tail) > 0 {
		x1 = mix1(k1)
	}
	return x1, x2
}

// ASCII reports whether every byte of b is below 0x80.
func ASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&asciiMask != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// SolveKey fills the 16 bytes key[at:at+16] (at a multiple of 16, at+16 <= len(key)) so that
// the Murmur3 token of key (Cassandra's: hash3_x64_128(key,0,len,0)[0], Long.MIN_VALUE normalised
// to Long.MAX_VALUE) is exactly target, every other byte of key kept as given. Each solution is
// drawn from a free 64-bit parameter; candidates are tried starting at *seed (advanced past the
// one returned so successive calls give distinct keys) until accept(key) says yes, at most budget
// of them; ok=false when none is accepted. accept may be nil (any). Also returns ErrNoKey-style
// failure for bad arguments (at misaligned, key too short, target == Long.MIN_VALUE which no
// non-empty key has).
//
// On failure *seed is advanced by budget (unchanged for bad arguments) and key[at:at+16] may
// hold a rejected candidate. Distinct seed values give distinct blocks, so a sequence of
// calls sharing a seed pointer never returns the same key twice.
//
// Each candidate costs two fmix64s and one inverse block step per whole block after at, so
// finding one that an accept with probability p likes costs about 1/p of those. For an accept
// that wants an ASCII block (p = 2^-16) use SolveKeyASCII, which rejects most candidates after
// computing half the block.
func SolveKey(key []byte, at int, target int64, seed *uint64, budget int, accept func([]byte) bool) bool {
	return solveKey(key, at, target, seed, budget, 0, accept)
}

// SolveKeyASCII is SolveKey restricted to solutions whose block key[at:at+16] is ASCII: accept
// (which may be nil) is only asked about those. Every candidate number counts against budget
// and advances *seed, ASCII or not; about one in 65536 is ASCII.
func SolveKeyASCII(key []byte, at int, target int64, seed *uint64, budget int, accept func([]byte) bool) bool {
	return solveKey(key, at, target, seed, budget, asciiMask, accept)
}

// solveKey is SolveKey, rejecting without further ado any candidate block whose k1 or k2 word
// has a bit of mask set.
//
// With h1, h2 the state after every block and the tail, the token is fmix64(A') + fmix64(B')
// where A = h1^n, B = h2^n, A' = A+B, B' = B+A'. Choosing B' from the seed fixes A' by inverting
// fmix64, hence A, B, hence the state before the length; undoing the tail's xors and the fixed
// blocks after the free one gives the state the free block must produce, and the block step is
// invertible for its input words given the state before it.
func solveKey(key []byte, at int, target int64, seed *uint64, budget int, mask uint64, accept func([]byte) bool) bool {
	if at < 0 || at%16 != 0 || at+16 > len(key) || target == math.MinInt64 || seed == nil {
		return false
	}
	n := uint64(len(key))
	nb := len(key) / 16 * 16
	s1, s2 := murmurBlocks(0, 0, key[:at]) // state before the free block
	x1, x2 := tailXor(key[nb:])
	x1 ^= n
	x2 ^= n
	// The mixed words of the fixed blocks after the free one, in reverse order.
	var buf [16][2]uint64
	after := buf[:0]
	for i := nb - 16; i > at; i -= 16 {
		after = append(after, [2]uint64{
			mix1(binary.LittleEndian.Uint64(key[i:])),
			mix2(binary.LittleEndian.Uint64(key[i+8:])),
		})
	}
	t := uint64(target)
	block := key[at : at+16]
	start := *seed
	bp := start*seedMix - seedMix // B' of the candidate before start
	for i := 0; i < budget; i++ {
		bp += seedMix // B' = (start+i)*seedMix
		ap := fmix64inv(t - fmix64(bp))
		b := bp - ap
		a := ap - b
		h1, h2 := a^x1, b^x2
		for _, m := range after {
			h2 = bits.RotateLeft64((h2-0x38495ab5)*inv5-h1, -31) ^ m[1]
			h1 = bits.RotateLeft64((h1-0x52dce729)*inv5-h2, -27) ^ m[0]
		}
		// (h1, h2) is now the state right after the free block.
		k1 := unmix1(bits.RotateLeft64((h1-0x52dce729)*inv5-s2, -27) ^ s1)
		if k1&mask != 0 {
			continue
		}
		k2 := unmix2(bits.RotateLeft64((h2-0x38495ab5)*inv5-h1, -31) ^ s2)
		if k2&mask != 0 {
			continue
		}
		binary.LittleEndian.PutUint64(block, k1)
		binary.LittleEndian.PutUint64(block[8:], k2)
		if accept == nil || accept(key) {
			*seed = start + uint64(i) + 1
			return true
		}
	}
	if budget > 0 {
		*seed = start + uint64(budget)
	}
	return false
}
