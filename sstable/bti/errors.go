package bti

import (
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/sstable/encoding"
)

var (
	// ErrCorrupt reports a structure that Cassandra could not have written: a pointer that
	// leaves the file or does not point backwards, an unknown payload encoding, a footer
	// that disagrees with the file. It is wrapped in an *encoding.OffsetError giving the
	// byte offset.
	ErrCorrupt = errors.New("bti: corrupt")

	// ErrUnsorted reports keys or separators given to a writer out of order or repeated.
	ErrUnsorted = errors.New("bti: keys not in strictly increasing order")

	// ErrUnsupportedType reports a clustering type whose ByteComparable form this package
	// does not produce.
	ErrUnsupportedType = errors.New("bti: unsupported clustering type")

	// ErrTooLarge reports a value outside what the format can store (a key longer than
	// 65535 bytes, a row-index offset of 8 bytes or more, a vint that does not fit its
	// slot when patching).
	ErrTooLarge = errors.New("bti: value too large for the format")

	// ErrInvalid reports a bad argument (a negative position, a writer used after Finish).
	ErrInvalid = errors.New("bti: invalid argument")

	// errInternal reports a broken writer invariant; Cassandra guards the same invariants
	// with assertions. Seeing it means a bug in this package.
	errInternal = errors.New("bti: internal writer invariant violated")
)

// corruptAt builds an ErrCorrupt error located at off.
func corruptAt(off int64, format string, args ...any) error {
	return &encoding.OffsetError{Offset: off, What: fmt.Sprintf(format, args...), Err: ErrCorrupt}
}
