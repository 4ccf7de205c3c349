package bloom

import (
	"errors"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// ErrTruncated and ErrMalformed are the encoding package's sentinels, repeated here so that
// callers can test errors from Parse with errors.Is without importing encoding. Parse errors
// are *encoding.OffsetError values carrying the Filter.db offset.
var (
	ErrTruncated = encoding.ErrTruncated
	ErrMalformed = encoding.ErrMalformed
)

// ErrSpec reports filter parameters Cassandra could not build a filter for: a false-positive
// chance it cannot satisfy, or a size its bitset cannot hold.
var ErrSpec = errors.New("bloom: unsatisfiable filter specification")
