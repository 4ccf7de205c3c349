package fsx

import (
	"errors"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EvictPageCache drops f's pages from the page cache so the next read comes from the device,
// as a cold-cache benchmark needs. It fsyncs first because POSIX_FADV_DONTNEED only drops
// clean pages. Pages mapped by some process stay.
func EvictPageCache(f *os.File) error {
	if err := f.Sync(); err != nil {
		return err
	}
	err := control(f, func(fd int) error { return unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED) })
	if err != nil {
		return &os.PathError{Op: "fadvise", Path: f.Name(), Err: err}
	}
	return nil
}

// Reopen opens f's file again, a new open file of the same inode (through /proc/self/fd, so
// not whatever now has f's name), for advice such as ReadExactly that must not affect f's
// other readers.
func Reopen(f *os.File) (*os.File, error) {
	var g *os.File
	// Opened while f's descriptor is held, so the number cannot be another file's meanwhile.
	if err := control(f, func(d int) (err error) {
		g, err = os.Open("/proc/self/fd/" + strconv.Itoa(d))
		return err
	}); err != nil {
		return nil, err
	}
	a, err1 := f.Stat()
	b, err2 := g.Stat()
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		g.Close()
		return nil, &os.PathError{Op: "reopen", Path: f.Name(), Err: errors.New("not the same file")}
	}
	return g, nil
}

// ReadExactly makes reads through f bring in only the bytes asked for (POSIX_FADV_RANDOM: no
// kernel readahead on this open file), for a reader that prefetches its own ranges: small
// reads then never pull in the device's whole readahead window (8 MiB on some disks) past
// the end of what is needed. Advice: failures are ignored.
func ReadExactly(f *os.File) {
	_ = control(f, func(fd int) error { return unix.Fadvise(fd, 0, 0, unix.FADV_RANDOM) })
}

// Prefetch asks the kernel to start reading f's bytes [off, off+n) into the page cache
// (POSIX_FADV_WILLNEED) and returns at once: reads issued for several ranges proceed together
// instead of one after another. It is advice, so failures are ignored.
func Prefetch(f *os.File, off, n int64) {
	// The kernel reads at most its readahead window per request: ask in pieces.
	const piece = 4 << 20
	for n > 0 {
		k := min(n, piece)
		_ = control(f, func(fd int) error { return unix.Fadvise(fd, off, k, unix.FADV_WILLNEED) })
		off, n = off+k, n-k
	}
}

// residentWindow bounds one mapping of ResidentBytes, and so its residency vector (one byte per
// page: 256 KiB for 1 GiB of 4 KiB pages).
const residentWindow = 1 << 30

// ResidentBytes returns how many of f's bytes are in the page cache, by mapping f (without
// touching it) and asking mincore(2). x/sys has no wrapper for mincore, so it is called through
// unix.Syscall with unix.SYS_MINCORE. f must be open for reading; the kernel answers only for
// files the caller owns or may write (root may always), and otherwise reports nothing
// resident.
func ResidentBytes(f *os.File) (int64, error) {
	_, size, err := statDevSize(f)
	if err != nil || size == 0 {
		return 0, err
	}
	page := int64(os.Getpagesize())
	vec := make([]byte, (min(size, residentWindow)+page-1)/page)
	var resident int64
	err = control(f, func(fd int) error {
		for off := int64(0); off < size; off += residentWindow {
			length := min(size-off, residentWindow)
			data, err := unix.Mmap(fd, off, int(length), unix.PROT_READ, unix.MAP_SHARED)
			if err != nil {
				return err
			}
			pages := (length + page - 1) / page
			_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(length), uintptr(unsafe.Pointer(&vec[0])))
			if err := unix.Munmap(data); err != nil {
				return err
			}
			if errno != 0 {
				return errno
			}
			for i := range pages {
				if vec[i]&1 != 0 {
					// The final page counts only up to EOF.
					resident += min(page, length-i*page)
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, &os.PathError{Op: "mincore", Path: f.Name(), Err: err}
	}
	return resident, nil
}

// FreeBytes returns the bytes available to unprivileged writers on dir's file system (statfs
// f_bavail, which excludes the root reserve).
func FreeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	unit := st.Frsize
	if unit == 0 {
		unit = st.Bsize
	}
	return int64(st.Bavail) * unit, nil
}

// StartWriteback asks the kernel to begin writing back the dirty pages of [off, off+n) of f
// without waiting (sync_file_range SYNC_FILE_RANGE_WRITE), as Cassandra's trickle fsync does:
// a writer that calls it as it goes leaves little for its final fsync, and the device works
// while the writer computes. It is advisory; errors are returned only for the caller to log.
func StartWriteback(f *os.File, off, n int64) error {
	return unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
