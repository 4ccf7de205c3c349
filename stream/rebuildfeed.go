package stream

import (
	"sync"
	"sync/atomic"

	"github.com/sluicedb/sluice/sstable/slice"
)

// rebuildFeed hands a child's index slice, piece by piece, to its slice.PartialRebuild on a
// goroutine of its own, so that the receive loop goes on reading (and decrypting and writing
// the runs, whose frames the index slice's are interleaved with) while the per-partition
// rebuild works: for small partitions the rebuild is most of the receiver's CPU.
//
// What waits is bounded in bytes, not frames: rebuildFeedPieces copies of at most
// rebuildFeedPiece bytes each (a frame is cut into pieces). On a long transfer whose rebuild
// is the slower side the queue is always full, so its bound is part of the receiver's peak
// memory however many partitions arrive; a megabyte ahead is ~40,000 records of small
// partitions, tens of milliseconds of rebuild, which is all the overlap needs.
type rebuildFeed struct {
	r      *slice.PartialRebuild
	frames chan []byte // copies of the slice's pieces, in order
	free   chan []byte // their buffers, back for reuse
	done   chan struct{}
	once   sync.Once
	// got is how much of Data.db is in place (slice.PartialRebuild.Arrived: the records of an
	// IndexPositions slice wait for their keys); wake tells run that it grew.
	got  atomic.Int64
	wake chan struct{}

	mu  sync.Mutex
	err error // the rebuild's first error
}

// rebuildFeedPieces and rebuildFeedPiece bound the index-slice bytes waiting for a child's
// rebuild: 4 x 256 KiB.
const (
	rebuildFeedPieces = 4
	rebuildFeedPiece  = 256 << 10
)

func newRebuildFeed(r *slice.PartialRebuild) *rebuildFeed {
	f := &rebuildFeed{r: r, frames: make(chan []byte, rebuildFeedPieces), free: make(chan []byte, rebuildFeedPieces),
		done: make(chan struct{}), wake: make(chan struct{}, 1)}
	for range rebuildFeedPieces {
		f.free <- nil
	}
	go f.run()
	return f
}

func (f *rebuildFeed) run() {
	defer close(f.done)
	for {
		select {
		case b, ok := <-f.frames:
			if !ok {
				return
			}
			f.do(func() error {
				if err := f.r.Arrived(f.got.Load()); err != nil {
					return err
				}
				return f.r.Write(b)
			})
			f.free <- b
		case <-f.wake:
			f.do(func() error { return f.r.Arrived(f.got.Load()) })
		}
	}
}

// do runs a step of the rebuild unless one failed, and keeps its error.
func (f *rebuildFeed) do(step func() error) {
	if f.failed() != nil {
		return
	}
	if err := step(); err != nil {
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
	}
}

// arrived tells the rebuild that the first n bytes of Data.db are in place and checked,
// without waiting for it.
func (f *rebuildFeed) arrived(n int64) {
	f.got.Store(n)
	select {
	case f.wake <- struct{}{}:
	default: // a wake is pending; it will read n
	}
}

func (f *rebuildFeed) failed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Write queues a copy of p, in pieces; it returns the rebuild's error once one happened.
func (f *rebuildFeed) Write(p []byte) error {
	for len(p) > 0 {
		if err := f.failed(); err != nil {
			return err
		}
		k := min(len(p), rebuildFeedPiece)
		b := <-f.free
		if b == nil {
			// As large as the first piece it holds: a QUIC payload arrives in pieces
			// smaller than rebuildFeedPiece (quicPiece), a short slice in one.
			b = make([]byte, 0, k)
		}
		f.frames <- append(b[:0], p[:k]...)
		p = p[k:]
	}
	return f.failed()
}

// wait ends the feed, waits until the rebuild took every piece and returns its error. It may
// be called more than once.
func (f *rebuildFeed) wait() error {
	f.once.Do(func() { close(f.frames) })
	<-f.done
	// The buffers go now, not with the installer (which may wait for its batch's commit).
	for len(f.free) > 0 {
		<-f.free
	}
	return f.failed()
}
