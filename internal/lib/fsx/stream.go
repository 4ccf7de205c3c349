package fsx

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// SyscallWriter is a destination of Sendfile: a TCP connection, a pipe or a file. The
// descriptor serves the zero-copy path and Write the fallback.
type SyscallWriter interface {
	io.Writer
	syscall.Conn
}

// SyscallReader is a source of SpliceToFile: a TCP connection or a pipe.
type SyscallReader interface {
	io.Reader
	syscall.Conn
}

// Sendfile writes src's n bytes at off to dst and returns how many it wrote. On Linux it uses
// sendfile(2), waiting for a non-blocking socket through the runtime poller, and falls back to
// a buffered copy when the kernel refuses the pair; elsewhere it always copies. src's file
// offset does not move. A src shorter than off+n yields an error wrapping io.ErrUnexpectedEOF.
//
// Cancelling ctx sets dst's write deadline (when dst has SetWriteDeadline, as net.Conn and
// pollable *os.File do) to the past, which aborts the transfer and leaves the deadline there;
// the error then wraps ctx's cause. Without a deadline method, cancellation is not observed.
func Sendfile(ctx context.Context, dst SyscallWriter, src *os.File, off, n int64) (int64, error) {
	if err := checkRange(0, off, n); err != nil {
		return 0, &RangeError{Op: "sendfile", Src: src.Name(), SrcOff: off, Dst: peerName(dst), N: n, Err: err}
	}
	if n == 0 {
		return 0, nil
	}
	stop := abortOnDone(ctx, dst, false)
	k, err := sendfile(dst, src, off, n)
	if err = stop(err); err != nil {
		return k, &RangeError{Op: "sendfile", Src: src.Name(), SrcOff: off, Dst: peerName(dst), N: n, Err: err}
	}
	return k, nil
}

// SpliceToFile reads exactly n bytes from src and writes them to dst at dstOff, returning how
// many it wrote. On Linux it moves them with splice(2) through a private pipe (socket → pipe →
// file, no copy through user space), falling back to a buffered read/pwrite when the kernel
// refuses src; elsewhere it always copies. dst's file offset does not move. src closing early
// yields an error wrapping io.ErrUnexpectedEOF; a full disk an error naming dst.
//
// Cancelling ctx sets src's read deadline (when src has SetReadDeadline) to the past, as in
// Sendfile.
func SpliceToFile(ctx context.Context, dst *os.File, dstOff int64, src SyscallReader, n int64) (int64, error) {
	if err := checkRange(dstOff, 0, n); err != nil {
		return 0, &RangeError{Op: "splice", Src: peerName(src), Dst: dst.Name(), DstOff: dstOff, N: n, Err: err}
	}
	if n == 0 {
		return 0, nil
	}
	stop := abortOnDone(ctx, src, true)
	k, err := spliceToFile(dst, dstOff, src, n)
	if err = stop(err); err != nil {
		return k, &RangeError{Op: "splice", Src: peerName(src), Dst: dst.Name(), DstOff: dstOff, N: n, Err: err}
	}
	return k, nil
}

// aLongTimeAgo is a deadline that has certainly passed.
var aLongTimeAgo = time.Unix(1, 0)

// abortOnDone arranges for ctx's cancellation to set c's read or write deadline to the past.
// The returned function stops that and, if ctx ended, wraps err with ctx's cause.
func abortOnDone(ctx context.Context, c any, read bool) func(error) error {
	var set func(time.Time) error
	if d, ok := c.(interface{ SetReadDeadline(time.Time) error }); ok && read {
		set = d.SetReadDeadline
	}
	if d, ok := c.(interface{ SetWriteDeadline(time.Time) error }); ok && !read {
		set = d.SetWriteDeadline
	}
	if set == nil || ctx.Done() == nil {
		return func(err error) error { return err }
	}
	stop := context.AfterFunc(ctx, func() { _ = set(aLongTimeAgo) })
	return func(err error) error {
		if !stop() && err != nil {
			return fmt.Errorf("%w: %w", context.Cause(ctx), err)
		}
		return err
	}
}

func peerName(c any) string {
	switch c := c.(type) {
	case *os.File:
		return c.Name()
	case net.Conn:
		return c.RemoteAddr().Network() + ":" + c.RemoteAddr().String()
	}
	return ""
}

// copySection is Sendfile's buffered path.
func copySection(dst io.Writer, src *os.File, off, n int64) (int64, error) {
	k, err := io.Copy(dst, io.NewSectionReader(src, off, n))
	if err == nil && k < n {
		err = io.ErrUnexpectedEOF
	}
	return k, err
}

// readToFile is SpliceToFile's buffered path: Read into a pooled buffer, WriteAt (pwrite).
func readToFile(dst *os.File, dstOff int64, src io.Reader, n int64) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var done int64
	for done < n {
		r, err := src.Read(buf[:min(int64(len(buf)), n-done)])
		if r > 0 {
			if _, werr := dst.WriteAt(buf[:r], dstOff+done); werr != nil {
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
