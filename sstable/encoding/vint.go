package encoding

import (
	"encoding/binary"
	"math/bits"
)

// UVintSize is the number of bytes Cassandra's VIntCoding uses for v (1..9).
func UVintSize(v uint64) int {
	return int((639 - 9*uint(bits.LeadingZeros64(v|1))) >> 6)
}

// VintSize is the encoded size of the signed (zig-zag) vint v.
func VintSize(v int64) int { return UVintSize(zigzag(v)) }

func zigzag(v int64) uint64   { return uint64((v << 1) ^ (v >> 63)) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// AppendUVint appends v as a minimal unsigned vint.
func AppendUVint(b []byte, v uint64) []byte {
	n := UVintSize(v)
	if n == 1 {
		return append(b, byte(v))
	}
	return AppendUVintWidth(b, v, n)
}

// AppendUVintWidth appends v as an unsigned vint of exactly width bytes (width >= UVintSize(v)).
// Readers accept such padded vints because the first byte states the length; BTI Rows.db
// positions are patched in place this way.
func AppendUVintWidth(b []byte, v uint64, width int) []byte {
	extra := width - 1
	if extra >= 8 {
		b = append(b, 0xFF)
		for i := 7; i >= 0; i-- {
			b = append(b, byte(v>>(8*uint(i))))
		}
		return b
	}
	if n := len(b); cap(b)-n >= 8 {
		// The vint is the low `width` bytes of v with `extra` one-bits above the value's,
		// big-endian: one 8-byte store into the spare capacity (a slice cut to its width,
		// as a patch in place is, takes the loop below).
		marker := uint64(byte(0xFF<<(8-uint(extra)))) << (8 * uint(extra))
		b = binary.BigEndian.AppendUint64(b, (v|marker)<<(64-8*uint(width)))
		return b[:n+width]
	}
	// The first byte carries `extra` leading one-bits followed by the top value bits.
	first := byte(0xFF<<(8-uint(extra))) | byte(v>>(8*uint(extra)))
	b = append(b, first)
	for i := extra - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*uint(i))))
	}
	return b
}

// AppendVint appends v as a signed (zig-zag) vint.
func AppendVint(b []byte, v int64) []byte { return AppendUVint(b, zigzag(v)) }

// UVint decodes an unsigned vint from the start of b, returning the value and its width.
// n == 0 means b was too short.
func UVint(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	first := b[0]
	if first < 0x80 {
		return uint64(first), 1
	}
	extra := bits.LeadingZeros8(^first)
	if len(b) < extra+1 {
		return 0, 0
	}
	if extra < 8 {
		v = uint64(first & (0xFF >> uint(extra)))
	}
	for i := 1; i <= extra; i++ {
		v = v<<8 | uint64(b[i])
	}
	return v, extra + 1
}

// Vint decodes a signed (zig-zag) vint from the start of b.
func Vint(b []byte) (v int64, n int) {
	u, n := UVint(b)
	return unzigzag(u), n
}
