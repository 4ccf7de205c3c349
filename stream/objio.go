package stream

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sluicedb/sluice/internal/lib/fsx"
)

// The I/O seam, after pebble's objstorage (Readable, Writable): the sender reads the bytes of
// the sstable components it sends through a Readable, and the receiver writes the files it
// receives through a Writable. Production uses files (fileStorage); the fault tests put
// implementations in its place that fail or shorten reads and writes at chosen bytes, so that
// an EIO at byte N or ENOSPC at byte N is tested without root or loop mounts.
//
// Zero-copy stays: File returns the descriptor when the implementation has one, and the
// sendfile, splice and copy_file_range paths use it; an implementation without one (nil)
// makes them fall back to reading into the session's buffer and writing from it.

// Readable is a component file the sender reads from.
type Readable interface {
	// ReadAt reads len(p) bytes at off. Unlike io.ReaderAt it never returns a partial
	// result without an error, whatever the file system does (readFull).
	ReadAt(p []byte, off int64) error
	// Name names the file, for errors.
	Name() string
	// File returns the open file for sendfile, or nil: then every byte goes through ReadAt.
	File() *os.File
	// WillRead hints that [off, off+n) will be read soon, in order (POSIX_FADV_WILLNEED for
	// a file); the read-ahead policy (readahead.go) decides when and how much.
	WillRead(off, n int64)
	// Close releases the Readable; it closes the file only when the Readable owns it.
	Close() error
}

// Writable is a received file the receiver writes. After it is created exactly one of Finish
// or Abort is called; no write follows either. Neither makes the bytes durable or visible:
// the install's commit does (fsx.Install, fsx.CommitAll).
type Writable interface {
	io.Writer
	io.WriterAt
	// Sync makes the bytes written so far durable (a resume checkpoint).
	Sync() error
	// Name is the file's path (its temporary name inside an install).
	Name() string
	// File returns the open file for splice and copy_file_range, or nil: then every byte
	// goes through Write and WriteAt.
	File() *os.File
	// Finish says every byte is written and returns the first write error the Writable saw.
	Finish() error
	// Abort gives the bytes up; the install's abort removes the file.
	Abort()
}

// storage opens the Readables of the sender and the Writables of the receiver.
type storage interface {
	// readable reads f, closing it on Close when owned.
	readable(f *os.File, owned bool) Readable
	// writable writes f, a file an fsx.Install created and owns (it closes it).
	writable(f *os.File) Writable
}

// errWritableDone is a write after Finish or Abort.
var errWritableDone = errors.New("stream: write after Finish or Abort")

// fileStorage is the production storage: plain files.
type fileStorage struct{}

func (fileStorage) readable(f *os.File, owned bool) Readable {
	return &fileReadable{f: f, owned: owned}
}
func (fileStorage) writable(f *os.File) Writable { return &fileWritable{f: f} }

type fileReadable struct {
	f     *os.File
	owned bool
}

func (r *fileReadable) ReadAt(p []byte, off int64) error {
	return readFull(r.f, r.f.Name(), p, off)
}
func (r *fileReadable) Name() string   { return r.f.Name() }
func (r *fileReadable) File() *os.File { return r.f }
func (r *fileReadable) WillRead(off, n int64) {
	fsx.Prefetch(r.f, off, n)
}
func (r *fileReadable) Close() error {
	if r.owned {
		return r.f.Close()
	}
	return nil
}

// readFull reads len(p) bytes of r at off, going on after short reads (a file system may
// return fewer bytes than asked without an error); a file that ends before them is an error
// naming it.
func readFull(r io.ReaderAt, name string, p []byte, off int64) error {
	for done := 0; done < len(p); {
		n, err := r.ReadAt(p[done:], off+int64(done))
		done += n
		switch {
		case done == len(p):
			return nil
		case errors.Is(err, io.EOF):
			return fmt.Errorf("reading %s at %d: %w (the file ends at %d)", name, off, io.ErrUnexpectedEOF, off+int64(done))
		case err != nil:
			return fmt.Errorf("reading %s at %d: %w", name, off+int64(done), err)
		case n == 0:
			return fmt.Errorf("reading %s at %d: %w", name, off+int64(done), io.ErrNoProgress)
		}
	}
	return nil
}

// fileWritable writes an install's file. The install owns the file: Finish and Abort leave it
// open for the install's rebuild, commit or abort. Like an *os.File it is used from one
// goroutine at a time. What it writes goes to writeback every few megabytes (fsx.Trickle),
// so that the commit's sync does not wait for a whole batch's bytes at once.
type fileWritable struct {
	f       *os.File
	err     error
	done    bool
	pos     int64 // where Write writes (the install created the file empty)
	trickle fsx.Trickle
}

func (w *fileWritable) Write(p []byte) (int, error) {
	if w.done {
		return 0, errWritableDone
	}
	n, err := w.f.Write(p)
	w.keep(err)
	w.wrote(w.pos, int64(n))
	w.pos += int64(n)
	return n, err
}

func (w *fileWritable) WriteAt(p []byte, off int64) (int, error) {
	if w.done {
		return 0, errWritableDone
	}
	n, err := w.f.WriteAt(p, off)
	w.keep(err)
	w.wrote(off, int64(n))
	return n, err
}

// wrote records n bytes written at off, by this Writable or by a data plane that placed them
// through File (splice, copy_file_range).
func (w *fileWritable) wrote(off, n int64) { w.trickle.Wrote(w.f, off, n) }

func (w *fileWritable) keep(err error) {
	if err != nil && w.err == nil {
		w.err = err
	}
}

func (w *fileWritable) Sync() error    { return w.f.Sync() }
func (w *fileWritable) Name() string   { return w.f.Name() }
func (w *fileWritable) File() *os.File { return w.f }

func (w *fileWritable) Finish() error {
	w.done = true
	return w.err
}

func (w *fileWritable) Abort() { w.done = true }
