package sstable

import (
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/sstable/compress"
)

// dataCursor reads uncompressed Data.db bytes at non-decreasing positions with one sequential
// pass over the chunks: each chunk is read, CRC-checked and decompressed exactly once. It lets
// a verifier walk the partition index and Data.db in lockstep instead of decompressing a chunk
// again for every partition that starts in it.
//
// A chunk that fails its check is reported through onBad and skipped; reads that need its bytes
// fail with that chunk's error, and the pass continues with the next chunk.
type dataCursor struct {
	r     *compress.Reader
	sc    *compress.Scanner
	next  int // index of the next chunk the scanner will produce
	total int

	// window holds uncompressed bytes [winStart, winStart+len(window)). It is the current chunk,
	// or a copy spanning several chunks when a read crossed a boundary.
	window        []byte
	winStart      int64
	windowIsCarry bool
	carry         []byte

	bad   map[int]error // chunks that failed, with their errors
	onBad func(chunk int, err error)
	// seek makes the cursor pass over the chunks between two reads without decoding or
	// checking them (compress.Scanner.Seek): a reader of keys, not a verifier. Once reads
	// have wanted aheadAfter chunks in a row, the scanner decodes ahead on another core
	// (compress.Scanner.DecodeAhead), until a read passes a chunk over.
	seek       bool
	sequential int
	ahead      bool
}

// aheadAfter is how many chunks in a row a seeking cursor reads before it has the scanner
// decode ahead: keys packed in every chunk (small partitions), not keys a few chunks apart.
const aheadAfter = 8

func newDataCursor(r *compress.Reader, onBad func(int, error)) *dataCursor {
	c := &dataCursor{r: r, total: r.ChunkCount(), bad: map[int]error{}, onBad: onBad}
	c.sc = r.NewScanner(0, c.total)
	return c
}

// advance decodes the next chunk into the window. With keep, the chunk's bytes are appended to
// the window (copied into the carry buffer, since the scanner reuses its output) so that one
// read can span a chunk boundary.
func (c *dataCursor) advance(keep bool) error {
	if keep && len(c.window) > 0 && !c.windowIsCarry {
		c.carry = append(c.carry[:0], c.window...)
		c.window, c.windowIsCarry = c.carry, true
	}
	for {
		if c.next >= c.total {
			return errEndOfData
		}
		if c.sc.Next() {
			c.next = c.sc.Chunk() + 1
			start, b := c.sc.Offset(), c.sc.Bytes()
			if keep && c.windowIsCarry && c.winStart+int64(len(c.window)) == start {
				c.carry = append(c.carry, b...)
				c.window = c.carry
			} else {
				c.window, c.winStart, c.windowIsCarry = b, start, false
			}
			return nil
		}
		err := c.sc.Err()
		if err == nil {
			return errEndOfData
		}
		failed := c.next
		var ce *compress.ChunkError
		if errors.As(err, &ce) {
			failed = ce.Chunk
		}
		c.bad[failed] = err
		if c.onBad != nil {
			c.onBad(failed, err)
		}
		// Go on after the bad chunk; what the window held is no longer contiguous.
		c.next = failed + 1
		c.window, c.windowIsCarry = nil, false
		c.sc = c.r.NewScanner(c.next, c.total)
		if keep {
			return err
		}
	}
}

var errEndOfData = errors.New("past the end of Data.db")

// bytesAt returns n uncompressed bytes at pos. pos must not be below the previous call's pos.
// The result is valid until the next call.
func (c *dataCursor) bytesAt(pos int64, n int) ([]byte, error) {
	if pos < 0 || n < 0 || pos+int64(n) > c.r.DataLength() {
		return nil, fmt.Errorf("bytes [%d, %d) outside Data.db's %d uncompressed bytes", pos, pos+int64(n), c.r.DataLength())
	}
	L := int64(c.r.ChunkLength())
	want := int(pos / L)
	// Bytes in a chunk that failed its check were reported once, with the chunk: the caller
	// gets that chunk's error (a *compress.ChunkError) and reports nothing more.
	badIn := func() error {
		for k := want; len(c.bad) > 0 && int64(k)*L < pos+int64(max(n, 1)); k++ {
			if err, ok := c.bad[k]; ok {
				return err
			}
		}
		return nil
	}
	if err := badIn(); err != nil {
		return nil, err
	}
	// Move forward to the chunk holding pos; chunks skipped on the way are still checked.
	for c.window == nil || pos >= c.winStart+int64(len(c.window)) {
		if c.next > want {
			if err := c.anyBad(); err != nil {
				return nil, err // a bad chunk moved the cursor on; it was reported
			}
			return nil, fmt.Errorf("internal: position %d is behind the data cursor", pos)
		}
		if c.seek {
			c.pace(want)
		}
		if err := c.advance(false); err != nil {
			return nil, err
		}
	}
	if err := badIn(); err != nil { // the advance passed over a bad chunk
		return nil, err
	}
	if pos < c.winStart {
		if err := c.anyBad(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("internal: read at %d behind the cursor at %d", pos, c.winStart)
	}
	if c.windowIsCarry && pos > c.winStart && pos+int64(n) > c.winStart+int64(len(c.window)) {
		// The carry is about to grow: first drop what lies before pos, which no later read
		// (positions never decrease) can want. Without this a walk whose reads overlap (a
		// partition and the next key) kept every byte from the first carry on: the whole
		// Data.db, uncompressed, in memory.
		k := copy(c.carry, c.carry[pos-c.winStart:])
		c.carry = c.carry[:k]
		c.window, c.winStart = c.carry, pos
	}
	for pos+int64(n) > c.winStart+int64(len(c.window)) {
		if err := c.advance(true); err != nil {
			return nil, err
		}
	}
	off := int(pos - c.winStart)
	return c.window[off : off+n], nil
}

// pace moves a seeking cursor's scanner on to chunk want, the next it decodes, and turns
// decoding ahead on after aheadAfter chunks read in a row, off at a chunk passed over.
func (c *dataCursor) pace(want int) {
	if want > c.next {
		c.sc.Seek(want)
		c.next, c.sequential = want, 0
		if c.ahead {
			c.sc.DecodeAhead(false)
			c.ahead = false
		}
		return
	}
	if c.sequential++; c.sequential >= aheadAfter && !c.ahead {
		c.sc.DecodeAhead(true)
		c.ahead = true
	}
}

// behind reports whether a read at pos would be behind the cursor: bytesAt cannot serve it.
func (c *dataCursor) behind(pos int64) bool {
	if c.window != nil {
		return pos < c.winStart
	}
	return pos < int64(c.next)*int64(c.r.ChunkLength())
}

// anyBad is the error of the lowest bad chunk, or nil.
func (c *dataCursor) anyBad() error {
	k := -1
	for i := range c.bad {
		if k < 0 || i < k {
			k = i
		}
	}
	if k < 0 {
		return nil
	}
	return c.bad[k]
}

// drain checks every chunk not read yet.
func (c *dataCursor) drain() {
	for c.advance(false) == nil {
	}
}
