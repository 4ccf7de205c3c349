package stream

import (
	"os"
	"strings"
	"sync"
)

// faultStorage is the I/O seam (objio.go) with a disk that misbehaves at a chosen byte of the
// files whose names end in suffix ("" for every file): a read covering byte at fails with
// readErr (EIO), every read returns at most shortRead bytes, a write reaching past byte at
// writes up to it and fails with writeErr (ENOSPC: the file system is full), or, torn, a
// write crossing byte at writes only up to it and says it wrote everything (a file system
// that lies). Its Readables and Writables have no file, so sendfile, splice and
// copy_file_range fall back to the session's buffer. It also records the reads and the
// read-ahead hints of every Readable.
type faultStorage struct {
	suffix    string
	at        int64
	readErr   error
	shortRead int
	writeErr  error
	torn      bool

	mu    sync.Mutex
	seq   int
	reads map[string][]span // file name -> the byte ranges read, in order
	hints map[string][]span // file name -> the ranges WillRead asked for, in order
	tears int               // torn writes made
}

// span is the bytes [off, end) of a file, read or hinted as the seq-th event of the storage.
type span struct {
	off, end int64
	seq      int
}

func (s *faultStorage) faulted(name string) bool { return strings.HasSuffix(name, s.suffix) }

func (s *faultStorage) readable(f *os.File, owned bool) Readable {
	return &faultReadable{s: s, f: f, owned: owned}
}

func (s *faultStorage) writable(f *os.File) Writable { return &faultWritable{s: s, f: f} }

func (s *faultStorage) record(m *map[string][]span, name string, off, end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *m == nil {
		*m = map[string][]span{}
	}
	s.seq++
	(*m)[name] = append((*m)[name], span{off, end, s.seq})
}

type faultReadable struct {
	s     *faultStorage
	f     *os.File
	owned bool
}

// ReadAt goes through readFull, as fileReadable's does, over the faulty reads.
func (r *faultReadable) ReadAt(p []byte, off int64) error {
	return readFull(faultReaderAt{r}, r.f.Name(), p, off)
}

func (r *faultReadable) Name() string   { return r.f.Name() }
func (r *faultReadable) File() *os.File { return nil }
func (r *faultReadable) WillRead(off, n int64) {
	r.s.record(&r.s.hints, r.f.Name(), off, off+n)
}
func (r *faultReadable) Close() error {
	if r.owned {
		return r.f.Close()
	}
	return nil
}

type faultReaderAt struct{ r *faultReadable }

func (x faultReaderAt) ReadAt(p []byte, off int64) (int, error) {
	s, name := x.r.s, x.r.f.Name()
	if s.faulted(name) {
		if s.readErr != nil && off <= s.at && s.at < off+int64(len(p)) {
			n, _ := x.r.f.ReadAt(p[:s.at-off], off)
			s.record(&s.reads, name, off, off+int64(n))
			return n, &os.PathError{Op: "read", Path: name, Err: s.readErr}
		}
		if s.shortRead > 0 && len(p) > s.shortRead {
			p = p[:s.shortRead]
		}
	}
	n, err := x.r.f.ReadAt(p, off)
	s.record(&s.reads, name, off, off+int64(n))
	return n, err
}

type faultWritable struct {
	s    *faultStorage
	f    *os.File
	pos  int64 // Write's offset
	err  error
	done bool
}

func (w *faultWritable) Write(p []byte) (int, error) {
	n, err := w.WriteAt(p, w.pos)
	w.pos += int64(n)
	return n, err
}

func (w *faultWritable) WriteAt(p []byte, off int64) (int, error) {
	if w.done {
		return 0, errWritableDone
	}
	s, name := w.s, w.f.Name()
	end := off + int64(len(p))
	if s.faulted(name) && end > s.at {
		k := min(max(s.at-off, 0), int64(len(p)))
		switch {
		case s.torn && off < s.at:
			n, err := w.f.WriteAt(p[:k], off)
			if err != nil {
				return n, err
			}
			s.mu.Lock()
			s.tears++
			s.mu.Unlock()
			return len(p), nil // the rest never reaches the disk
		case s.writeErr != nil:
			n, _ := w.f.WriteAt(p[:k], off)
			err := &os.PathError{Op: "write", Path: name, Err: s.writeErr}
			if w.err == nil {
				w.err = err
			}
			return n, err
		}
	}
	return w.f.WriteAt(p, off)
}

func (w *faultWritable) Sync() error    { return w.f.Sync() }
func (w *faultWritable) Name() string   { return w.f.Name() }
func (w *faultWritable) File() *os.File { return nil }
func (w *faultWritable) Finish() error  { w.done = true; return w.err }
func (w *faultWritable) Abort()         { w.done = true }
