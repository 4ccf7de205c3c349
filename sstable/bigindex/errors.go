package bigindex

import (
	"errors"

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
