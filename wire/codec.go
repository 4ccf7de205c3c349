package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
)

// uvarintLen returns the number of bytes binary.AppendUvarint writes for v.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// schema names the fields of one message or list element. Every named tag is required
// exactly once, unless its bit is set in repeated (then it may occur any number of times)
// or in optional (then at most once). Tags are below 64 so that a decoder tracks the fields
// it has seen in one word.
type schema struct {
	name     string
	fields   []string // fields[tag] is the Go field name; "" marks an unassigned tag
	repeated uint64
	optional uint64
}

func (s *schema) isRepeated(tag uint64) bool { return tag < 64 && s.repeated&(1<<tag) != 0 }

func (s *schema) fieldName(tag uint64) string {
	if tag < uint64(len(s.fields)) {
		return s.fields[tag]
	}
	return ""
}

// writer appends body fields or, with sizing set, only counts the bytes it would append,
// so that one encode method per message yields both the frame's length prefix and its
// bytes and the two cannot disagree.
type writer struct {
	b      []byte
	n      int
	sizing bool
}

func (w *writer) header(tag uint64, n int) {
	if w.sizing {
		w.n += uvarintLen(tag) + uvarintLen(uint64(n))
		return
	}
	w.b = binary.AppendUvarint(w.b, tag)
	w.b = binary.AppendUvarint(w.b, uint64(n))
}

func (w *writer) uint(tag, v uint64) {
	n := uvarintLen(v)
	w.header(tag, n)
	if w.sizing {
		w.n += n
		return
	}
	w.b = binary.AppendUvarint(w.b, v)
}

func (w *writer) bytes(tag uint64, p []byte) {
	w.header(tag, len(p))
	if w.sizing {
		w.n += len(p)
		return
	}
	w.b = append(w.b, p...)
}

func (w *writer) string(tag uint64, s string) {
	w.header(tag, len(s))
	if w.sizing {
		w.n += len(s)
		return
	}
	w.b = append(w.b, s...)
}

// elem is a list element: its own field sequence, carried as the value of one field.
type elem interface{ encode(w *writer) }

// group writes e as the value of field tag. The element is sized first, because its
// length prefix precedes it.
func (w *writer) group(tag uint64, e elem) {
	outer, sizing := w.n, w.sizing
	w.n, w.sizing = 0, true
	e.encode(w)
	n := w.n
	w.n, w.sizing = outer, sizing
	w.header(tag, n)
	if w.sizing {
		w.n += n
		return
	}
	e.encode(w)
}

// decoder walks the fields of one complete body (the frame length has already been
// checked against the input), so running out of bytes inside it is corruption, not a
// short read. Errors are sticky: the first one is kept and ends the walk.
type decoder struct {
	msg    MsgType
	schema *schema
	lim    Limits
	body   []byte
	off    int
	tag    uint64 // current field, set by next
	val    []byte
	seen   uint64 // bit tag set: a non-repeated field tag has been decoded
	list   string // for a list element: the list's field name, for error paths
	index  int    // for a list element: its position in the list
	err    error
}

// next advances to the next field, reporting false at the end of the body or on error.
func (d *decoder) next() bool {
	if d.err != nil || d.off >= len(d.body) {
		return false
	}
	rest := d.body[d.off:]
	tag, n := binary.Uvarint(rest)
	if n <= 0 {
		d.failField("", fmt.Errorf("%w: bad field tag at body offset %d", ErrMalformed, d.off))
		return false
	}
	length, m := binary.Uvarint(rest[n:])
	if m <= 0 || length > uint64(len(rest)-n-m) {
		d.failField("", fmt.Errorf("%w: field %d at body offset %d overruns the body", ErrMalformed, tag, d.off))
		return false
	}
	start := n + m
	d.tag, d.val = tag, rest[start:start+int(length)]
	d.off += start + int(length)
	return true
}

// count returns how many times field tag occurs, failing when that exceeds limit, so a
// list is allocated once at its final size and never beyond the limit.
func (d *decoder) count(tag uint64, limit int) int {
	scan := decoder{msg: d.msg, schema: d.schema, body: d.body}
	n := 0
	for scan.next() {
		if scan.tag == tag {
			n++
		}
	}
	if n > limit {
		d.fail(tag, fmt.Errorf("%w: %d elements, limit %d", ErrLimitExceeded, n, limit))
		return 0
	}
	return n
}

func (d *decoder) fail(tag uint64, err error) { d.failField(d.schema.fieldName(tag), err) }

func (d *decoder) failField(name string, err error) {
	if d.err != nil {
		return
	}
	field := name
	if d.list != "" {
		field = d.list + "[" + strconv.Itoa(d.index) + "]"
		if name != "" {
			field += "." + name
		}
	}
	d.err = &FieldError{Message: d.msg, Field: field, Err: err}
}

// once marks the current field seen, failing if a field that may occur only once repeats:
// accepting "last wins" would let two peers disagree about what a message said.
func (d *decoder) once() bool {
	if d.err != nil {
		return false
	}
	if d.schema.isRepeated(d.tag) {
		return true
	}
	bit := uint64(1) << d.tag
	if d.seen&bit != 0 {
		d.fail(d.tag, fmt.Errorf("%w: field occurs twice", ErrMalformed))
		return false
	}
	d.seen |= bit
	return true
}

func (d *decoder) uint(limit uint64) uint64 {
	if !d.once() {
		return 0
	}
	v, n := binary.Uvarint(d.val)
	if n <= 0 || n != len(d.val) {
		d.fail(d.tag, fmt.Errorf("%w: %d bytes are not exactly one uvarint", ErrMalformed, len(d.val)))
		return 0
	}
	if v > limit {
		d.fail(d.tag, fmt.Errorf("%w: %d exceeds %d", ErrMalformed, v, limit))
		return 0
	}
	return v
}

func (d *decoder) u64() uint64 { return d.uint(math.MaxUint64) }
func (d *decoder) u32() uint32 { return uint32(d.uint(math.MaxUint32)) }
func (d *decoder) u8() uint8   { return uint8(d.uint(math.MaxUint8)) }

func (d *decoder) bounded(limit int) bool {
	if len(d.val) > limit {
		d.fail(d.tag, fmt.Errorf("%w: %d bytes, limit %d", ErrLimitExceeded, len(d.val), limit))
		return false
	}
	return true
}

// string stores the field in *dst, keeping the string already there when the bytes are
// equal: the comparison does not allocate, so a run of Data frames for one sstable decodes
// its ID without allocating.
func (d *decoder) string(dst *string) {
	if !d.once() || !d.bounded(d.lim.MaxStringLen) {
		return
	}
	if *dst != string(d.val) {
		*dst = string(d.val)
	}
}

// bytes returns a copy of the field, nil when empty.
func (d *decoder) bytes(limit int) []byte {
	if !d.once() || !d.bounded(limit) || len(d.val) == 0 {
		return nil
	}
	return bytes.Clone(d.val)
}

// alias returns the field's bytes within the input, nil when empty. Capacity is clipped so
// that appending to the result cannot overwrite the input after it.
func (d *decoder) alias() []byte {
	if !d.once() || len(d.val) == 0 {
		return nil
	}
	return d.val[:len(d.val):len(d.val)]
}

func (d *decoder) fixed(dst []byte) {
	if !d.once() {
		return
	}
	if len(d.val) != len(dst) {
		d.fail(d.tag, fmt.Errorf("%w: %d bytes, want %d", ErrMalformed, len(d.val), len(dst)))
		return
	}
	copy(dst, d.val)
}

// element returns a decoder for the current field's value as element index of a list.
func (d *decoder) element(s *schema, index int) decoder {
	return decoder{msg: d.msg, schema: s, lim: d.lim, body: d.val, list: d.schema.fieldName(d.tag), index: index}
}

// join finishes an element decoder, moving its error (if any) to d, and reports success.
func (d *decoder) join(e *decoder) bool {
	if err := e.finish(); err != nil {
		if d.err == nil {
			d.err = err
		}
		return false
	}
	return true
}

// finish checks that every required field was present and returns the first error.
func (d *decoder) finish() error {
	if d.err != nil {
		return d.err
	}
	for tag, name := range d.schema.fields {
		if name != "" && !d.schema.isRepeated(uint64(tag)) && d.schema.optional&(1<<tag) == 0 && d.seen&(1<<tag) == 0 {
			d.fail(uint64(tag), ErrMissingField)
			break
		}
	}
	return d.err
}
