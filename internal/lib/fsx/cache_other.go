//go:build !linux

package fsx

import (
	"errors"
	"os"
)

// EvictPageCache fsyncs f; this platform has no way to drop its cached pages, so it then
// returns an error wrapping errors.ErrUnsupported.
func EvictPageCache(f *os.File) error {
	if err := f.Sync(); err != nil {
		return err
	}
	return &os.PathError{Op: "evict", Path: f.Name(), Err: errors.ErrUnsupported}
}

// ResidentBytes is not available on this platform.
func ResidentBytes(f *os.File) (int64, error) {
	return 0, &os.PathError{Op: "mincore", Path: f.Name(), Err: errors.ErrUnsupported}
}

// FreeBytes is not available on this platform.
func FreeBytes(dir string) (int64, error) {
	return 0, &os.PathError{Op: "statfs", Path: dir, Err: errors.ErrUnsupported}
}

// StartWriteback is a no-op where sync_file_range does not exist.
func StartWriteback(f *os.File, off, n int64) error { return nil }

// Reopen is not supported on this platform.
func Reopen(f *os.File) (*os.File, error) {
	return nil, &os.PathError{Op: "reopen", Path: f.Name(), Err: errors.ErrUnsupported}
}

// ReadExactly does nothing on this platform (no readahead advice).
func ReadExactly(f *os.File) {}

// Prefetch does nothing on this platform (no readahead advice); reads wait as they come.
func Prefetch(f *os.File, off, n int64) {}
