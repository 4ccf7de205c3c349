package sstable

import (
	"errors"
	"fmt"
)

// ErrMissingComponent reports a component the format requires that is not on disk.
var ErrMissingComponent = errors.New("missing component")

// ErrCorrupt reports a component whose contents contradict the format or another component.
var ErrCorrupt = errors.New("corrupt")

// FileError names the component file a failure belongs to. The wrapped error usually carries
// the byte offset (encoding.OffsetError, compress.ChunkError, ...).
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

func fileErr(file string, err error) error {
	if err == nil {
		return nil
	}
	// The innermost file is the one to blame: a Rows.db failure found while walking
	// Partitions.db stays a Rows.db failure.
	var fe *FileError
	if errors.As(err, &fe) {
		return err
	}
	return &FileError{File: file, Err: err}
}

func fileErrf(file string, format string, args ...any) error {
	return &FileError{File: file, Err: fmt.Errorf(format, args...)}
}
