// Package crcx combines CRC-32 (IEEE) checksums: Combine(crc(A), crc(B), len(B)) is crc(A||B)
// without reading A or B again (zlib's crc32_combine). sluice derives a child sstable's
// Digest.crc32 from the inline CRCs of the chunks it copied, reading 4 bytes per chunk
// instead of the whole file.
package crcx

// poly is the reflected IEEE polynomial.
const poly = 0xedb88320

// multModP multiplies a and b modulo the CRC polynomial, in the reflected bit order CRCs use
// (the top bit is x^0).
func multModP(a, b uint32) uint32 {
	m := uint32(1) << 31
	var p uint32
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ poly
		} else {
			b >>= 1
		}
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

// x8nModP is x^(8n) modulo the polynomial: the operator that appends n zero bytes.
func x8nModP(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2n[k&31], p)
		}
	}
	return p
}

// Combine returns the CRC-32 (IEEE) of A followed by B, given crc1 = CRC(A), crc2 = CRC(B) and
// len2 = len(B). Its cost grows with the number of bits set in len2, not with len2.
func Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1
	}
	return multModP(x8nModP(len2), crc1) ^ crc2
}
