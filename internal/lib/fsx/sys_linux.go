package fsx

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// control runs fn with f's descriptor, holding a reference so a concurrent Close cannot
// recycle the number mid-call. Unlike f.Fd it leaves the descriptor's blocking mode alone.
func control(c syscall.Conn, fn func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// control2 is control for two files at once.
func control2(a, b *os.File, fn func(afd, bfd int) error) error {
	return control(a, func(afd int) error {
		return control(b, func(bfd int) error { return fn(afd, bfd) })
	})
}

// errnoIn reports whether err is one of the given errnos.
func errnoIn(err error, set ...unix.Errno) bool {
	var e unix.Errno
	if !errors.As(err, &e) {
		return false
	}
	for _, s := range set {
		if e == s {
			return true
		}
	}
	return false
}

// cloneUnsupported lists the errnos with which FICLONERANGE says "not here" rather than "failed":
// no reflink in this file system (EOPNOTSUPP; ENOTTY from file systems without the ioctl;
// ENOSYS), different file systems (EXDEV), a range or block size the file system refuses
// (EINVAL), and files that may not be remapped (EPERM: immutable, append-only, swap).
func cloneUnsupported(err error) bool {
	return errnoIn(err, unix.EOPNOTSUPP, unix.ENOTTY, unix.ENOSYS, unix.EXDEV, unix.EINVAL, unix.EPERM)
}

// openUnnamed opens an O_TMPFILE in dir: a file with no name, freed when closed.
func openUnnamed(dir string) (*os.File, error) {
	return os.OpenFile(dir, unix.O_TMPFILE|os.O_RDWR, 0o600)
}
