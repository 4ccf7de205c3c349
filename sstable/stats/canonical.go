package stats

import (
	"math"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// The readers below wrap encoding.Reader with the checks that make parsing strict: each
// rejects an encoding Cassandra would not produce, so a successful Parse always re-encodes to
// the same bytes.

// minimalVint fails r, at the vint's first byte, when the next vint is padded.
func minimalVint(r *encoding.Reader) bool {
	if v, n := encoding.UVint(r.Rest()); n > 0 && n != encoding.UVintSize(v) {
		r.Fail("padded vint", ErrNonCanonical)
		return false
	}
	return true
}

// readUVint reads a minimal unsigned vint.
func readUVint(r *encoding.Reader) uint64 {
	if !minimalVint(r) {
		return 0
	}
	return r.UVint()
}

// readUVintCount reads a minimal unsigned vint element count, bounded by the remaining bytes.
func readUVintCount(r *encoding.Reader, what string, minSize int) int {
	if !minimalVint(r) {
		return -1
	}
	return r.UVintCount(what, minSize)
}

// readVintBytes reads a minimal-vint-length byte string and copies it out of the input.
func readVintBytes(r *encoding.Reader) []byte {
	n := readUVint(r)
	if r.Err() != nil {
		return nil
	}
	if n > uint64(r.Len()) {
		r.Fail("vint-length bytes", encoding.ErrTruncated)
		return nil
	}
	return append([]byte{}, r.Bytes(int(n))...)
}

// readBool reads a Java boolean, which DataOutput writes as exactly 0 or 1.
func readBool(r *encoding.Reader) bool {
	if p := r.Rest(); len(p) > 0 && p[0] > 1 {
		r.Fail("boolean", ErrNonCanonical)
		return false
	}
	return r.U8() == 1
}

// readF64 reads a Java double keeping its exact bit pattern (NaN payloads included).
func readF64(r *encoding.Reader) float64 { return math.Float64frombits(r.U64()) }

// appendF64 writes f's exact bits. Unlike encoding.AppendF64 it does not canonicalise NaN:
// Cassandra writes doubles through ByteBuffer.putDouble, which keeps the raw bits, so a parsed
// value must be written back unchanged. Fresh values should use NaN, Java's Double.NaN.
func appendF64(b []byte, f float64) []byte { return encoding.AppendU64(b, math.Float64bits(f)) }

// NaN is Java's Double.NaN (0x7ff8000000000000), the bit pattern Cassandra writes for an
// unset tokenSpaceCoverage. Go's math.NaN() has a different payload.
var NaN = math.Float64frombits(0x7ff8000000000000)

// UUID is a 16-byte UUID as Cassandra writes it: the most significant long, then the least
// significant long, both big-endian.
type UUID [16]byte

func readUUID(r *encoding.Reader) *UUID {
	p := r.Bytes(16)
	if p == nil {
		return nil
	}
	var u UUID
	copy(u[:], p)
	return &u
}

// readOptionalUUID reads a presence byte (0 or 1) and, when 1, a UUID.
func readOptionalUUID(r *encoding.Reader) *UUID {
	if !readBool(r) {
		return nil
	}
	return readUUID(r)
}

func appendOptionalUUID(b []byte, u *UUID) []byte {
	if u == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	return append(b, u[:]...)
}
