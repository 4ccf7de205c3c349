//go:build !linux

package fsx

import (
	"errors"
	"fmt"
	"os"
)

// Without the Linux syscalls every copy is buffered and no clone is attempted.

func cloneRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) error {
	return fmt.Errorf("%w: %w", ErrCloneUnsupported, errors.ErrUnsupported)
}

func copyFileRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (int64, error) {
	return 0, nil
}

func sendfileRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (int64, error) {
	return 0, nil
}

const reflinkPlatform = false

func statDevSize(f *os.File) (dev uint64, size int64, err error) {
	return 0, 0, errors.ErrUnsupported
}

func fsBlockSize(f *os.File) (int64, error) {
	return 0, errors.ErrUnsupported
}
