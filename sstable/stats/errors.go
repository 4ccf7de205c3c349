package stats

import (
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// ErrChecksum reports a metadata CRC32 that does not match the bytes it covers (na+ and BTI).
var ErrChecksum = errors.New("checksum mismatch")

// ErrLayout reports a table of contents that cannot be what MetadataSerializer writes: a
// component count outside 1..4, an unknown or repeated component type, types out of order, or
// offsets that do not tile the file.
var ErrLayout = errors.New("bad table of contents")

// ErrTrailing reports a component whose body did not parse exactly to its recorded end.
var ErrTrailing = errors.New("component does not end where the table of contents says")

// ErrNonCanonical reports bytes that decode but that Cassandra's serializers would never write
// (a padded vint, a boolean other than 0 or 1, a histogram whose duplicated first offset
// differs). Parsing rejects them so that Parse followed by Append is always byte-identical.
var ErrNonCanonical = errors.New("non-canonical encoding")

// ErrUnsupportedType reports a clustering type whose value width cannot be determined.
var ErrUnsupportedType = errors.New("unsupported clustering type")

// Component names a part of Statistics.db in errors. The values of the four metadata
// components are Cassandra's MetadataType ordinals.
type Component int

const (
	ComponentTOC        Component = -1
	ComponentValidation Component = 0
	ComponentCompaction Component = 1
	ComponentStats      Component = 2
	ComponentHeader     Component = 3
)

// String is Cassandra's MetadataType name ("STATS"), or "TOC".
func (c Component) String() string {
	switch c {
	case ComponentTOC:
		return "TOC"
	case ComponentValidation:
		return "VALIDATION"
	case ComponentCompaction:
		return "COMPACTION"
	case ComponentStats:
		return "STATS"
	case ComponentHeader:
		return "HEADER"
	}
	return fmt.Sprintf("Component(%d)", int(c))
}

// Error locates a Statistics.db failure: the component and the absolute byte offset in the
// file where the failing value begins. Err wraps one of this package's sentinels or
// encoding.ErrTruncated / encoding.ErrMalformed.
type Error struct {
	Component Component
	encoding.OffsetError
}

func newError(c Component, offset int64, what string, err error) *Error {
	if what == "" {
		what = c.String()
	} else {
		what = c.String() + ": " + what
	}
	return &Error{Component: c, OffsetError: encoding.OffsetError{Offset: offset, What: what, Err: err}}
}

func (e *Error) Error() string { return "statistics: " + e.OffsetError.Error() }

// Unwrap gives the place: stats.Error is an encoding.OffsetError that also names the section.
func (e *Error) Unwrap() error { return &e.OffsetError }

// componentError turns a reader failure into an *Error for component c.
func componentError(c Component, err error) *Error {
	var oe *encoding.OffsetError
	if errors.As(err, &oe) {
		return newError(c, oe.Offset, oe.What, oe.Err)
	}
	return newError(c, 0, "", err)
}
