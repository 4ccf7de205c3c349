package slice

import "github.com/sluicedb/sluice/sstable/compress"

// keyAhead is how many chunks past the one KeyAt reads are decoded ahead of it.
const keyAhead = 8

// keyChunks decodes the written child's chunks for KeyAt, the next keyAhead of them on
// goroutines of their own while the rebuild works through the partitions of the one it reads.
// A BTI child's keys are only in Data.db, so the rebuild decodes every chunk for them; done
// in line that was a third of the rebuild goroutine, the receiver's critical path for small
// partitions.
//
// Each decode is one ReadChunk (CRC checked) and ends by itself, so an abandoned fill leaves
// no goroutine behind for longer than a chunk's read.
type keyChunks struct {
	r     *compress.Reader
	slots [keyAhead + 1]keyChunk
}

// keyChunk is a slot of keyChunks: chunk c's bytes, or their decode in flight.
type keyChunk struct {
	c    int           // the chunk held or being decoded; -1: none
	done chan struct{} // nil, or closed once data and err are set
	data []byte
	err  error
}

func newKeyChunks(r *compress.Reader) *keyChunks {
	k := &keyChunks{r: r}
	for i := range k.slots {
		k.slots[i].c = -1
	}
	return k
}

// get returns chunk c's uncompressed bytes, valid until chunk c+keyAhead+1 is asked for, and
// starts decoding the chunks after it among the first avail (those in the file, which r
// covers). Chunks are asked for in order, many partitions to a chunk.
func (k *keyChunks) get(c, avail int) ([]byte, error) {
	s := &k.slots[c%len(k.slots)]
	if s.c != c {
		s.wait()
		s.c, s.done = c, nil
		s.data, s.err = k.r.ReadChunk(c, s.data[:0])
	} else {
		s.wait()
	}
	for a := c + 1; a < min(avail, c+1+keyAhead); a++ {
		t := &k.slots[a%len(k.slots)]
		if t.c == a {
			continue
		}
		t.wait()
		t.c, t.done = a, make(chan struct{})
		go t.decode(k.r, a)
	}
	return s.data, s.err
}

func (s *keyChunk) decode(r *compress.Reader, c int) {
	s.data, s.err = r.ReadChunk(c, s.data[:0])
	close(s.done)
}

// wait waits for the slot's decode in flight, if any.
func (s *keyChunk) wait() {
	if s.done != nil {
		<-s.done
	}
}
