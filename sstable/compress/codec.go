package compress

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec compresses and decompresses single chunks in the framing a Cassandra ICompressor uses
// on disk. Both methods append to dst and allocate only when dst lacks capacity. A Codec is
// not safe for concurrent use; CodecFor returns a fresh one each call.
type Codec interface {
	// Name is the compressor's simple class name, as CompressionInfo.db stores it.
	Name() string
	// Bound is the largest output Compress can produce for n input bytes.
	Bound(n int) int
	// Compress appends the compressed form of src to dst.
	Compress(dst, src []byte) ([]byte, error)
	// Decompress appends the n bytes src decompresses to. Output of any other length is an
	// error wrapping ErrLength; undecodable input wraps ErrDecompress.
	Decompress(dst, src []byte, n int) ([]byte, error)
}

// Compressor simple names as Cassandra writes them (Class.getSimpleName).
const (
	LZ4     = "LZ4Compressor"
	Snappy  = "SnappyCompressor"
	Deflate = "DeflateCompressor"
	Zstd    = "ZstdCompressor"
	Noop    = "NoopCompressor"
)

// javaPackage is where Cassandra resolves compressor names without a dot
// (CompressionParams.parseCompressorClass).
const javaPackage = "org.apache.cassandra.io.compress."

// SimpleName maps a compressor class name, short or fully qualified, to the simple name
// CompressionInfo.db stores.
func SimpleName(class string) string { return strings.TrimPrefix(class, javaPackage) }

// CodecFor returns a codec for a compressor class (short or fully qualified name) and its
// options. Options a compressor does not use are ignored; bad values of the ones it uses are
// errors. Unknown classes and dictionary compressors fail with a *CompressorError.
func CodecFor(class string, opts []Option) (Codec, error) {
	name := SimpleName(class)
	if strings.Contains(name, ".") {
		return nil, &CompressorError{Name: class, Reason: "not a class in " + strings.TrimSuffix(javaPackage, ".")}
	}
	switch name {
	case LZ4:
		return newLZ4(opts)
	case Snappy:
		return &snappyCodec{}, nil
	case Deflate:
		level, err := intOption(opts, "compression_level", -1, -1, 9)
		if err != nil {
			return nil, err
		}
		if level == -1 {
			level = 6 // java.util.zip.Deflater.DEFAULT_COMPRESSION is zlib level 6
		}
		return &deflateCodec{level: level}, nil
	case Zstd:
		// ZstdCompressor.DEFAULT_COMPRESSION_LEVEL; the range is zstd's min..max level.
		level, err := intOption(opts, "compression_level", 3, -(1 << 17), 22)
		if err != nil {
			return nil, err
		}
		return &zstdCodec{level: level}, nil
	case Noop:
		return noopCodec{}, nil
	}
	if strings.Contains(name, "Dictionary") {
		return nil, &CompressorError{Name: class, Reason: "dictionary compression needs the table's dictionary"}
	}
	return nil, &CompressorError{Name: class, Reason: "unknown compressor"}
}

func option(opts []Option, key string) (string, bool) {
	for _, o := range opts {
		if o.Key == key {
			return o.Value, true
		}
	}
	return "", false
}

func intOption(opts []Option, key string, def, lo, hi int) (int, error) {
	s, ok := option(opts, key)
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%w: option %s=%q (want %d..%d)", ErrInvalid, key, s, lo, hi)
	}
	return v, nil
}

// lz4Codec is LZ4Compressor: a 4-byte little-endian uncompressed length, then one raw LZ4
// block (lz4-java). The fast compressor's hash table is made on the first Compress: most
// codecs only ever decode, and a Reader made per chunk would otherwise zero one per chunk.
type lz4Codec struct {
	fast *lz4.CompressorCCompat
	high *lz4.CompressorHC
}

func newLZ4(opts []Option) (Codec, error) {
	typ, _ := option(opts, "lz4_compressor_type")
	switch typ {
	case "", "fast":
		// lz4-java's fast compressor is the reference LZ4_compress_default, which
		// CompressorCCompat reproduces byte for byte.
		return &lz4Codec{}, nil
	case "high":
		level, err := intOption(opts, "lz4_high_compressor_level", 9, 1, 17)
		if err != nil {
			return nil, err
		}
		// pierrec's levels are search depths 1<<(8+k); map Cassandra's 1..17 onto Level1..Level9.
		return &lz4Codec{high: &lz4.CompressorHC{Level: lz4.CompressionLevel(1 << (8 + min(level, 9)))}}, nil
	}
	return nil, fmt.Errorf("%w: option lz4_compressor_type=%q (want fast or high)", ErrInvalid, typ)
}

func (*lz4Codec) Name() string    { return LZ4 }
func (*lz4Codec) Bound(n int) int { return 4 + lz4.CompressBlockBound(n) }

func (c *lz4Codec) Compress(dst, src []byte) ([]byte, error) {
	start := len(dst)
	dst = grow(dst, c.Bound(len(src)))
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(src)))
	out := dst[start+4 : start+c.Bound(len(src))]
	var k int
	var err error
	switch {
	case c.high != nil:
		k, err = c.high.CompressBlock(src, out)
	default:
		if c.fast == nil {
			c.fast = &lz4.CompressorCCompat{}
		}
		k, err = c.fast.CompressBlock(src, out)
	}
	if err != nil || k == 0 {
		// Unreachable with a CompressBlockBound-sized buffer, which always fits.
		return dst[:start], fmt.Errorf("lz4 compress: %d bytes, %v", k, err)
	}
	return dst[:start+4+k], nil
}

func (*lz4Codec) Decompress(dst, src []byte, n int) ([]byte, error) {
	if len(src) < 4 {
		return dst, fmt.Errorf("%w: lz4 chunk of %d bytes has no length header", ErrDecompress, len(src))
	}
	if h := binary.LittleEndian.Uint32(src); int64(h) != int64(n) {
		return dst, fmt.Errorf("%w: lz4 header says %d bytes, chunk covers %d", ErrLength, h, n)
	}
	start := len(dst)
	dst = grow(dst, n)
	k, err := lz4.UncompressBlock(src[4:], dst[start:start+n])
	if err != nil {
		return dst[:start], fmt.Errorf("%w: lz4: %v", ErrDecompress, err)
	}
	if k != n {
		return dst[:start], fmt.Errorf("%w: lz4 block decompressed to %d bytes, want %d", ErrLength, k, n)
	}
	return dst[:start+n], nil
}

// snappyCodec is SnappyCompressor: one raw Snappy block (Snappy.rawCompress).
type snappyCodec struct{}

func (snappyCodec) Name() string { return Snappy }

// Bound is the reference Snappy's MaxCompressedLength (32 + n + n/6), the bound of the
// compressor Cassandra uses (snappy-java): klauspost's MaxEncodedLen is tighter (its encoder
// never expands as much), so an incompressible chunk Cassandra wrote would exceed it.
func (snappyCodec) Bound(n int) int { return 32 + n + n/6 }

func (c snappyCodec) Compress(dst, src []byte) ([]byte, error) {
	bound := c.Bound(len(src))
	if bound < 0 {
		return dst, fmt.Errorf("snappy: %d bytes is too large to encode", len(src))
	}
	start := len(dst)
	dst = grow(dst, bound)
	out := snappy.Encode(dst[start:start+bound], src)
	if len(out) > 0 && &out[0] != &dst[start] {
		copy(dst[start:], out) // Encode allocated after all; out still fits in bound
	}
	return dst[:start+len(out)], nil
}

func (snappyCodec) Decompress(dst, src []byte, n int) ([]byte, error) {
	dl, err := snappy.DecodedLen(src)
	if err != nil {
		return dst, fmt.Errorf("%w: snappy: %v", ErrDecompress, err)
	}
	if dl != n {
		return dst, fmt.Errorf("%w: snappy header says %d bytes, chunk covers %d", ErrLength, dl, n)
	}
	start := len(dst)
	dst = grow(dst, n)
	// DecodeStrict rejects the s2 extensions Java's Snappy cannot read.
	if _, err := snappy.DecodeStrict(dst[start:start+n], src); err != nil {
		return dst[:start], fmt.Errorf("%w: snappy: %v", ErrDecompress, err)
	}
	return dst[:start+n], nil
}

// deflateCodec is DeflateCompressor: a zlib stream (java.util.zip.Deflater/Inflater). Java
// compresses empty input to zero bytes and inflates zero bytes to nothing, so both
// directions special-case empty input.
type deflateCodec struct {
	level int
	w     *zlib.Writer
	out   appender // the writer's destination, a field so that it never escapes per call
	r     io.ReadCloser
	src   bytes.Reader
	one   [1]byte // probes for bytes past the expected end; a field so that it never escapes
}

func (*deflateCodec) Name() string { return Deflate }

// Bound is zlib's deflateBound, as DeflateCompressor.initialCompressedBufferLength.
func (*deflateCodec) Bound(n int) int { return n + n>>12 + n>>14 + n>>25 + 13 }

// appender is an io.Writer that appends to a slice.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

func (c *deflateCodec) Compress(dst, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return dst, nil
	}
	c.out.b = grow(dst, c.Bound(len(src)))[:len(dst)]
	if c.w == nil {
		w, err := zlib.NewWriterLevel(&c.out, c.level)
		if err != nil {
			return dst, err
		}
		c.w = w
	} else {
		c.w.Reset(&c.out)
	}
	if _, err := c.w.Write(src); err != nil {
		return dst, err
	}
	if err := c.w.Close(); err != nil {
		return dst, err
	}
	out := c.out.b
	c.out.b = nil // the caller owns the buffer now
	return out, nil
}

func (c *deflateCodec) Decompress(dst, src []byte, n int) ([]byte, error) {
	return c.decompress(dst, src, n, true)
}

// decompressUpTo decodes a whole chunk whose uncompressed length is unknown but at most max:
// the cut last chunk of a zero-copy split child, as a deflate stream does not state its length.
func (c *deflateCodec) decompressUpTo(dst, src []byte, max int) ([]byte, error) {
	return c.decompress(dst, src, max, false)
}

// decompress decodes src; exact says the stream holds exactly n bytes, else at most n.
func (c *deflateCodec) decompress(dst, src []byte, n int, exact bool) ([]byte, error) {
	if len(src) == 0 {
		if n != 0 && exact {
			return dst, fmt.Errorf("%w: empty deflate chunk, chunk covers %d bytes", ErrLength, n)
		}
		return dst, nil
	}
	c.src.Reset(src)
	var err error
	if c.r == nil {
		c.r, err = zlib.NewReader(&c.src)
	} else {
		err = c.r.(zlib.Resetter).Reset(&c.src, nil)
	}
	if err != nil {
		return dst, fmt.Errorf("%w: zlib: %v", ErrDecompress, err)
	}
	start := len(dst)
	dst = grow(dst, n)
	k, err := io.ReadFull(c.r, dst[start:start+n])
	switch {
	case !exact && (err == io.ErrUnexpectedEOF || err == io.EOF):
		return dst[:start+k], nil // ReadFull stopped at the end of the stream, which checked the Adler-32
	case err == io.ErrUnexpectedEOF || (err == io.EOF && n > 0):
		return dst[:start], fmt.Errorf("%w: deflate stream ended after %d bytes, want %d", ErrLength, k, n)
	case err != nil:
		return dst[:start], fmt.Errorf("%w: zlib: %v", ErrDecompress, err)
	}
	// Read to the end of the stream: this checks the Adler-32 and that nothing follows.
	switch m, err := c.r.Read(c.one[:]); {
	case m > 0:
		return dst[:start], fmt.Errorf("%w: deflate stream longer than %d bytes", ErrLength, n)
	case err != io.EOF:
		return dst[:start], fmt.Errorf("%w: zlib: %v", ErrDecompress, err)
	}
	return dst[:start+n], nil
}

// zstdCodec is ZstdCompressor: one standard zstd frame with content size and checksum, as
// zstd-jni's Zstd.compress(dst, src, level, true) writes.
type zstdCodec struct {
	level int
	enc   *zstd.Encoder
	dec   *zstd.Decoder
}

func (*zstdCodec) Name() string { return Zstd }

// Bound is ZSTD_COMPRESSBOUND.
func (*zstdCodec) Bound(n int) int {
	b := n + n>>8
	if n < 128<<10 {
		b += (128<<10 - n) >> 11
	}
	// A frame header (up to 18 bytes) and a checksum; zero-length input still needs a frame.
	return b + 32
}

func (c *zstdCodec) Compress(dst, src []byte) ([]byte, error) {
	if c.enc == nil {
		enc, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(c.level)),
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(true),
			zstd.WithZeroFrames(true))
		if err != nil {
			return dst, err
		}
		c.enc = enc
	}
	return c.enc.EncodeAll(src, grow(dst, c.Bound(len(src)))[:len(dst)]), nil
}

func (c *zstdCodec) Decompress(dst, src []byte, n int) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return dst, fmt.Errorf("%w: zstd: %v", ErrDecompress, err)
	}
	if h.HasFCS && h.FrameContentSize != uint64(n) {
		return dst, fmt.Errorf("%w: zstd frame says %d bytes, chunk covers %d", ErrLength, h.FrameContentSize, n)
	}
	if c.dec == nil {
		// The cap limit makes DecodeAll stop at n bytes instead of growing dst, so a hostile
		// frame cannot make it allocate.
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			return dst, err
		}
		c.dec = dec
	}
	start := len(dst)
	dst = grow(dst, n)
	got, err := c.dec.DecodeAll(src, dst[start:start:start+n])
	if err != nil {
		return dst[:start], fmt.Errorf("%w: zstd: %v", ErrDecompress, err)
	}
	if len(got) != n {
		return dst[:start], fmt.Errorf("%w: zstd frame decompressed to %d bytes, want %d", ErrLength, len(got), n)
	}
	if n > 0 && &got[0] != &dst[start] {
		copy(dst[start:], got)
	}
	return dst[:start+n], nil
}

// noopCodec is NoopCompressor: chunks are stored as they are.
type noopCodec struct{}

func (noopCodec) Name() string    { return Noop }
func (noopCodec) Bound(n int) int { return n }

func (noopCodec) Compress(dst, src []byte) ([]byte, error) { return append(dst, src...), nil }

func (noopCodec) Decompress(dst, src []byte, n int) ([]byte, error) {
	if len(src) != n {
		return dst, fmt.Errorf("%w: noop chunk of %d bytes, chunk covers %d", ErrLength, len(src), n)
	}
	return append(dst, src...), nil
}

// grow extends b's length by n, reallocating (with some headroom) only when its capacity is
// short. The new bytes are not cleared.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, len(b)+n+len(b)/4)
	copy(nb, b)
	return nb
}
