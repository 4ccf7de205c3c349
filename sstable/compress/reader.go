package compress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// scanBlockSize is how many bytes of Data.db a Scanner reads per ReadAt: large enough that the
// call costs little next to decoding what it returns, small enough to stay in cache.
const scanBlockSize = 1 << 20

// Reader reads the uncompressed contents of a Data.db chunk by chunk, checking every chunk's
// CRC32 before using it. It serves compressed files (CompressionInfo.db, inline CRCs) and
// uncompressed ones (optional CRC.db) through the same methods.
//
// ReadAt and ReadChunk may be called concurrently; they serialize on an internal lock. For a
// whole-file pass use a Scanner, which has its own buffers and codec.
type Reader struct {
	r           io.ReaderAt
	fileLength  int64
	info        *Info    // nil when Data.db is uncompressed
	crc         *CRCInfo // uncompressed only; nil means no checksums to check
	chunkLength int
	dataLength  int64
	chunks      int
	// rawAt is the CASSANDRA-10520 threshold: a chunk at least this long on disk is raw.
	rawAt int64
	// maxOnDisk bounds a compressed chunk's on-disk length (the codec's bound for a full
	// chunk), so that corrupt offsets cannot make the Reader allocate a huge buffer.
	maxOnDisk int64

	mu     sync.Mutex
	codec  Codec
	onDisk []byte
	cache  []byte // uncompressed bytes of chunk cached, for ReadAt
	cached int
}

var _ io.ReaderAt = (*Reader)(nil)

// NewReader returns a Reader over a compressed Data.db of fileLength bytes described by info.
// The Reader keeps r and info; neither may change while it is in use.
func NewReader(r io.ReaderAt, fileLength int64, info *Info) (*Reader, error) {
	if info.ChunkLength <= 0 || info.ChunkLength > MaxChunkLength || fileLength < 0 || info.DataLength < 0 {
		return nil, fmt.Errorf("%w: chunk length %d, data length %d, file length %d",
			ErrInvalid, info.ChunkLength, info.DataLength, fileLength)
	}
	codec, err := CodecFor(info.Compressor, info.Options)
	if err != nil {
		return nil, err
	}
	rawAt := int64(math.MaxInt64)
	if info.MaxCompressedLength > 0 {
		rawAt = int64(info.MaxCompressedLength)
	}
	return &Reader{
		r: r, fileLength: fileLength, info: info,
		chunkLength: info.ChunkLength, dataLength: info.DataLength, chunks: len(info.Offsets),
		rawAt: rawAt, maxOnDisk: int64(codec.Bound(info.ChunkLength)), codec: codec, cached: -1,
	}, nil
}

// Grow points the Reader at a longer view of the same growing file: fileLength bytes, info a
// copy of the last info with more chunks (the chunks it had must be unchanged). The codec and
// buffers stay, so a reader that follows a file as it is written costs nothing per chunk.
func (r *Reader) Grow(fileLength int64, info *Info) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.info == nil || info.ChunkLength != r.chunkLength || info.Compressor != r.info.Compressor ||
		fileLength < r.fileLength || len(info.Offsets) < r.chunks || info.DataLength < 0 {
		return fmt.Errorf("%w: a reader of %d chunks in %d bytes cannot grow to %d chunks in %d bytes",
			ErrInvalid, r.chunks, r.fileLength, len(info.Offsets), fileLength)
	}
	if r.cached == r.chunks-1 {
		r.cached = -1 // the old last chunk may have been cut to the old data length
	}
	r.fileLength, r.info, r.dataLength, r.chunks = fileLength, info, info.DataLength, len(info.Offsets)
	return nil
}

// NewUncompressedReader returns a Reader over an uncompressed Data.db. With crc (CRC.db) each
// chunk is checked against it, and its count must be ceil(fileLength/ChunkLength), or one
// more for an empty trailing slice (FORMAT §2.10); without it chunks are 64 KiB and unchecked.
func NewUncompressedReader(r io.ReaderAt, fileLength int64, crc *CRCInfo) (*Reader, error) {
	l := DefaultCRCChunkLength
	if crc != nil {
		l = crc.ChunkLength
	}
	if l <= 0 || fileLength < 0 {
		return nil, fmt.Errorf("%w: chunk length %d, file length %d", ErrInvalid, l, fileLength)
	}
	chunks := ceilDiv(fileLength, int64(l))
	if crc != nil {
		n := int64(len(crc.CRCs))
		if n != chunks && n != chunks+1 {
			return nil, fmt.Errorf("%w: CRC.db has %d checksums for %d bytes in %d-byte chunks (want %d or %d)",
				ErrInvalid, n, fileLength, l, chunks, chunks+1)
		}
		chunks = n
	}
	return &Reader{
		r: r, fileLength: fileLength, crc: crc,
		chunkLength: l, dataLength: fileLength, chunks: int(chunks),
		rawAt: math.MaxInt64, cached: -1,
	}, nil
}

// DataLength is the uncompressed length of Data.db.
func (r *Reader) DataLength() int64 { return r.dataLength }

// ChunkLength is the uncompressed size of a chunk (the last may be shorter).
func (r *Reader) ChunkLength() int { return r.chunkLength }

// ChunkCount is the number of chunks, including a trailing empty one.
func (r *Reader) ChunkCount() int { return r.chunks }

// record locates chunk i on disk: its bytes plus, when compressed, the CRC that follows.
func (r *Reader) record(i int) (off, size int64, err error) {
	if r.info == nil {
		off, size = uncompressedSpan(i, r.chunkLength, r.fileLength)
		// The empty slice a trailing CRC covers sits at the end of the file.
		return min(off, r.fileLength), size, nil
	}
	off, n := r.info.ChunkSpan(i, r.fileLength)
	if n > r.maxOnDisk {
		return off, 0, chunkError(i, off, fmt.Errorf("%w: %d on-disk bytes, more than %d-byte chunks compress to", ErrLength, n, r.chunkLength))
	}
	if n < 0 || off+n+CRCLength > r.fileLength {
		return off, 0, chunkError(i, off, fmt.Errorf("%w: %d on-disk bytes at offset %d do not fit in a %d-byte file",
			ErrLength, n+CRCLength, off, r.fileLength))
	}
	return off, n + CRCLength, nil
}

// decode checks chunk i's on-disk record rec and returns its uncompressed bytes, appended to
// dst for compressed files. For uncompressed files it returns rec itself.
func (r *Reader) decode(i int, off int64, rec, dst []byte, codec Codec) ([]byte, error) {
	if r.info == nil {
		if r.crc != nil {
			if got, want := crc32.ChecksumIEEE(rec), r.crc.CRCs[i]; got != want {
				return dst, chunkError(i, off, fmt.Errorf("%w: CRC.db has %08x, bytes have %08x", ErrChecksum, want, got))
			}
		}
		return rec, nil
	}
	body := rec[:len(rec)-CRCLength]
	if got, want := crc32.ChecksumIEEE(body), binary.BigEndian.Uint32(rec[len(body):]); got != want {
		return dst, chunkError(i, off, fmt.Errorf("%w: stored %08x, bytes have %08x", ErrChecksum, want, got))
	}
	_, n := r.info.UncompressedSpan(i)
	// The last chunk of a file cut from a larger one (a zero-copy split child) may hold more
	// than the file addresses: Cassandra reads it whole and stops at dataLength. Its stored
	// length may then be anything from the span to a full chunk.
	cut := i == r.chunks-1 && n < int64(r.chunkLength)
	m := int64(len(body))
	if m >= r.rawAt {
		// Stored raw: the whole chunk, or a short last chunk zero-padded to rawAt.
		want := max(n, r.rawAt)
		if m != want && !(cut && m > want && m <= max(int64(r.chunkLength), r.rawAt)) {
			return dst, chunkError(i, off, fmt.Errorf("%w: raw chunk of %d bytes, want %d", ErrLength, m, want))
		}
		return append(dst, body[:n]...), nil
	}
	full := int(n)
	if cut {
		if d, ok := declaredLength(codec, body); ok && d > int(n) && d <= r.chunkLength {
			full = d
		} else if dc, isDeflate := codec.(*deflateCodec); isDeflate && !ok {
			// A deflate stream states no length: decode all of it (at most a chunk), keep the span.
			start := len(dst)
			out, err := dc.decompressUpTo(dst, body, r.chunkLength)
			if err != nil {
				return dst, chunkError(i, off, err)
			}
			if len(out)-start < int(n) {
				return dst, chunkError(i, off,
					fmt.Errorf("%w: deflate stream ended after %d bytes, want at least %d", ErrLength, len(out)-start, n))
			}
			return out[:start+int(n)], nil
		}
	}
	start := len(dst)
	out, err := codec.Decompress(dst, body, full)
	if err != nil {
		return dst, chunkError(i, off, err)
	}
	return out[:start+int(n)], nil
}

// declaredLength is the uncompressed length a chunk's own header states, for the codecs whose
// framing has one.
func declaredLength(codec Codec, body []byte) (int, bool) {
	switch codec.(type) {
	case *lz4Codec:
		if len(body) >= 4 {
			return int(binary.LittleEndian.Uint32(body)), true
		}
	case snappyCodec, *snappyCodec: // CodecFor returns a pointer
		if n, err := snappy.DecodedLen(body); err == nil {
			return n, true
		}
	case *zstdCodec:
		var h zstd.Header
		if h.Decode(body) == nil && h.HasFCS && h.FrameContentSize <= MaxChunkLength {
			return int(h.FrameContentSize), true
		}
	case noopCodec:
		return len(body), true
	}
	return 0, false
}

// ReadChunk appends the uncompressed bytes of chunk i to dst, after checking its CRC32.
// Failures are *ChunkError values wrapping ErrChecksum, ErrDecompress or ErrLength (or the
// underlying read error).
func (r *Reader) ReadChunk(i int, dst []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := r.readChunkLocked(i, dst)
	if err == nil && r.info == nil {
		data = append(dst, data...)
	}
	return data, err
}

// readChunkLocked is ReadChunk without the final copy for uncompressed files, whose result
// then aliases r.onDisk.
func (r *Reader) readChunkLocked(i int, dst []byte) ([]byte, error) {
	if i < 0 || i >= r.chunks {
		return dst, fmt.Errorf("%w: chunk %d of %d", ErrLength, i, r.chunks)
	}
	off, size, err := r.record(i)
	if err != nil {
		return dst, err
	}
	r.onDisk = grow(r.onDisk[:0], int(size))
	if err := readFull(r.r, r.onDisk, off); err != nil {
		return dst, chunkError(i, off, err)
	}
	return r.decode(i, off, r.onDisk, dst, r.codec)
}

// readFull is ReadAt that treats a full read ending in io.EOF as success, as io.ReaderAt allows.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: read %d of %d bytes at offset %d", io.ErrUnexpectedEOF, n, len(p), off)
	}
	return err
}

// ReadAt reads uncompressed Data.db bytes, checking the CRC of every chunk it touches. It
// keeps the last chunk it decoded, so small sequential reads decode each chunk once.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("compress: negative offset %d", off)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	read := 0
	for read < len(p) {
		if off >= r.dataLength {
			return read, io.EOF
		}
		i := int(off / int64(r.chunkLength))
		if i != r.cached {
			r.cached = -1
			data, err := r.readChunkLocked(i, r.cache[:0])
			if err != nil {
				return read, err
			}
			if r.info == nil {
				data = append(r.cache[:0], data...)
			}
			r.cache, r.cached = data, i
		}
		k := copy(p[read:], r.cache[off-int64(i)*int64(r.chunkLength):])
		read += k
		off += int64(k)
	}
	return read, nil
}

// Scanner reads a run of chunks in order, checking each. It is the fast path for verification
// and whole-file row passes: it reads many whole chunk records with one ReadAt, and reads the
// next such block on another goroutine while the current one is decoded (io.ReaderAt allows
// parallel calls). A Scanner is not safe for concurrent use. Abandoning one early is fine: a
// read in flight finishes on its own.
type Scanner struct {
	r           *Reader
	codec       Codec
	next        int
	end         int
	cur         scanBlock
	aheadBlocks chan scanBlock // delivers the block after cur
	pending     bool           // a block is on its way through ahead
	spare       []byte         // the buffer the next read fills
	// spareDec and spareEnds are the decode buffers the next read fills, with decode ahead.
	spareDec  []byte
	spareEnds []int
	out       []byte
	chunk     int
	data      []byte
	err       error
	// block is how many bytes of records the next read takes: scanBlockSize, or after a Seek
	// that left the blocks read behind, seekBlockSize doubling per read up to it.
	block int64
	// ahead makes the reads started from now on decode their block's chunks too, on the
	// reading goroutine (DecodeAhead); codecs holds the codecs those goroutines use (each
	// takes one, a codec not being safe for concurrent use).
	ahead  bool
	codecs chan Codec
}

// scanBlock holds the on-disk records of consecutive chunks up to (not including) chunk end,
// starting at file offset off. buf may be short of them when the read failed; err says why.
type scanBlock struct {
	buf []byte
	off int64
	end int
	err error
	// With decode ahead: the uncompressed bytes of chunks first, first+1, ... back to back
	// in dec, chunk first+k ending at ends[k]; decErr is the error of chunk first+len(ends),
	// which stopped the decoding (nil: every chunk of the block is decoded, or none was).
	first  int
	dec    []byte
	ends   []int
	decErr error
}

// NewScanner returns a Scanner over chunks [from, to).
func (r *Reader) NewScanner(from, to int) *Scanner {
	s := &Scanner{r: r, next: from, end: to, chunk: -1, cur: scanBlock{end: from, first: from}, aheadBlocks: make(chan scanBlock, 1), block: scanBlockSize}
	if from < 0 || to > r.chunks || from > to {
		s.err = fmt.Errorf("%w: chunks [%d, %d) of %d", ErrLength, from, to, r.chunks)
		return s
	}
	if r.info != nil {
		var err error
		if s.codec, err = CodecFor(r.info.Compressor, r.info.Options); err != nil {
			s.err = err
		}
	}
	return s
}

// read starts reading the block that begins with chunk first: as many whole records as fit in
// scanBlockSize, and at least one. A record that cannot exist (see Reader.record) ends the block;
// if it is the first, the block carries its error.
func (s *Scanner) read(first int) {
	s.pending = true
	off, size, err := s.r.record(first)
	if err != nil {
		s.aheadBlocks <- scanBlock{end: first + 1, first: first, off: off, err: err}
		return
	}
	end := first + 1
	for end < s.end {
		_, n, err := s.r.record(end)
		if err != nil || size+n > s.block {
			break
		}
		size += n
		end++
	}
	s.block = min(2*s.block, scanBlockSize)
	buf := s.spare[:0]
	if int64(cap(buf)) < size {
		room := max(size, scanBlockSize)
		if end == s.end {
			room = size // the last block: no later one reuses the room (a small file's only one)
		}
		buf = make([]byte, 0, room)
	}
	buf = buf[:size]
	s.spare = nil
	ch := s.aheadBlocks
	blk := scanBlock{off: off, end: end, first: first, dec: s.spareDec[:0], ends: s.spareEnds[:0]}
	s.spareDec, s.spareEnds = nil, nil
	var codec Codec
	if s.ahead && s.r.info != nil && s.codec != nil {
		codec = s.aheadCodec()
		if want := (end - first) * s.r.chunkLength; cap(blk.dec) < want {
			blk.dec = make([]byte, 0, want)
		}
	}
	go func() {
		got, err := s.r.r.ReadAt(buf, off)
		if got == len(buf) {
			err = nil
		} else if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: read %d of %d bytes at offset %d", io.ErrUnexpectedEOF, got, len(buf), off)
		}
		blk.buf, blk.err = buf[:got], err
		if codec != nil {
			if err == nil {
				s.decodeBlock(&blk, codec)
			}
			select {
			case s.codecs <- codec:
			default:
			}
		}
		ch <- blk
	}()
}

// decodeBlock decodes the chunks of b (read whole) into b.dec, up to the first that fails.
func (s *Scanner) decodeBlock(b *scanBlock, codec Codec) {
	for i := b.first; i < b.end; i++ {
		off, size, err := s.r.record(i)
		if err == nil {
			lo := off - b.off
			var out []byte
			out, err = s.r.decode(i, off, b.buf[lo:lo+size], b.dec, codec)
			if err == nil {
				b.dec = out
				b.ends = append(b.ends, len(out))
				continue
			}
		}
		b.decErr = err
		return
	}
}

// aheadCodec is a codec for a reading goroutine: one a finished read gave back, or a new one.
func (s *Scanner) aheadCodec() Codec {
	select {
	case c := <-s.codecs:
		return c
	default:
	}
	c, err := CodecFor(s.r.info.Compressor, s.r.info.Options)
	if err != nil {
		return nil // NewScanner made s.codec from the same: not reached
	}
	return c
}

// DecodeAhead makes the blocks read from now on (each up to scanBlockSize of records, read
// while the one before is consumed) decode on the goroutine that reads them: a consumer that
// wants every chunk (a pass over keys packed in every chunk) then has its next block decoded
// on another core while it works on this one. A consumer that seeks past most chunks should
// leave it off: it decodes every chunk of a block. Errors are reported at the chunk as
// without it.
func (s *Scanner) DecodeAhead(on bool) {
	s.ahead = on
	if on && s.codecs == nil {
		s.codecs = make(chan Codec, 2)
	}
}

// Next decodes the next chunk. It returns false at the end of the run or on the first error.
func (s *Scanner) Next() bool {
	if s.err != nil || s.next >= s.end {
		return false
	}
	i := s.next
	if i >= s.cur.end {
		if !s.pending {
			s.read(i)
		}
		b := <-s.aheadBlocks
		s.pending = false
		s.recycle(b)
		if b.end < s.end && b.err == nil {
			s.read(b.end)
		}
	}
	off, size, err := s.r.record(i)
	if err != nil {
		s.err = err
		return false
	}
	lo := off - s.cur.off
	if lo < 0 || lo+size > int64(len(s.cur.buf)) {
		err := s.cur.err
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		s.err = chunkError(i, off, err)
		return false
	}
	var data []byte
	if k := i - s.cur.first; k >= 0 && k < len(s.cur.ends) {
		// Decoded ahead.
		start := 0
		if k > 0 {
			start = s.cur.ends[k-1]
		}
		s.chunk, s.data, s.next = i, s.cur.dec[start:s.cur.ends[k]], i+1
		return true
	} else if k == len(s.cur.ends) && s.cur.decErr != nil {
		s.err = s.cur.decErr
		return false
	}
	data, err = s.r.decode(i, off, s.cur.buf[lo:lo+size], s.out[:0], s.codec)
	if err != nil {
		s.err = err
		return false
	}
	if s.r.info != nil {
		s.out = data
	}
	s.chunk, s.data, s.next = i, data, i+1
	return true
}

// seekBlockSize is the first read after a Seek that leaves the blocks read behind: a reader
// that seeks from key to key of large partitions reads little more than the chunks it
// decodes, and one that goes on sequentially soon reads scanBlockSize again.
const seekBlockSize = 64 << 10

// Seek makes chunk i, at or after the next one, the next that Next decodes: the chunks before
// it are neither decoded nor checked. Within the block read or being read it costs nothing;
// further on, the scanner abandons the read in flight and reads again from i, a short block
// first. Like Next, it ends the validity of Bytes.
func (s *Scanner) Seek(i int) {
	if s.err != nil || i <= s.next {
		return
	}
	if i >= s.end {
		s.next = s.end
		return
	}
	if i >= s.cur.end && s.pending {
		// The block being read starts at cur.end; it holds i when i's record starts within a
		// block's length of there.
		from, _, err1 := s.r.record(s.cur.end)
		at, _, err2 := s.r.record(i)
		if err1 == nil && err2 == nil && at-from < s.block/2 {
			b := <-s.aheadBlocks
			s.pending = false
			s.recycle(b)
			if b.end < s.end && b.err == nil {
				s.read(b.end)
			}
		}
	}
	if i >= s.cur.end {
		// Start over at i. A read in flight still sends its block into the old channel
		// (buffered), which nobody reads.
		if s.pending {
			s.aheadBlocks, s.pending = make(chan scanBlock, 1), false
		}
		s.recycle(scanBlock{end: i, first: i})
		s.block = seekBlockSize
	}
	s.next = i
}

// recycle makes b the current block, the current one's buffers the spares the next read fills.
func (s *Scanner) recycle(b scanBlock) {
	s.spare, s.spareDec, s.spareEnds = s.cur.buf, s.cur.dec, s.cur.ends
	s.cur = b
}

// Chunk is the index of the chunk Next decoded.
func (s *Scanner) Chunk() int { return s.chunk }

// Offset is the uncompressed Data.db position of the chunk's first byte.
func (s *Scanner) Offset() int64 { return int64(s.chunk) * int64(s.r.chunkLength) }

// Bytes is the chunk's uncompressed contents, valid until the next call to Next.
func (s *Scanner) Bytes() []byte { return s.data }

// Err is the error that stopped the scan, or nil.
func (s *Scanner) Err() error { return s.err }

// ForEachChunk checks and decodes every chunk in order, calling fn (if not nil) with each
// chunk's uncompressed bytes, which are valid only during the call. ForEachChunk(nil) is a
// full verification of Data.db against its checksums. It stops at the first error.
func (r *Reader) ForEachChunk(fn func(chunk int, uncompressed []byte) error) error {
	s := r.NewScanner(0, r.chunks)
	for s.Next() {
		if fn != nil {
			if err := fn(s.Chunk(), s.Bytes()); err != nil {
				return err
			}
		}
	}
	return s.Err()
}
