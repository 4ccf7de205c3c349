package stream

import (
	"errors"
	"io"
)

// readAhead reads a sequential source (an index slice made by a pass over the parent's
// index, slice.IndexReader) on a goroutine of its own, up to depth pieces of size bytes
// ahead of its reader. The sender creates it when it announces an sstable, so the index
// pass runs while the sstable's Data.db runs are sent instead of after them: for a parent of
// small partitions that pass is most of the time the index slice takes. Memory: depth+1
// pieces, whatever the slice's length.
type readAhead struct {
	pieces chan []byte   // filled pieces, in order; closed after the last
	free   chan []byte   // pieces the reader is done with
	done   chan struct{} // closed by Close: stop reading
	exited chan struct{} // closed when the goroutine returned (and closed the source)
	end    error         // io.EOF or the source's error; set before pieces is closed
	cur    []byte        // the piece being read
	held   []byte        // its whole buffer, returned to free when used up
}

func newReadAhead(src io.ReadCloser, size, depth int) *readAhead {
	ra := &readAhead{pieces: make(chan []byte, depth), free: make(chan []byte, depth+1), done: make(chan struct{}),
		exited: make(chan struct{})}
	for range depth + 1 {
		ra.free <- make([]byte, size)
	}
	go ra.run(src)
	return ra
}

func (ra *readAhead) run(src io.ReadCloser) {
	defer close(ra.exited)
	defer src.Close()
	for {
		var buf []byte
		select {
		case buf = <-ra.free:
		case <-ra.done:
			return
		}
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			select {
			case ra.pieces <- buf[:n]:
			case <-ra.done:
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF
			}
			ra.end = err
			close(ra.pieces)
			return
		}
	}
}

func (ra *readAhead) Read(p []byte) (int, error) {
	if len(ra.cur) == 0 {
		if ra.held != nil {
			ra.free <- ra.held[:cap(ra.held)]
			ra.held = nil
		}
		b, ok := <-ra.pieces
		if !ok {
			return 0, ra.end
		}
		ra.cur, ra.held = b, b
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// ready says whether n bytes can be read without waiting for the source: they are in the
// piece being read, or a next piece is ready (pieces are full but for the last, so n bytes
// of them are there unless the source ends short of them, which fails the read at once).
func (ra *readAhead) ready(n int64) bool {
	return int64(len(ra.cur)) >= n || len(ra.pieces) > 0
}

// Close stops the reading goroutine and waits until it closed the source.
func (ra *readAhead) Close() error {
	select {
	case <-ra.done:
	default:
		close(ra.done)
	}
	<-ra.exited
	return nil
}
