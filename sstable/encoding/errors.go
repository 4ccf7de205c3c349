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

// OffsetError locates a failure in a component file: the one error type sluice gives a place
// to. Offset is the byte offset (from the start of the Reader's slice plus its base) where the
// failing value began, or -1 when the failure is not at one place. File names the component
// once a caller that knows it has said so (InFile); codecs that see only bytes leave it empty.
// Errors that add more (compress.ChunkError's chunk number, stats.Error's Statistics.db
// section) unwrap to an OffsetError, so errors.As finds the place the same way everywhere.
type OffsetError struct {
	File   string
	Offset int64
	What   string
	Err    error
}

func (e *OffsetError) Error() string {
	s := ""
	if e.File != "" {
		s = e.File + ": "
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf("at offset %d: ", e.Offset)
	}
	if e.What != "" {
		s += e.What + ": "
	}
	return s + fmt.Sprint(e.Err)
}

// InFile names the component err was found in: the innermost OffsetError without a file gets
// file; an error without one is wrapped in an OffsetError with no offset. An error that
// already names its file keeps it (a Rows.db failure found while walking Partitions.db stays
// a Rows.db failure). nil stays nil.
func InFile(file string, err error) error {
	if err == nil {
		return nil
	}
	var oe *OffsetError
	if errors.As(err, &oe) {
		if oe.File != "" {
			return err
		}
		for {
			var inner *OffsetError
			if !errors.As(oe.Err, &inner) || inner.File != "" {
				break
			}
			oe = inner
		}
		oe.File = file
		return err
	}
	return &OffsetError{File: file, Offset: -1, Err: err}
}

// Place returns the component and offset of the outermost OffsetError in err's chain (the
// file from the first one naming it), or "", -1.
func Place(err error) (file string, offset int64) {
	offset = -1
	var oe *OffsetError
	if !errors.As(err, &oe) {
		return "", -1
	}
	offset = oe.Offset
	for e := oe; ; {
		if e.File != "" {
			return e.File, offset
		}
		var inner *OffsetError
		if !errors.As(e.Err, &inner) {
			return "", offset
		}
		e = inner
	}
}

func (e *OffsetError) Unwrap() error { return e.Err }
