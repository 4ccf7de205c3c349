package rows

import (
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// ErrTruncated and ErrMalformed are the encoding package's sentinels, so errors.Is works with
// either name.
var (
	ErrTruncated = encoding.ErrTruncated
	ErrMalformed = encoding.ErrMalformed
)

// ErrSizeMismatch reports a row or marker size, or a previous-unfiltered size, that does not
// match the bytes actually present.
var ErrSizeMismatch = errors.New("size mismatch")

// ErrInvalid reports writer input that cannot be serialized: a clustering of the wrong arity,
// a value of the wrong fixed width, columns out of order, a TTL without a timestamp, a
// deletion time the version cannot encode, or a call out of sequence.
var ErrInvalid = errors.New("invalid input")

// CorruptError locates a decoding failure inside one partition.
type CorruptError struct {
	// Offset is the byte offset within the partition slice where the failing value starts.
	Offset int
	// What names what was being read, e.g. "cell value" or "row size".
	What string
	// Column is the column whose data was being read, or nil.
	Column []byte
	Err    error
}

func (e *CorruptError) Error() string {
	if e.Column != nil {
		return fmt.Sprintf("rows: at partition offset %d: %s (column %q): %v", e.Offset, e.What, e.Column, e.Err)
	}
	return fmt.Sprintf("rows: at partition offset %d: %s: %v", e.Offset, e.What, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }
