package bigindex

import (
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// ErrTruncated and ErrMalformed are the encoding package's sentinels, repeated here so that
// callers can test errors from this package with errors.Is without importing encoding.
var (
	ErrTruncated = encoding.ErrTruncated
	ErrMalformed = encoding.ErrMalformed
)

// ErrNoProgress reports an io.Reader that keeps returning no bytes and no error.
var ErrNoProgress = errors.New("reader returned no data and no error")

// EntryError is a malformed or truncated Index.db entry. Entry is the byte offset in Index.db
// where the entry starts; Err is an *encoding.OffsetError locating the faulty field (its Offset
// is also an Index.db offset) and wrapping ErrTruncated or ErrMalformed. The caller adds the
// file name.
type EntryError struct {
	Entry int64
	Err   error
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("index entry at offset %d: %v", e.Entry, e.Err)
}

func (e *EntryError) Unwrap() error { return e.Err }
