package bloom

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapWords maps n zeroed words outside the Go heap; ok is false when the kernel refuses.
func mapWords(n int) (words []uint64, release func(), ok bool) {
	b, err := unix.Mmap(-1, 0, 8*n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, false
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n), func() { _ = unix.Munmap(b) }, true
}
