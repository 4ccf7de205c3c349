package encoding

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf16"
)

// Reader is a bounds-checked cursor over an in-memory component. The first failure is sticky:
// every later read returns a zero value, and Err reports the failure with its offset. This
// lets parsers read a whole structure and check the error once, without ever panicking.
//
// Byte slices returned by Bytes and friends alias the Reader's input; callers that retain them
// past the input's lifetime must copy.
type Reader struct {
	b    []byte
	off  int
	base int64 // added to offsets in errors, for readers over a window of a file
	err  error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// NewReaderAt returns a Reader over b whose error offsets are reported relative to base.
func NewReaderAt(b []byte, base int64) *Reader { return &Reader{b: b, base: base} }

// Reset points r at b, clearing any error (lets hot loops reuse one Reader).
func (r *Reader) Reset(b []byte, base int64) { *r = Reader{b: b, base: base} }

// Err is the first failure, or nil.
func (r *Reader) Err() error { return r.err }

// Offset is the cursor position within the input.
func (r *Reader) Offset() int { return r.off }

// Pos is the cursor position plus the base.
func (r *Reader) Pos() int64 { return r.base + int64(r.off) }

// Len is the number of unread bytes (0 after a failure).
func (r *Reader) Len() int {
	if r.err != nil {
		return 0
	}
	return len(r.b) - r.off
}

// Rest returns the unread bytes without consuming them.
func (r *Reader) Rest() []byte {
	if r.err != nil {
		return nil
	}
	return r.b[r.off:]
}

// Fail records err (wrapped with the current offset) unless an error is already recorded.
// Parsers use it for semantic failures found at the cursor.
func (r *Reader) Fail(what string, err error) {
	if r.err == nil {
		r.err = &OffsetError{Offset: r.Pos(), What: what, Err: err}
	}
}

// Failf records a malformed-value error at the cursor.
func (r *Reader) Failf(format string, args ...any) {
	r.Fail(fmt.Sprintf(format, args...), ErrMalformed)
}

func (r *Reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.Fail(what, ErrTruncated)
		return nil
	}
	p := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return p
}

// Skip advances n bytes.
func (r *Reader) Skip(n int) { r.take(n, "skip") }

func (r *Reader) U8() uint8 {
	p := r.take(1, "u8")
	if p == nil {
		return 0
	}
	return p[0]
}

func (r *Reader) Bool() bool { return r.U8() != 0 }

func (r *Reader) U16() uint16 {
	p := r.take(2, "u16")
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint16(p)
}

func (r *Reader) U32() uint32 {
	p := r.take(4, "u32")
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint32(p)
}

func (r *Reader) U64() uint64 {
	p := r.take(8, "u64")
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint64(p)
}

func (r *Reader) I32() int32   { return int32(r.U32()) }
func (r *Reader) I64() int64   { return int64(r.U64()) }
func (r *Reader) F64() float64 { return math.Float64frombits(r.U64()) }

// U32LE and U64LE read little-endian values (Summary.db, LZ4 chunk headers).
func (r *Reader) U32LE() uint32 {
	p := r.take(4, "u32le")
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (r *Reader) U64LE() uint64 {
	p := r.take(8, "u64le")
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// UVint reads an unsigned vint.
func (r *Reader) UVint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := UVint(r.b[r.off:])
	if n == 0 {
		r.Fail("vint", ErrTruncated)
		return 0
	}
	r.off += n
	return v
}

// Vint reads a signed (zig-zag) vint.
func (r *Reader) Vint() int64 { return unzigzag(r.UVint()) }

// Count reads an i32 element count and checks it against the remaining bytes, given that each
// element occupies at least minSize bytes. It returns -1 (and records an error) when the count
// is negative or could not fit, so callers never allocate from a hostile count.
func (r *Reader) Count(what string, minSize int) int {
	n := r.I32()
	return r.checkCount(what, int64(n), minSize)
}

// UVintCount is Count for a vint-encoded count.
func (r *Reader) UVintCount(what string, minSize int) int {
	n := r.UVint()
	if n > math.MaxInt32 {
		r.Failf("%s: count %d out of range", what, n)
		return -1
	}
	return r.checkCount(what, int64(n), minSize)
}

func (r *Reader) checkCount(what string, n int64, minSize int) int {
	if r.err != nil {
		return -1
	}
	if minSize < 1 {
		minSize = 1
	}
	if n < 0 {
		r.Failf("%s: negative count %d", what, n)
		return -1
	}
	if n > int64(r.Len()/minSize) && n > 0 {
		r.Fail(fmt.Sprintf("%s: count %d exceeds remaining %d bytes", what, n, r.Len()), ErrTruncated)
		return -1
	}
	return int(n)
}

// Bytes returns the next n bytes (aliasing the input).
func (r *Reader) Bytes(n int) []byte { return r.take(n, "bytes") }

// ShortBytes reads a u16-length-prefixed byte string.
func (r *Reader) ShortBytes() []byte { return r.take(int(r.U16()), "short-length bytes") }

// IntBytes reads an i32-length-prefixed byte string.
func (r *Reader) IntBytes() []byte {
	n := r.I32()
	if r.err == nil && n < 0 {
		r.Failf("negative length %d", n)
		return nil
	}
	return r.take(int(n), "int-length bytes")
}

// VintBytes reads an unsigned-vint-length-prefixed byte string.
func (r *Reader) VintBytes() []byte {
	n := r.UVint()
	if r.err == nil && n > uint64(len(r.b)-r.off) {
		r.Fail("vint-length bytes", ErrTruncated)
		return nil
	}
	return r.take(int(n), "vint-length bytes")
}

// UTF reads a DataInput.readUTF string (u16 length + modified UTF-8).
func (r *Reader) UTF() string {
	start := r.Pos()
	p := r.ShortBytes()
	if p == nil {
		return ""
	}
	s, ok := decodeModifiedUTF8(p)
	if !ok && r.err == nil {
		r.err = &OffsetError{Offset: start, What: "modified UTF-8 string", Err: ErrMalformed}
	}
	return s
}

func decodeModifiedUTF8(p []byte) (string, bool) {
	plain := true
	for _, c := range p {
		if c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return string(p), true
	}
	units := make([]uint16, 0, len(p))
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c < 0x80:
			units = append(units, uint16(c))
			i++
		case c&0xE0 == 0xC0 && i+1 < len(p):
			units = append(units, uint16(c&0x1F)<<6|uint16(p[i+1]&0x3F))
			i += 2
		case c&0xF0 == 0xE0 && i+2 < len(p):
			units = append(units, uint16(c&0x0F)<<12|uint16(p[i+1]&0x3F)<<6|uint16(p[i+2]&0x3F))
			i += 3
		default:
			return "", false
		}
	}
	return string(utf16.Decode(units)), true
}
