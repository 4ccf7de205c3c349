package stream

import (
	"errors"
	"io"

	"github.com/sluicedb/sluice/wire"
)

// The sender's read-ahead policy, all of it: what the sender asks the device for ahead of
// sending it. Tune here.
//
//   - SSTables: the manifest and sources of the next sstablesAhead sstables are made
//     (prepareAhead) while the one before them is sent. Making a partial's manifest reads
//     every chunk CRC of its runs for the digest (slice.LayoutDigest), which first asks the
//     device for the runs themselves, and starts the pass over the parent's index that makes
//     its index slice (indexAhead): made one sstable ahead, that cold read of the next
//     sstable's runs and index runs while this one's bytes are sent, instead of the data
//     plane waiting for it between sstables. The page cache holds at most this sstable's and
//     the next ones' runs; nothing is read that is not then sent, unless the session ends
//     first.
//   - File bytes (a partial's Data.db runs, an entire sstable's components): when an
//     sstable is made ahead, and then whenever what the send loop asked for runs less than
//     runAheadWindow ahead of what it sends, it asks the sources' Readables for the next
//     bytes up to two windows ahead (Readable.WillRead: POSIX_FADV_WILLNEED for a file),
//     across the end of one source into the next ones (a run ends, the next one's first
//     bytes are asked for), never past a source's end, so that the device reads a run's
//     bytes while the previous ones are sent and is not asked for what lies past the runs.
//     The kernel's own readahead of each open file stays as it is.
//   - The index slice a pass over the parent's index makes as it is sent: a goroutine of its
//     own (readAhead) reads it up to indexAheadDepth pieces of indexAheadPiece bytes ahead of
//     the send loop, so the pass runs while the runs are sent instead of after them.
const (
	sstablesAhead   = 1
	runAheadWindow  = 4 << 20
	indexAheadPiece = 1 << 20
	indexAheadDepth = 3
)

// aheadOf asks the Readables of srcs[i:] for their bytes ahead of done bytes into srcs[i],
// as the policy above says, before the frame at done is read or sent: when less than a
// window is asked for ahead of done, up to two windows ahead, from where the last hint ended,
// over srcs[i] and on into the file sources after it. Sources in memory or made as they are
// sent (the index slice) take nothing from the windows.
func aheadOf(srcs []source, i int, done int64) {
	ahead := int64(0) // bytes asked for ahead of done, over srcs[i:]
	for j := i; j < len(srcs) && ahead < runAheadWindow; j++ {
		s := &srcs[j]
		if s.r == nil {
			continue
		}
		from := int64(0)
		if j == i {
			from = done
		}
		if s.hinted < s.n {
			ahead += max(s.hinted-from, 0)
			break
		}
		ahead += s.n - from
	}
	if ahead >= runAheadWindow {
		return
	}
	// From where the last hint ended (or the frame itself, on the first), two windows ahead
	// of done at most: one being sent, one being read.
	left := 2 * int64(runAheadWindow)
	for j := i; j < len(srcs) && left > 0; j++ {
		s := &srcs[j]
		if s.r == nil {
			continue
		}
		pos := int64(0)
		if j == i {
			pos = done
		}
		from := max(s.hinted, pos)
		to := min(s.n, pos+left)
		if to > from {
			s.r.WillRead(s.off+from, to-from)
			s.hinted = to
		}
		left -= s.n - pos
	}
}

// prepared is one sstable's Manifest and the sources of its bytes, made ahead of its turn
// (prepareAhead); err is manifestFor's, which fails the sstable when its turn comes.
type prepared struct {
	o *outgoing
	// verified is the receiver's resume point for it (Sender.Resumed); skipped, the bytes
	// of Data.db that the sources then leave out.
	verified uint64
	skipped  int64
	m        *wire.Manifest
	srcs     []source
	err      error
}

// preparer makes the sstables of a session in the order they are sent, sstablesAhead ahead of
// the one being sent (see the policy above), on a goroutine of its own.
type preparer struct {
	out  chan *prepared // in order; closed after the last, or once stopped
	stop chan struct{}
	done chan struct{}
}

// prepareAhead starts making the manifests and sources of todo (o and verified set), in
// order, through store.
func prepareAhead(todo []*prepared, store storage) *preparer {
	pr := &preparer{out: make(chan *prepared, sstablesAhead-1), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		defer close(pr.out)
		for _, p := range todo {
			select {
			case <-pr.stop:
				return
			default:
			}
			p.m, p.srcs, p.err = manifestFor(p.o, store)
			if p.err == nil {
				p.skipped = resumeSources(p.o, p.m, p.srcs, p.verified)
				// The first bytes of its runs, before its turn (a compressed parent's are read
				// already: its digest read their CRCs).
				aheadOf(p.srcs, 0, 0)
			}
			select {
			case pr.out <- p:
			case <-pr.stop:
				closeSources(p.srcs)
				return
			}
		}
	}()
	return pr
}

// next returns the next sstable made, which the caller must send or close (closeSources), or
// false when none is left.
func (pr *preparer) next() (*prepared, bool) {
	p, ok := <-pr.out
	return p, ok
}

// close stops making sstables, closes the sources of those made and not taken, and waits
// for the goroutine to return.
func (pr *preparer) close() {
	select {
	case <-pr.stop:
	default:
		close(pr.stop)
	}
	for p := range pr.out {
		closeSources(p.srcs)
	}
	<-pr.done
}

// closeSources closes what the sources hold: their Readables and index readers.
func closeSources(srcs []source) {
	for _, s := range srcs {
		if s.r != nil {
			s.r.Close()
		}
		if s.seq != nil {
			s.seq.Close()
		}
	}
}

// indexKeep bounds the IndexPositions slices a sender's session keeps from its plan's pass
// (slice.PartialOptions.IndexKeep) instead of making them again as they are sent: ~1.4M
// partitions at ~3 bytes each, the first sstables' (held from the plan until sent). A
// variable for tests, which set it to 0 to have every slice made as it is sent.
var indexKeep int64 = 4 << 20

// pacedPiece is the read-ahead piece and the frame of a paced index slice of n bytes (an
// IndexPositions slice, which goes in step with the runs): a 64th of it, 16 KiB to
// indexAheadPiece. In pieces of the session's frame size the first would wait until as large
// a share of the runs was sent: a third of a small-partition child's runs (~1 MiB of a ~3 MiB
// slice) while the receiver's rebuild, its critical path, had nothing to do.
func pacedPiece(n int64) int64 { return min(max(n/64, 16<<10), indexAheadPiece, n) }

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
