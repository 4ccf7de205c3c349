package compress

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/sluicedb/sluice/internal/lib/crcx"
)

// This file holds the checksum side of moving parent bytes into a child: every path that
// writes a new checksum (CRC.db, Digest.crc32, a streamed digest) over bytes it did not
// produce first proves those bytes against the checksum the parent stored for them, so a
// corrupt parent fails the operation instead of becoming a child whose fresh checksums
// vouch for the corruption ("laundering").

// ChunkChecker checks the inline CRC32 of every compressed chunk record of a Data.db fed
// to it in order, as soon as a record's last byte arrives, in O(1) memory: chunk k occupies
// offsets[k] up to the next offset (the file length for the last) and its last 4 bytes are
// the big-endian CRC32 of the rest (FORMAT.md §2.2). Bytes before offsets[0] (a child's
// reflink head pad) are passed over unchecked: they belong to no chunk.
type ChunkChecker struct {
	offsets  []int64
	fileLen  int64
	k        int
	pos      int64
	crc      uint32
	tail     [4]byte
	verified uint64
}

// NewChunkChecker checks a Data.db of fileLen bytes whose chunk records start at offsets.
func NewChunkChecker(offsets []int64, fileLen int64) *ChunkChecker {
	return &ChunkChecker{offsets: offsets, fileLen: fileLen}
}

func (c *ChunkChecker) end(k int) int64 {
	if k+1 < len(c.offsets) {
		return c.offsets[k+1]
	}
	return c.fileLen
}

// Write feeds the next bytes of the file. A mismatch is a *ChunkError matching ErrChecksum
// with the chunk's file offset; bytes past the last chunk match ErrLength.
func (c *ChunkChecker) Write(p []byte) (int, error) {
	total := len(p)
	if len(c.offsets) > 0 && c.k == 0 && c.pos < c.offsets[0] {
		n := int(min(int64(len(p)), c.offsets[0]-c.pos))
		c.pos += int64(n)
		p = p[n:]
	}
	for len(p) > 0 {
		if c.k >= len(c.offsets) {
			return total - len(p), fmt.Errorf("%w: %d bytes past the last chunk at offset %d", ErrLength, len(p), c.pos)
		}
		end := c.end(c.k)
		body := end - CRCLength
		if body < c.offsets[c.k] {
			return total - len(p), chunkError(c.k, c.offsets[c.k], fmt.Errorf("%w: record of %d bytes cannot hold its CRC", ErrLength, end-c.offsets[c.k]))
		}
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
				return total - len(p), chunkError(c.k, c.offsets[c.k], fmt.Errorf("%w: stored CRC %08x, bytes have %08x", ErrChecksum, got, c.crc))
			}
			c.verified++
			c.k++
			c.crc = 0
		}
	}
	return total, nil
}

// Skip passes over the first k chunk records, verified earlier (a resumed receive whose
// prefix was proven as it was kept): the next bytes fed are chunk k's first.
func (c *ChunkChecker) Skip(k int) {
	c.k, c.crc, c.verified = k, 0, uint64(k)
	c.pos = c.fileLen
	if k < len(c.offsets) {
		c.pos = c.offsets[k]
	}
}

// Done says whether every chunk was complete and verified.
func (c *ChunkChecker) Done() bool { return c.k == len(c.offsets) && c.pos == c.fileLen }

// Verified counts the chunks whose CRC matched so far.
func (c *ChunkChecker) Verified() uint64 { return c.verified }

// CRCWriter computes CRC.db and the digest of an uncompressed Data.db written in order, as
// Cassandra's ChecksummedSequentialWriter does. Only feed it bytes already proven against
// the parent's checksums (CheckedRange, RangeDigest).
type CRCWriter struct {
	info   CRCInfo
	cur    uint32
	n      int
	digest uint32
}

// NewCRCWriter checksums in chunkLength slices.
func NewCRCWriter(chunkLength int) *CRCWriter {
	return &CRCWriter{info: CRCInfo{ChunkLength: chunkLength}}
}

func (c *CRCWriter) Write(p []byte) (int, error) {
	c.digest = crc32.Update(c.digest, crc32.IEEETable, p)
	total := len(p)
	for len(p) > 0 {
		k := min(len(p), c.info.ChunkLength-c.n)
		c.cur = crc32.Update(c.cur, crc32.IEEETable, p[:k])
		c.n += k
		p = p[k:]
		if c.n == c.info.ChunkLength {
			c.info.CRCs = append(c.info.CRCs, c.cur)
			c.cur, c.n = 0, 0
		}
	}
	return total, nil
}

// Result returns CRC.db and the digest of everything written.
func (c *CRCWriter) Result() (*CRCInfo, uint32) {
	info := c.info
	info.CRCs = append([]uint32(nil), c.info.CRCs...)
	if c.n > 0 {
		info.CRCs = append(info.CRCs, c.cur)
	}
	return &info, c.digest
}

// RangeDigest is the CRC32 of bytes [lo, hi) of an uncompressed Data.db of fileLength bytes,
// derived from its CRC.db: the CRCs of the whole CRC.db slices inside the range are combined
// without reading them, and only the (at most two) slices the range cuts are read, checked
// against CRC.db and cut. A reader of the range's bytes who gets the same CRC32 has proven
// them against the parent's checksums; a damaged edge slice is a *ChunkError here.
func RangeDigest(src io.ReaderAt, crc *CRCInfo, fileLength, lo, hi int64) (uint32, error) {
	if crc == nil {
		return 0, fmt.Errorf("%w: no CRC.db to check the bytes against", ErrInvalid)
	}
	L := int64(crc.ChunkLength)
	if lo < 0 || hi < lo || hi > fileLength || L <= 0 || int64(len(crc.CRCs)) < ceilDiv(fileLength, L) {
		return 0, fmt.Errorf("%w: range [%d, %d) of a %d-byte file with %d CRCs of %d-byte slices",
			ErrInvalid, lo, hi, fileLength, len(crc.CRCs), L)
	}
	var out uint32
	var buf []byte
	for k := lo / L; k*L < hi; k++ {
		start, end := k*L, min((k+1)*L, fileLength)
		if start >= lo && end <= hi {
			out = crcx.Combine(out, crc.CRCs[k], end-start)
			continue
		}
		buf = append(buf[:0], make([]byte, end-start)...)
		if _, err := src.ReadAt(buf, start); err != nil {
			return 0, chunkError(int(k), start, fmt.Errorf("%w: %v", ErrLength, err))
		}
		if got := crc32.ChecksumIEEE(buf); got != crc.CRCs[k] {
			return 0, chunkError(int(k), start, fmt.Errorf("%w: CRC.db has %08x, bytes have %08x", ErrChecksum, crc.CRCs[k], got))
		}
		a, b := max(lo, start)-start, min(hi, end)-start
		out = crc32.Update(out, crc32.IEEETable, buf[a:b])
	}
	return out, nil
}

// FindBadSlice names the first CRC.db slice of [lo, hi) whose bytes disagree with CRC.db, for
// the error once a digest comparison failed; nil when none does (the bytes changed between
// the two reads).
func FindBadSlice(src io.ReaderAt, crc *CRCInfo, fileLength, lo, hi int64) error {
	L := int64(crc.ChunkLength)
	buf := make([]byte, L)
	for k := lo / L; k*L < hi && k < int64(len(crc.CRCs)); k++ {
		start, end := k*L, min((k+1)*L, fileLength)
		if _, err := src.ReadAt(buf[:end-start], start); err != nil {
			return chunkError(int(k), start, fmt.Errorf("%w: %v", ErrLength, err))
		}
		if got := crc32.ChecksumIEEE(buf[:end-start]); got != crc.CRCs[k] {
			return chunkError(int(k), start, fmt.Errorf("%w: CRC.db has %08x, bytes have %08x", ErrChecksum, crc.CRCs[k], got))
		}
	}
	return nil
}

// RunDigest is the CRC32 of a child Data.db made of pad bytes of src at padOff followed by
// the chunk records first..last of a compressed Data.db (info, fileLength), derived from the
// records' stored CRCs: 4 bytes read per chunk and the pad. The digest vouches for nothing
// new: a damaged chunk makes it disagree with the bytes, as its inline CRC does.
func RunDigest(src io.ReaderAt, info *Info, fileLength int64, first, last int, padOff, pad int64) (uint32, error) {
	var crc uint32
	if pad > 0 {
		b := make([]byte, pad)
		if _, err := src.ReadAt(b, padOff); err != nil {
			return 0, err
		}
		crc = crc32.ChecksumIEEE(b)
	}
	var stored [CRCLength]byte
	for k := first; k <= last; k++ {
		end := fileLength
		if k+1 < len(info.Offsets) {
			end = info.Offsets[k+1]
		}
		if end-CRCLength < info.Offsets[k] {
			return 0, chunkError(k, info.Offsets[k], fmt.Errorf("%w: record cannot hold its CRC", ErrLength))
		}
		if _, err := src.ReadAt(stored[:], end-CRCLength); err != nil {
			return 0, chunkError(k, info.Offsets[k], fmt.Errorf("reading its CRC: %w", err))
		}
		crc = crcx.Combine(crc, binary.BigEndian.Uint32(stored[:]), end-CRCLength-info.Offsets[k])
		crc = crc32.Update(crc, crc32.IEEETable, stored[:])
	}
	return crc, nil
}
