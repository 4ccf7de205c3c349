package gossip

import (
	"encoding/binary"
	"fmt"
)

// decoder is a bounds-checked cursor over gossip bytes with a sticky error. After the first
// failure every read returns a zero value, so parsers check d.err once at the end. It never
// allocates from a length it has not checked against the bytes that remain.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) failf(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at offset %d", ErrMalformed, fmt.Sprintf(format, args...), d.off)
	}
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) u8() uint8 {
	if d.err != nil {
		return 0
	}
	if d.remaining() < 1 {
		d.failf("truncated")
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.failf("bad varint")
		return 0
	}
	d.off += n
	return v
}

// count reads a uvarint element count and checks that count elements of at least minSize
// bytes each fit in what remains, so that a caller may allocate count elements.
func (d *decoder) count(minSize int) int {
	v := d.uvarint()
	if d.err != nil {
		return 0
	}
	if v > uint64(d.remaining()/minSize) {
		d.failf("count %d exceeds the %d bytes left", v, d.remaining())
		return 0
	}
	return int(v)
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > d.remaining() {
		d.failf("truncated")
		return nil
	}
	v := d.b[d.off : d.off+n]
	d.off += n
	return v
}

func (d *decoder) str() string { return string(d.bytes(d.count(1))) }

// int64s reads n big-endian int64s.
func (d *decoder) int64s(n int) []int64 {
	raw := d.bytes(n * 8)
	if d.err != nil {
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(raw[i*8:]))
	}
	return out
}
