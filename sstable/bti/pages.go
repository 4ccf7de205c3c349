package bti

import (
	"errors"
	"io"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// A Partitions.db grows with the partition count (~8.5 bytes per partition), so a scan reads
// it through a few cached blocks instead of whole: memory stays flat however many partitions
// the sstable holds. An in-order walk reads the trie nearly front to back (children are
// written before their parent, subtrees in key order), so four blocks hit almost always.
const (
	cacheBlockSize = 64 << 10
	cacheBlocks    = 4
)

// trieReader serves the bytes of a trie area [0, size): from memory when the component is
// held whole (Rows.db, whose size follows the data, not the partition count; tests), else
// through a blockCache.
type trieReader struct {
	mem   []byte // the whole area, when cache is nil
	size  int64
	cache *blockCache
}

// memTrie is a trieReader over b.
func memTrie(b []byte) trieReader { return trieReader{mem: b, size: int64(len(b))} }

// window returns the bytes from off, which the caller has checked lies in [0, size), to the
// end of the trie area when it is held in memory (aliasing it), or to the end of the cached
// block holding off (at most the area's end) when paged: then valid only until the next read
// through r.
func (r *trieReader) window(off int64) ([]byte, error) {
	if r.cache == nil {
		return r.mem[off:], nil
	}
	c := r.cache
	blk, err := c.block(off - off%c.blockSize)
	if err != nil {
		return nil, err
	}
	return blk.data[off-blk.start : min(int64(len(blk.data)), r.size-blk.start)], nil
}

// copyAt returns the n bytes at off copied into *buf (grown when too small), for a paged
// node that must stay valid while the cache moves on or that crosses a block boundary.
func (r *trieReader) copyAt(off int64, n int, buf *[]byte) ([]byte, error) {
	if cap(*buf) < n {
		*buf = make([]byte, n, max(n, 64))
	}
	b := (*buf)[:n]
	return b, r.cache.copyAt(b, off)
}

// blockCache reads a file through a few aligned blocks, replacing the least recently used.
// It is not safe for concurrent use.
type blockCache struct {
	r         io.ReaderAt
	size      int64 // file size: no block reads past it
	blockSize int64
	blocks    []cachedBlock
	last      int // the block that served the last read, tried first
	clock     uint64
}

type cachedBlock struct {
	start int64 // -1: empty
	data  []byte
	used  uint64
}

func newBlockCache(r io.ReaderAt, size int64, blockSize, blocks int) *blockCache {
	c := &blockCache{r: r, size: size, blockSize: int64(blockSize), blocks: make([]cachedBlock, blocks)}
	for i := range c.blocks {
		c.blocks[i].start = -1
	}
	return c
}

// copyAt fills dst from the file at off; the range must lie inside the file.
func (c *blockCache) copyAt(dst []byte, off int64) error {
	for len(dst) > 0 {
		b, err := c.block(off - off%c.blockSize)
		if err != nil {
			return err
		}
		n := copy(dst, b.data[off-b.start:])
		dst, off = dst[n:], off+int64(n)
	}
	return nil
}

// block returns the cached block starting at start, reading it if needed.
func (c *blockCache) block(start int64) (*cachedBlock, error) {
	c.clock++
	if b := &c.blocks[c.last]; b.start == start {
		b.used = c.clock
		return b, nil
	}
	victim := 0
	for i := range c.blocks {
		b := &c.blocks[i]
		if b.start == start {
			b.used, c.last = c.clock, i
			return b, nil
		}
		if b.used < c.blocks[victim].used {
			victim = i
		}
	}
	b := &c.blocks[victim]
	n := min(c.blockSize, c.size-start)
	if int64(cap(b.data)) < n {
		b.data = make([]byte, min(c.blockSize, c.size))
	}
	b.start, b.data = -1, b.data[:n]
	if err := readFull(c.r, b.data, start); err != nil {
		return nil, err
	}
	b.start, b.used, c.last = start, c.clock, victim
	return b, nil
}

// readFull is ReadAt that treats a short read as an error: the file shrank under us.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return &encoding.OffsetError{Offset: off, What: "reading", Err: err}
}
