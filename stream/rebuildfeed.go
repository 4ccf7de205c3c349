package stream

import (
	"sync"

	"github.com/sluicedb/sluice/sstable/slice"
)

// rebuildFeed hands a BIG child's index slice, frame by frame, to its slice.PartialRebuild
// on a goroutine of its own, so that the receive loop goes on reading (and decrypting and
// writing the runs, whose frames the index slice's are interleaved with) while the
// per-partition rebuild works: for small partitions the rebuild is most of the receiver's
// CPU. At most depth frames wait, copied.
type rebuildFeed struct {
	r      *slice.PartialRebuild
	frames chan []byte // copies of the slice's frames, in order
	free   chan []byte // their buffers, back for reuse
	done   chan struct{}
	once   sync.Once

	mu  sync.Mutex
	err error // the rebuild's first error
}

func newRebuildFeed(r *slice.PartialRebuild, depth int) *rebuildFeed {
	f := &rebuildFeed{r: r, frames: make(chan []byte, depth), free: make(chan []byte, depth), done: make(chan struct{})}
	for range depth {
		f.free <- nil
	}
	go f.run()
	return f
}

func (f *rebuildFeed) run() {
	defer close(f.done)
	for b := range f.frames {
		if f.failed() == nil {
			if err := f.r.Write(b); err != nil {
				f.mu.Lock()
				f.err = err
				f.mu.Unlock()
			}
		}
		f.free <- b
	}
}

func (f *rebuildFeed) failed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Write queues a copy of p; it returns the rebuild's error once one happened.
func (f *rebuildFeed) Write(p []byte) error {
	if err := f.failed(); err != nil {
		return err
	}
	b := <-f.free
	f.frames <- append(b[:0], p...)
	return nil
}

// wait ends the feed, waits until the rebuild took every frame and returns its error. It may
// be called more than once.
func (f *rebuildFeed) wait() error {
	f.once.Do(func() { close(f.frames) })
	<-f.done
	// The buffers go now, not with the job (which may wait for its batch's commit).
	for len(f.free) > 0 {
		<-f.free
	}
	return f.failed()
}
