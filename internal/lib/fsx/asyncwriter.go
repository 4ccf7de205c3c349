package fsx

import (
	"io"
	"os"
	"sync"
)

// AsyncWriter hands full buffers to a goroutine that writes them to a file, so that the write
// system calls (copying into the page cache) overlap with the producer's work (compression)
// instead of following it, and starts writeback every few megabytes (trickle fsync) so that
// the final fsync has little left to do. At most depth buffers are in flight. Close flushes,
// waits and reports the first write error; it does not close or sync the file.
type AsyncWriter struct {
	w       io.Writer
	file    *os.File
	offset  int64 // where the next buffer goes (the writer appends)
	trickle Trickle
	size    int
	buf     []byte
	free    chan []byte
	full    chan []byte
	done    chan struct{}
	errOnce sync.Once
	err     error
}

// NewAsyncWriter returns an AsyncWriter to f with depth buffers of size bytes.
func NewAsyncWriter(f *os.File, size, depth int) *AsyncWriter {
	a := &AsyncWriter{w: f, file: f, size: size, free: make(chan []byte, depth), full: make(chan []byte, depth), done: make(chan struct{})}
	for i := 0; i < depth; i++ {
		a.free <- make([]byte, 0, size)
	}
	a.buf = <-a.free
	go a.run()
	return a
}

func (a *AsyncWriter) run() {
	defer close(a.done)
	for b := range a.full {
		if a.failed() == nil {
			if _, err := a.w.Write(b); err != nil {
				a.setErr(err)
			}
			a.trickle.Wrote(a.file, a.offset, int64(len(b)))
			a.offset += int64(len(b))
		}
		a.free <- b[:0]
	}
}

func (a *AsyncWriter) setErr(err error) { a.errOnce.Do(func() { a.err = err }) }

// failed reads the error; it is only set by run before it returns the buffer, and read after
// receiving a buffer from free or after done, so the channel operations order the accesses.
func (a *AsyncWriter) failed() error { return a.err }

func (a *AsyncWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := copy(a.buf[len(a.buf):cap(a.buf)], p)
		a.buf = a.buf[:len(a.buf)+k]
		p, n = p[k:], n+k
		if len(a.buf) == cap(a.buf) {
			a.full <- a.buf
			a.buf = <-a.free
			if err := a.failed(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Close writes what is buffered, stops the goroutine and returns the first write error.
func (a *AsyncWriter) Close() error {
	if a.buf != nil && len(a.buf) > 0 {
		a.full <- a.buf
	}
	a.buf = nil
	close(a.full)
	<-a.done
	return a.err
}
