package fsx

import (
	"io"
	"math"
	"os"
	"sync"
)

// copyBufSize bounds the user-space buffer of the buffered fallback: large enough to amortise
// the syscalls, small enough that concurrent copies do not pin much memory.
const copyBufSize = 256 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// CloneRange makes dst's n bytes at dstOff share the extents of src's n bytes at srcOff
// (FICLONERANGE). The kernel does all of it or none of it. It requires both files on one
// file system that supports reflink, srcOff, dstOff and n multiples of the file system block
// size (n may end unaligned exactly at src's EOF), and dst open for writing and src for
// reading. A failure for one of those reasons wraps ErrCloneUnsupported. Neither file's
// position moves. A zero n does nothing (the ioctl itself would read it as "to EOF").
// A clone is metadata only: dst still needs an fsync to be durable.
func CloneRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) error {
	if err := checkRange(dstOff, srcOff, n); err != nil {
		return newRangeError("clone", dst, dstOff, src, srcOff, n, err)
	}
	if n == 0 {
		return nil
	}
	if err := cloneRange(dst, dstOff, src, srcOff, n); err != nil {
		return newRangeError("clone", dst, dstOff, src, srcOff, n, err)
	}
	return nil
}

// CopyRange writes exactly n bytes of src starting at srcOff into dst at dstOff and reports the
// mechanism that copied the last bytes. It tries copy_file_range (looping on short counts; a
// zero count or an errno meaning "not for this pair" moves on), then sendfile, then a bounded
// pread/pwrite loop, resuming each fallback where the previous mechanism stopped. A source
// shorter than srcOff+n yields an error wrapping io.ErrUnexpectedEOF after the available bytes
// were copied. The ranges must not overlap if src and dst are the same file.
//
// Positions: src's file offset never moves, and neither does dst's unless the sendfile
// fallback ran, which writes at dst's file offset: CopyRange then seeks dst to its target
// and leaves the offset at the end of what sendfile wrote. That happens when copy_file_range
// refuses the pair (EXDEV across file system types on current kernels, ENOSYS before 4.5).
// Concurrent CopyRange calls into one dst *os.File are safe only if none can fall back to
// sendfile; writers that may cross file systems should each open their own *os.File.
func CopyRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (Method, error) {
	return copyRange(dst, dstOff, src, srcOff, n, MethodCopyFileRange)
}

// copyRange is CopyRange starting the fallback chain at first; tests force each fallback.
func copyRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64, first Method) (Method, error) {
	if err := checkRange(dstOff, srcOff, n); err != nil {
		return MethodNone, newRangeError("copy", dst, dstOff, src, srcOff, n, err)
	}
	if n == 0 {
		return MethodNone, nil
	}
	var done int64
	for m := first; ; m++ {
		var k int64
		var err error
		switch m {
		case MethodCopyFileRange:
			k, err = copyFileRange(dst, dstOff+done, src, srcOff+done, n-done)
		case MethodSendfile:
			k, err = sendfileRange(dst, dstOff+done, src, srcOff+done, n-done)
		default:
			m = MethodBuffered
			k, err = bufferedCopy(dst, dstOff+done, src, srcOff+done, n-done)
		}
		done += k
		if err != nil {
			return m, newRangeError("copy", dst, dstOff, src, srcOff, n, err)
		}
		if done == n {
			return m, nil
		}
	}
}

// bufferedCopy is the portable last resort: ReadAt/WriteAt are pread/pwrite, so no file
// position moves. It returns io.ErrUnexpectedEOF when src ends early.
func bufferedCopy(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var done int64
	for done < n {
		chunk := buf[:min(int64(len(buf)), n-done)]
		r, err := src.ReadAt(chunk, srcOff+done)
		if r > 0 {
			if _, werr := dst.WriteAt(chunk[:r], dstOff+done); werr != nil {
				return done, werr
			}
			done += int64(r)
		}
		switch {
		case err == io.EOF && done < n:
			return done, io.ErrUnexpectedEOF
		case err != nil && err != io.EOF:
			return done, err
		}
	}
	return done, nil
}

func checkRange(dstOff, srcOff, n int64) error {
	if dstOff < 0 || srcOff < 0 || n < 0 || dstOff > math.MaxInt64-n || srcOff > math.MaxInt64-n {
		return ErrInvalidRange
	}
	return nil
}

func newRangeError(op string, dst *os.File, dstOff int64, src *os.File, srcOff, n int64, err error) error {
	return &RangeError{Op: op, Src: src.Name(), SrcOff: srcOff, Dst: dst.Name(), DstOff: dstOff, N: n, Err: err}
}

// BlockSize is the block size of the file system holding path (a file or directory): the
// granularity a reflink clone needs its offsets and length aligned to.
func BlockSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return fsBlockSize(f)
}
