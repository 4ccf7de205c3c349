package bigindex

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// Entry is one Index.db entry. Key and Promoted alias the bytes the entry was decoded from;
// they stay valid only as long as the iterator that produced them says so.
type Entry struct {
	Key      []byte // raw partition key
	Position int64  // uncompressed Data.db offset of the partition header
	Promoted []byte // promoted (row) index, verbatim; empty when the partition has none
	Offset   int64  // byte offset of the entry in Index.db
}

// Size is the encoded size of the entry as AppendEntry writes it (canonical vints).
func (e *Entry) Size() int {
	return EntrySize(len(e.Key), e.Position, len(e.Promoted))
}

// EntrySize is the encoded size of an entry with a key of keyLen bytes, the given Data.db
// position and a promoted index of promotedLen bytes, with canonical vints.
func EntrySize(keyLen int, position int64, promotedLen int) int {
	return 2 + keyLen + encoding.UVintSize(uint64(position)) +
		encoding.UVintSize(uint64(promotedLen)) + promotedLen
}

// MaxKeyLen is the longest partition key an entry can hold: its length is a u16.
const MaxKeyLen = math.MaxUint16

// AppendEntry appends one Index.db entry to dst: u16 key length, key, position and promoted
// size as minimal unsigned vints, then promoted verbatim. Cassandra writes minimal vints, so
// re-appending the entries of a Cassandra-written Index.db reproduces it byte for byte.
//
// It panics when len(key) > MaxKeyLen or position < 0, which no decoded entry can have.
func AppendEntry(dst []byte, key []byte, position int64, promoted []byte) []byte {
	if len(key) > MaxKeyLen {
		panic(fmt.Sprintf("bigindex: partition key of %d bytes exceeds %d", len(key), MaxKeyLen))
	}
	if position < 0 {
		panic(fmt.Sprintf("bigindex: negative Data.db position %d", position))
	}
	dst = encoding.AppendU16(dst, uint16(len(key)))
	dst = append(dst, key...)
	dst = encoding.AppendUVint(dst, uint64(position))
	dst = encoding.AppendUVint(dst, uint64(len(promoted)))
	return append(dst, promoted...)
}

// fault names what was wrong with an entry; faultNone means it decoded.
type fault uint8

const (
	faultNone fault = iota
	faultKeyLength
	faultKey
	faultPosition
	faultPromotedSize
	faultPromoted
	faultPositionRange
	faultPromotedRange
)

// decodeEntry decodes the entry at the start of b into e (except e.Offset). On success it
// returns the entry's size. Otherwise it returns the fault, the offset of the faulty field
// within the entry and, for truncation, need: a lower bound on the bytes the entry takes, which
// lets a streaming reader know how much more to read before trying again.
//
// It is the hot loop of every Index.db pass, so it avoids the cursor type and allocates nothing.
func decodeEntry(b []byte, e *Entry) (n int, f fault, at, need int) {
	if len(b) < 2 {
		return 0, faultKeyLength, 0, 2
	}
	p := 2 + (int(b[0])<<8 | int(b[1]))
	if len(b) < p {
		return 0, faultKey, 2, p
	}
	key := b[2:p:p]
	pos, w := encoding.UVint(b[p:])
	if w == 0 {
		return 0, faultPosition, p, p + vintNeed(b[p:])
	}
	if pos > math.MaxInt64 {
		return 0, faultPositionRange, p, 0
	}
	p += w
	size, w := encoding.UVint(b[p:])
	if w == 0 {
		return 0, faultPromotedSize, p, p + vintNeed(b[p:])
	}
	// Cassandra reads the size with readUnsignedVInt32; anything larger is not an index entry.
	if size > math.MaxInt32 {
		return 0, faultPromotedRange, p, 0
	}
	p += w
	end := p + int(size)
	if len(b) < end {
		return 0, faultPromoted, p, end
	}
	e.Key = key
	e.Position = int64(pos)
	e.Promoted = b[p:end:end]
	return end, faultNone, 0, 0
}

// DecodeEntry decodes the entry at the start of b, whose first byte is at Index.db offset off
// (for errors), into e, whose Key and Promoted then alias b, and returns its size. For a stream
// of entries cut anywhere (an index slice arriving in frames) it returns 0 and a nil error
// when b ends before the entry does; the caller waits for more bytes, and at the stream's end
// reports what is left. A value no entry can hold is an error carrying its offset.
func DecodeEntry(b []byte, off int64, e *Entry) (int, error) {
	n, f, at, need := decodeEntry(b, e)
	switch f {
	case faultNone:
		e.Offset = off
		return n, nil
	case faultPositionRange, faultPromotedRange:
		return 0, entryError(f, off, at, need, len(b))
	}
	return 0, nil
}

// vintNeed is the width of the vint starting at b, as far as its first byte tells.
func vintNeed(b []byte) int {
	if len(b) == 0 {
		return 1
	}
	return 1 + bits.LeadingZeros8(^b[0])
}

// entryError describes a fault of the entry at entryOff; avail is how many bytes of the entry
// were present, at the field offset within the entry, need the bytes the entry required.
func entryError(f fault, entryOff int64, at, need, avail int) error {
	var what string
	err := ErrTruncated
	switch f {
	case faultKeyLength:
		what = fmt.Sprintf("key length: %d of 2 bytes", avail)
	case faultKey:
		what = fmt.Sprintf("key of %d bytes: %d remain", need-2, avail-2)
	case faultPosition:
		what = fmt.Sprintf("position vint of %d bytes: %d remain", need-at, avail-at)
	case faultPromotedSize:
		what = fmt.Sprintf("promoted size vint of %d bytes: %d remain", need-at, avail-at)
	case faultPromoted:
		what = fmt.Sprintf("promoted index of %d bytes runs past the end: %d remain", need-at, avail-at)
	case faultPositionRange:
		what, err = "position vint exceeds int64", ErrMalformed
	case faultPromotedRange:
		what, err = "promoted size vint exceeds int32", ErrMalformed
	default:
		what = "unknown fault"
	}
	// The entry's offset first (where a reader would resume), the failing value's inside.
	return &encoding.OffsetError{Offset: entryOff, What: "index entry",
		Err: &encoding.OffsetError{Offset: entryOff + int64(at), What: what, Err: err}}
}
