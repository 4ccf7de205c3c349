package stream

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// chunkChecker checks the inline CRC32 of every compressed chunk of a Data.db fed to it in
// order, as soon as the chunk's last byte arrives, in O(1) memory: chunk k occupies
// offsets[k] up to the next offset (the file length for the last) and its last 4 bytes are
// the big-endian CRC32 of the rest (FORMAT.md §2.2).
type chunkChecker struct {
	offsets  []int64
	fileLen  int64
	k        int
	pos      int64
	crc      uint32
	tail     [4]byte
	verified uint64
}

func (c *chunkChecker) end(k int) int64 {
	if k+1 < len(c.offsets) {
		return c.offsets[k+1]
	}
	return c.fileLen
}

// write feeds the next bytes of the file.
func (c *chunkChecker) write(p []byte) error {
	for len(p) > 0 {
		if c.k == 0 && c.pos < c.offsets[0] {
			// A head pad before the first chunk (a reflinked child sent entire): no chunk
			// covers it, Digest.crc32 does.
			n := int(min(int64(len(p)), c.offsets[0]-c.pos))
			c.pos += int64(n)
			p = p[n:]
			continue
		}
		if c.k >= len(c.offsets) {
			return fmt.Errorf("%w: %d bytes past the last chunk at offset %d", ErrManifest, len(p), c.pos)
		}
		end := c.end(c.k)
		body := end - 4
		if c.pos < body {
			n := int(min(int64(len(p)), body-c.pos))
			c.crc = crc32.Update(c.crc, crc32.IEEETable, p[:n])
			c.pos += int64(n)
			p = p[n:]
			continue
		}
		n := int(min(int64(len(p)), end-c.pos))
		copy(c.tail[c.pos-body:], p[:n])
		c.pos += int64(n)
		p = p[n:]
		if c.pos == end {
			if got := binary.BigEndian.Uint32(c.tail[:]); got != c.crc {
				return fmt.Errorf("%w: chunk %d at Data.db offset %d: stored CRC %08x, computed %08x",
					ErrChecksum, c.k, c.offsets[c.k], got, c.crc)
			}
			c.verified++
			c.k++
			c.crc = 0
		}
	}
	return nil
}

// done says whether every chunk was complete and verified.
func (c *chunkChecker) done() bool { return c.k == len(c.offsets) && c.pos == c.fileLen }
