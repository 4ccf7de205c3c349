package stream

import (
	"errors"
	"io"
)

// The sender's read-ahead policy, all of it: what the sender asks the device for ahead of
// sending it. Tune here.
//
//   - File bytes (a partial's Data.db runs, an entire sstable's components): as the send loop
//     reaches each source, and then whenever what it asked for runs less than runAheadWindow
//     ahead of what it sends, it asks the source's Readable for the next runAheadWindow bytes
//     (Readable.WillRead: POSIX_FADV_WILLNEED for a file), never past the source's end, so
//     that the device reads a run's bytes while the previous ones are sent and is not asked
//     for what lies past the run. The kernel's own readahead of each open file stays as it is.
//   - The index slice a pass over the parent's index makes as it is sent: a goroutine of its
//     own (readAhead) reads it up to indexAheadDepth pieces of indexAheadPiece bytes ahead of
//     the send loop, so the pass runs while the runs are sent instead of after them.
const (
	runAheadWindow  = 4 << 20
	indexAheadPiece = 1 << 20
	indexAheadDepth = 3
)

// aheadOf asks src's Readable for its bytes ahead of done, as the policy above says, before
// the frame at done is read or sent.
func aheadOf(src *source, done int64) {
	if src.r == nil || src.hinted >= src.n || src.hinted-done >= runAheadWindow {
		return
	}
	// From where the last hint ended (or the frame itself, on the first), two windows ahead at
	// most: one being sent, one being read.
	from := max(src.hinted, done)
	to := min(src.n, done+2*runAheadWindow)
	if to > from {
		src.r.WillRead(src.off+from, to-from)
	}
	src.hinted = to
}

// indexAhead reads an index slice of n bytes from src ahead of its sending: 4 MiB at most
// per sstable being sent, less for a shorter slice.
func indexAhead(src io.ReadCloser, n int64) *readAhead {
	return newReadAhead(src, int(min(indexAheadPiece, n)), indexAheadDepth)
}

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
