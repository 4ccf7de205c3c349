package slice

import (
	"fmt"
	"sync"

	"github.com/sluicedb/sluice/sstable/compress"
)

// keyWindow and keyWindowBytes bound how far past the chunk KeyAt reads keyChunks decodes
// ahead of it: 32 chunks of 16 KiB, fewer of larger chunks (at least 2). A decoder is started
// when fewer than half of them are done, so each start decodes many.
const (
	keyWindow      = 32
	keyWindowBytes = 512 << 10
)

// keyChunks decodes the written child's chunks for KeyAt ahead of it, on a goroutine of its
// own, while the rebuild works through the partitions of the chunk it reads. A BTI child's
// keys are only in Data.db, so the rebuild decodes every chunk for them (each CRC checked
// first); done in line, that was a third of the rebuild goroutine, the receiver's critical
// path for small partitions.
//
// The decoder runs while there is a chunk in the file and room in the window, and returns
// when there is not: an abandoned fill leaves no goroutine behind for longer than a window's
// decoding, and nothing needs closing.
type keyChunks struct {
	r *compress.Reader

	mu      sync.Mutex
	ready   sync.Cond  // a chunk was decoded, or the decoder returned
	slots   []keyChunk // window of them
	want    int        // the chunk KeyAt reads: the slots hold want .. want+window-1
	next    int        // the next chunk to decode
	avail   int        // the chunks in the file
	running bool       // a decoder goroutine is at work
}

// keyChunk is a slot of keyChunks: chunk c's bytes once done.
type keyChunk struct {
	c    int
	done bool
	data []byte
	err  error
}

func newKeyChunks(r *compress.Reader) *keyChunks {
	window := min(keyWindow, max(2, keyWindowBytes/max(1, r.ChunkLength())))
	k := &keyChunks{r: r, slots: make([]keyChunk, window)}
	k.ready.L = &k.mu
	for i := range k.slots {
		k.slots[i].c = -1
	}
	return k
}

// get returns chunk c's uncompressed bytes, valid until another chunk is asked for; avail is
// how many chunks are in the file (r covers them), c < avail. The rebuild asks in order; a
// chunk before the window is read here, outside it.
func (k *keyChunks) get(c, avail int) ([]byte, error) {
	if c >= avail {
		return nil, fmt.Errorf("slice: chunk %d of the child asked for with %d in the file", c, avail)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if c < k.want {
		k.mu.Unlock()
		data, err := k.r.ReadChunk(c, nil)
		k.mu.Lock()
		return data, err
	}
	k.want, k.avail = c, max(k.avail, avail)
	if k.next < c {
		k.next = c // chunks passed over (no key in them) are not decoded
	}
	for {
		s := &k.slots[c%len(k.slots)]
		if s.c == c && s.done {
			k.start()
			return s.data, s.err
		}
		if !k.start() && !k.running {
			// Nothing will decode c (it cannot happen while c < avail; kept for safety).
			k.mu.Unlock()
			data, err := k.r.ReadChunk(c, nil)
			k.mu.Lock()
			return data, err
		}
		k.ready.Wait()
	}
}

// start starts a decoder when none runs and less than half the window is decoded (or the
// chunk wanted is not); it says whether one runs now.
func (k *keyChunks) start() bool {
	if k.running {
		return true
	}
	ahead, w := k.next-k.want, len(k.slots)
	if k.next >= k.avail || ahead >= w || (ahead >= w/2 && k.slots[k.want%w].done && k.slots[k.want%w].c == k.want) {
		return false
	}
	k.running = true
	go k.decode()
	return true
}

// decode decodes chunks in order while they are in the file and the window has room.
func (k *keyChunks) decode() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for k.next < k.avail && k.next < k.want+len(k.slots) {
		c := k.next
		k.next++
		s := &k.slots[c%len(k.slots)]
		buf := s.data[:0]
		s.c, s.done, s.data = c, false, nil
		k.mu.Unlock()
		data, err := k.r.ReadChunk(c, buf)
		k.mu.Lock()
		s.data, s.err, s.done = data, err, true
		k.ready.Broadcast()
	}
	k.running = false
	k.ready.Broadcast()
}
