package encoding

import (
	"encoding/binary"
	"math"
)

// Big-endian appenders matching java.io.DataOutput.

func AppendU8(b []byte, v uint8) []byte   { return append(b, v) }
func AppendU16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
func AppendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func AppendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }
func AppendI32(b []byte, v int32) []byte  { return AppendU32(b, uint32(v)) }
func AppendI64(b []byte, v int64) []byte  { return AppendU64(b, uint64(v)) }

func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendF64 appends a Java double (IEEE-754 bits, big-endian). NaN is written with Java's
// canonical bits 0x7ff8000000000000, as DataOutput.writeDouble does.
func AppendF64(b []byte, v float64) []byte {
	if math.IsNaN(v) {
		return AppendU64(b, 0x7ff8000000000000)
	}
	return AppendU64(b, math.Float64bits(v))
}

// AppendShortBytes appends a u16 length and p (ByteBufferUtil.writeWithShortLength).
func AppendShortBytes(b []byte, p []byte) []byte {
	b = AppendU16(b, uint16(len(p)))
	return append(b, p...)
}

// AppendIntBytes appends an i32 length and p (ByteBufferUtil.writeWithLength).
func AppendIntBytes(b []byte, p []byte) []byte {
	b = AppendI32(b, int32(len(p)))
	return append(b, p...)
}

// AppendVintBytes appends an unsigned vint length and p (ByteBufferUtil.writeWithVIntLength).
func AppendVintBytes(b []byte, p []byte) []byte {
	b = AppendUVint(b, uint64(len(p)))
	return append(b, p...)
}

// AppendUTF appends s as DataOutput.writeUTF does: a u16 length, then Java modified UTF-8
// (NUL as C0 80, supplementary characters as two 3-byte surrogates).
func AppendUTF(b []byte, s string) []byte {
	enc := modifiedUTF8(s)
	b = AppendU16(b, uint16(len(enc)))
	return append(b, enc...)
}

func modifiedUTF8(s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if s[i] == 0 || s[i] >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return []byte(s)
	}
	out := make([]byte, 0, len(s)+8)
	for _, r := range s {
		switch {
		case r != 0 && r < 0x80:
			out = append(out, byte(r))
		case r < 0x800:
			out = append(out, 0xC0|byte(r>>6), 0x80|byte(r&0x3F))
		case r < 0x10000:
			out = append(out, 0xE0|byte(r>>12), 0x80|byte((r>>6)&0x3F), 0x80|byte(r&0x3F))
		default:
			r -= 0x10000
			hi, lo := 0xD800+(r>>10), 0xDC00+(r&0x3FF)
			for _, c := range [2]rune{hi, lo} {
				out = append(out, 0xE0|byte(c>>12), 0x80|byte((c>>6)&0x3F), 0x80|byte(c&0x3F))
			}
		}
	}
	return out
}
