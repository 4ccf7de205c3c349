package bigindex

import (
	"errors"
	"fmt"
	"io"
)

// DefaultBufferSize is the Scanner's initial buffer when none is given. Most entries are tens
// of bytes; a promoted index grows the buffer only when one is met.
const DefaultBufferSize = 64 << 10

// maxEmptyReads bounds how often a reader may return (0, nil) in a row before the Scanner gives
// up, as bufio does.
const maxEmptyReads = 100

// Scanner walks the entries of an Index.db read from an io.Reader or io.ReaderAt, for files
// too large to hold in memory. It reads through one reusable buffer that grows only when an
// entry does not fit, and then only as bytes actually arrive (doubling each time the buffer is
// full), so a hostile promoted-index size can never make it allocate more than about twice
// what the file really holds. With a known size (NewScannerAt) an entry that claims to run
// past the end is rejected before anything is read or allocated.
//
// Entry returns a pointer to a reused Entry whose Key and Promoted alias the buffer: they are
// valid only until the next call to Next. A Scanner is not safe for concurrent use.
type Scanner struct {
	r          io.Reader
	buf        []byte
	start, end int   // buf[start:end] is read but not yet consumed
	off        int64 // Index.db offset of buf[0]
	limit      int64 // Index.db offset of the end of input, or -1 when unknown
	eof        bool
	e          Entry
	err        error
}

// NewScanner returns a scanner reading entries from r, whose first byte is at Index.db offset
// 0. bufSize is the initial buffer size (<= 0 means DefaultBufferSize).
func NewScanner(r io.Reader, bufSize int) *Scanner {
	return newScanner(r, 0, -1, bufSize)
}

// NewScannerAt returns a scanner over the entries in [start, end) of an Index.db read through
// r; start must be the offset of an entry (0, or a Summary.db sample's position). Entry
// offsets and error offsets are file offsets. bufSize is the initial buffer size (<= 0 means
// DefaultBufferSize).
func NewScannerAt(r io.ReaderAt, start, end int64, bufSize int) *Scanner {
	end = max(end, start)
	return newScanner(io.NewSectionReader(r, start, end-start), start, end, bufSize)
}

func newScanner(r io.Reader, start, limit int64, bufSize int) *Scanner {
	if bufSize <= 0 {
		bufSize = DefaultBufferSize
	}
	if limit >= 0 && int64(bufSize) > limit-start {
		bufSize = int(max(limit-start, 16))
	}
	return &Scanner{r: r, buf: make([]byte, bufSize), off: start, limit: limit}
}

// Next decodes the next entry. It returns false at the end of input, on a malformed entry and
// on a read error; Err tells which.
func (s *Scanner) Next() bool {
	if s.err != nil {
		return false
	}
	for {
		if s.start == s.end {
			if s.eof {
				return false
			}
			if err := s.fill(1); err != nil {
				s.err = err
				return false
			}
			if s.start == s.end {
				return false
			}
		}
		rest := s.buf[s.start:s.end]
		n, f, at, need := decodeEntry(rest, &s.e)
		if f == faultNone {
			s.e.Offset = s.off + int64(s.start)
			s.start += n
			return true
		}
		entryOff := s.off + int64(s.start)
		if need == 0 || s.eof || (s.limit >= 0 && entryOff+int64(need) > s.limit) {
			s.err = entryError(f, entryOff, at, need, s.avail(need))
			return false
		}
		if err := s.fill(need); err != nil {
			s.err = err
			return false
		}
	}
}

// avail is how many bytes of the current entry the input holds, for error messages: what is
// buffered, or (with a known size) what the file has left, if that is less than need.
func (s *Scanner) avail(need int) int {
	n := s.end - s.start
	if s.limit >= 0 {
		left := s.limit - (s.off + int64(s.start))
		if left < int64(need) {
			return int(left)
		}
	}
	return n
}

// fill reads until at least need bytes are buffered from s.start, or the input ends.
func (s *Scanner) fill(need int) error {
	empty := 0
	for s.end-s.start < need && !s.eof {
		if s.end == len(s.buf) {
			if s.start > 0 {
				// Slide the unread bytes to the front; the previous Entry is dead by now.
				s.end = copy(s.buf, s.buf[s.start:s.end])
				s.off += int64(s.start)
				s.start = 0
			} else {
				// Full of one entry's bytes: double, so growth tracks bytes that arrived.
				grown := make([]byte, 2*len(s.buf))
				copy(grown, s.buf[:s.end])
				s.buf = grown
			}
		}
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		switch {
		case errors.Is(err, io.EOF):
			s.eof = true
		case err != nil:
			return fmt.Errorf("bigindex: read Index.db at offset %d: %w", s.off+int64(s.end), err)
		case n == 0:
			empty++
			if empty >= maxEmptyReads {
				return fmt.Errorf("bigindex: read Index.db at offset %d: %w", s.off+int64(s.end), ErrNoProgress)
			}
		default:
			empty = 0
		}
	}
	return nil
}

// Entry is the entry decoded by the last successful Next; valid until the next call to Next.
func (s *Scanner) Entry() *Entry { return &s.e }

// Err is the first error met, or nil at a clean end of input.
func (s *Scanner) Err() error { return s.err }

// Offset is the Index.db offset just past the last decoded entry.
func (s *Scanner) Offset() int64 { return s.off + int64(s.start) }
