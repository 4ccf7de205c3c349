// Package crcx combines CRC-32 (IEEE) checksums: Combine(crc(A), crc(B), len(B)) is crc(A||B)
// without reading A or B again (zlib's crc32_combine). sluice derives a child sstable's
// Digest.crc32 from the inline CRCs of the chunks it copied, reading 4 bytes per chunk
// instead of the whole file.
package crcx

// gf2Times multiplies the 32x32 GF(2) matrix mat by vec.
func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := 0; n < 32; n++ {
		square[n] = gf2Times(mat, mat[n])
	}
}

// Combine returns the CRC-32 (IEEE) of A followed by B, given crc1 = CRC(A), crc2 = CRC(B) and
// len2 = len(B). It costs O(log len2) matrix squarings.
func Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1
	}
	var even, odd [32]uint32
	odd[0] = 0xedb88320 // the reflected IEEE polynomial: the operator for one zero bit
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four zero bits
	// Apply len2 zero bytes to crc1: the first squaring below gives one zero byte.
	for {
		gf2Square(&even, &odd)
		if len2&1 != 0 {
			crc1 = gf2Times(&even, crc1)
		}
		len2 >>= 1
		if len2 == 0 {
			break
		}
		gf2Square(&odd, &even)
		if len2&1 != 0 {
			crc1 = gf2Times(&odd, crc1)
		}
		len2 >>= 1
		if len2 == 0 {
			break
		}
	}
	return crc1 ^ crc2
}
