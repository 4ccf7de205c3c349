package encoding

import (
	"errors"
	"fmt"
)

// ErrTruncated reports input that ended before a value did.
var ErrTruncated = errors.New("truncated")

// ErrMalformed reports a value that cannot be what the format allows (a negative length, a
// vint wider than 9 bytes, invalid modified UTF-8).
var ErrMalformed = errors.New("malformed")

// OffsetError locates a decoding failure: Offset is the byte offset (from the start of the
// Reader's slice plus its base) where the failing value began.
type OffsetError struct {
	Offset int64
	What   string
	Err    error
}

func (e *OffsetError) Error() string {
	return fmt.Sprintf("at offset %d: %s: %v", e.Offset, e.What, e.Err)
}

func (e *OffsetError) Unwrap() error { return e.Err }
