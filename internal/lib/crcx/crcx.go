// Package crcx combines CRC-32 (IEEE) checksums: Combine(crc(A), crc(B), len(B)) is crc(A||B)
// without reading A or B again (zlib's crc32_combine). sluice derives a child sstable's
// Digest.crc32 from the inline CRCs of the chunks it copied, reading 4 bytes per chunk
// instead of the whole file.
package crcx

// poly is the reflected IEEE polynomial.
const poly = 0xedb88320

// multModP multiplies a and b modulo the CRC polynomial, in the reflected bit order CRCs use
// (the top bit is x^0). Branch-free: the bits of a chunk's operator are random, and a branch
// per bit mispredicts half the time.
func multModP(a, b uint32) uint32 {
	var p uint32
	for range 32 {
		p ^= b & -(a >> 31)
		a <<= 1
		b = b>>1 ^ poly&-(b&1)
	}
	return p
}

// x2n[k] is x^(2^k) modulo the polynomial.
var x2n = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	t[0] = p
	for k := 1; k < 32; k++ {
		p = multModP(p, p)
		t[k] = p
	}
	return t
}()

// low8 and high8 hold x^(8i) and x^(8*256*j) modulo the polynomial, for i < 256 and j < 1024:
// the operators that append i and 256*j zero bytes, so that x8nModP of a chunk's length
// (under 256 KiB) is one multiplication instead of one per bit set in it.
var low8, high8 = func() (lo [256]uint32, hi [1024]uint32) {
	lo[0], hi[0] = 1<<31, 1<<31 // x^0
	for i := 1; i < len(lo); i++ {
		lo[i] = multModP(lo[i-1], x2n[3]) // · x^8
	}
	for j := 1; j < len(hi); j++ {
		hi[j] = multModP(hi[j-1], x2n[11]) // · x^2048
	}
	return lo, hi
}()

// x8nModP is x^(8n) modulo the polynomial: the operator that appends n zero bytes.
func x8nModP(n int64) uint32 {
	p := multModP(low8[n&255], high8[(n>>8)&1023])
	for k := 21; n>>18 != 0; n, k = n>>1, k+1 {
		if (n>>18)&1 != 0 {
			p = multModP(x2n[k&31], p)
		}
	}
	return p
}

// Combine returns the CRC-32 (IEEE) of A followed by B, given crc1 = CRC(A), crc2 = CRC(B) and
// len2 = len(B). Its cost is two multiplications modulo the polynomial for len2 under 256 KiB
// (a chunk), and one more per bit set above that.
func Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1
	}
	return multModP(x8nModP(len2), crc1) ^ crc2
}
