package fsx

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pipeSize is what SpliceToFile asks for its pipe: 1 MiB moves more per syscall pair than the
// default 64 KiB. The kernel may grant less (fs.pipe-max-size); the granted size is used.
const pipeSize = 1 << 20

func sendfile(dst SyscallWriter, src *os.File, off, n int64) (int64, error) {
	rc, err := dst.SyscallConn()
	if err != nil {
		return 0, err
	}
	var done int64
	var serr error
	err = control(src, func(sfd int) error {
		return rc.Write(func(dfd uintptr) bool {
			for done < n {
				o := off + done
				k, err := unix.Sendfile(int(dfd), sfd, &o, int(min(n-done, maxChunk)))
				switch {
				case err == unix.EAGAIN:
					// A full socket buffer: the poller calls us again once it drains.
					return false
				case err == unix.EINTR:
					continue
				case err != nil:
					serr = err
					return true
				case k == 0:
					serr = io.ErrUnexpectedEOF
					return true
				}
				done += int64(k)
			}
			return true
		})
	})
	if err == nil {
		err = serr
	}
	if errnoIn(err, unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP) {
		k, err := copySection(dst, src, off+done, n-done)
		return done + k, err
	}
	return done, err
}

func spliceToFile(dst *os.File, dstOff int64, src SyscallReader, n int64) (int64, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return 0, os.NewSyscallError("pipe2", err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	pipeCap := 64 << 10
	if sz, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, pipeSize); err == nil {
		pipeCap = sz
	}
	rc, err := src.SyscallConn()
	if err != nil {
		return 0, err
	}
	var done int64
	var refused bool // the very first splice from src failed: src is not spliceable
	err = control(dst, func(dfd int) error {
		for done < n {
			// Fill the (empty) pipe from src. The pipe end blocks, but never waits: it is
			// empty and the request fits. A non-blocking src says EAGAIN, and the poller
			// calls again when data arrives.
			var inPipe int
			var serr error
			err := rc.Read(func(sfd uintptr) bool {
				for {
					k, err := unix.Splice(int(sfd), nil, p[1], nil, int(min(n-done, int64(pipeCap))), unix.SPLICE_F_MOVE)
					switch {
					case err == unix.EAGAIN:
						return false
					case err == unix.EINTR:
						continue
					case err != nil:
						serr = err
					case k == 0:
						serr = io.ErrUnexpectedEOF
					}
					inPipe = int(k)
					return true
				}
			})
			if err == nil {
				err = serr
			}
			if err != nil {
				refused = done == 0 && errnoIn(err, unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP)
				return err
			}
			// Drain the pipe into dst at the explicit offset; dst's file position stays.
			for inPipe > 0 {
				off := dstOff + done
				k, err := unix.Splice(p[0], nil, dfd, &off, inPipe, unix.SPLICE_F_MOVE)
				switch {
				case err == unix.EINTR:
					continue
				case err != nil:
					return err
				case k == 0:
					return io.ErrShortWrite
				}
				inPipe -= int(k)
				done += k
			}
		}
		return nil
	})
	if refused {
		return readToFile(dst, dstOff, src, n)
	}
	return done, err
}
