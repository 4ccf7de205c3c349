//go:build !linux

package fsx

import "os"

func sendfile(dst SyscallWriter, src *os.File, off, n int64) (int64, error) {
	return copySection(dst, src, off, n)
}

func spliceToFile(dst *os.File, dstOff int64, src SyscallReader, n int64) (int64, error) {
	return readToFile(dst, dstOff, src, n)
}
