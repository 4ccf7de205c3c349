package token

import (
	"encoding/binary"
	"math/bits"
)

const (
	c1 = 0x87c37b91114253d5
	c2 = 0x4cf5ad432745937f
)

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// Hash3x64_128 is Cassandra's MurmurHash.hash3_x64_128(key, 0, len, seed). It differs from
// reference MurmurHash3 only in the tail: Java casts each tail byte to long *with sign
// extension* before shifting, so bytes >= 0x80 smear ones into the high bits. Body blocks are
// read with & 0xff and have no quirk. Tokens, bloom filter bits and BTI hash bytes all depend on
// reproducing this exactly.
func Hash3x64_128(key []byte, seed uint64) (h0, h1 uint64) {
	nblocks := len(key) / 16
	h1, h2 := murmurBlocks(seed, seed, key[:nblocks*16])
	return murmurFinish(h1, h2, key[nblocks*16:], len(key))
}

// murmurBlocks mixes whole 16-byte blocks into the state (h1, h2).
func murmurBlocks(h1, h2 uint64, blocks []byte) (uint64, uint64) {
	for i := 0; i+16 <= len(blocks); i += 16 {
		k1 := binary.LittleEndian.Uint64(blocks[i:])
		k2 := binary.LittleEndian.Uint64(blocks[i+8:])

		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729

		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}
	return h1, h2
}

// murmurFinish mixes the tail (fewer than 16 bytes) and the total length n into the state
// and finalises it.
func murmurFinish(h1, h2 uint64, tail []byte, n int) (uint64, uint64) {
	var k1, k2 uint64
	// sx is the quirk: (long) of a signed Java byte.
	sx := func(b byte) uint64 { return uint64(int64(int8(b))) }
	switch len(tail) {
	case 15:
		k2 ^= sx(tail[14]) << 48
		fallthrough
	case 14:
		k2 ^= sx(tail[13]) << 40
		fallthrough
	case 13:
		k2 ^= sx(tail[12]) << 32
		fallthrough
	case 12:
		k2 ^= sx(tail[11]) << 24
		fallthrough
	case 11:
		k2 ^= sx(tail[10]) << 16
		fallthrough
	case 10:
		k2 ^= sx(tail[9]) << 8
		fallthrough
	case 9:
		k2 ^= sx(tail[8])
		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		fallthrough
	case 8:
		k1 ^= sx(tail[7]) << 56
		fallthrough
	case 7:
		k1 ^= sx(tail[6]) << 48
		fallthrough
	case 6:
		k1 ^= sx(tail[5]) << 40
		fallthrough
	case 5:
		k1 ^= sx(tail[4]) << 32
		fallthrough
	case 4:
		k1 ^= sx(tail[3]) << 24
		fallthrough
	case 3:
		k1 ^= sx(tail[2]) << 16
		fallthrough
	case 2:
		k1 ^= sx(tail[1]) << 8
		fallthrough
	case 1:
		k1 ^= sx(tail[0])
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
	}

	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

// Hash2_64 is Cassandra's MurmurHash.hash2_64(key, 0, len, seed) (MurmurHash64A), used to feed
// the HyperLogLog in Statistics.db. Its tail has the same signed-byte quirk.
func Hash2_64(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	n := len(key)
	h := seed ^ uint64(n)*m
	nblocks := n / 8
	for i := 0; i < nblocks; i++ {
		k := binary.LittleEndian.Uint64(key[i*8:])
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	tail := key[nblocks*8:]
	if len(tail) > 0 {
		for i := len(tail) - 1; i >= 0; i-- {
			h ^= uint64(int64(int8(tail[i]))) << (8 * uint(i))
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}
