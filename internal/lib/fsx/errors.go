package fsx

import (
	"errors"
	"fmt"
)

// ErrInvalidRange reports a negative offset or length, or a range whose end overflows int64.
var ErrInvalidRange = errors.New("fsx: invalid range")

// ErrCloneUnsupported marks a clone that failed because the file system, the file pair or the
// range cannot share extents (EOPNOTSUPP, ENOTTY, ENOSYS, EXDEV, EINVAL, EPERM). The errno is
// wrapped as well, so errors.Is works for both. Copying is the remedy.
var ErrCloneUnsupported = errors.New("fsx: reflink not supported")

// ErrNoSpace is wrapped by NoSpaceError.
var ErrNoSpace = errors.New("fsx: not enough free space")

// ErrBadName reports an Install file name that is not a plain base name.
var ErrBadName = errors.New("fsx: bad install file name")

// ErrInstallDone reports use of an Install after Commit or Abort.
var ErrInstallDone = errors.New("fsx: install already committed or aborted")

// RangeError names the files and ranges of a failed clone, copy or transfer. Src or Dst is empty
// when that side is not a named file (a socket or pipe).
type RangeError struct {
	Op     string // "clone", "copy", "sendfile", "splice"
	Src    string
	SrcOff int64
	Dst    string
	DstOff int64
	N      int64
	Err    error
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("fsx: %s %d bytes from %s@%d to %s@%d: %v",
		e.Op, e.N, orPeer(e.Src), e.SrcOff, orPeer(e.Dst), e.DstOff, e.Err)
}

func (e *RangeError) Unwrap() error { return e.Err }

func orPeer(name string) string {
	if name == "" {
		return "(stream)"
	}
	return name
}

// NoSpaceError reports that Dir has Free bytes available where Need are required.
type NoSpaceError struct {
	Dir  string
	Need int64
	Free int64
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("fsx: %s: need %d bytes, %d available", e.Dir, e.Need, e.Free)
}

func (e *NoSpaceError) Unwrap() error { return ErrNoSpace }
