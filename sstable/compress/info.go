package compress

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/version"
)

// CRCLength is the size of the big-endian CRC32 that follows every compressed chunk.
const CRCLength = 4

// MaxChunkLength bounds chunkLength: Cassandra stores it as a positive int that is a power of
// two, so 1<<30 is the largest possible value.
const MaxChunkLength = 1 << 30

// Option is one compressor option (CompressionParams.getOtherOptions), kept in file order.
type Option struct {
	Key, Value string
}

// Info is CompressionInfo.db (CompressionMetadata): the compressor, the chunk grid and the
// on-disk offset of every chunk of Data.db.
type Info struct {
	// Compressor is the class name as written, normally the simple name ("LZ4Compressor").
	Compressor string
	Options    []Option
	// ChunkLength is the uncompressed size of every chunk but the last (a power of two).
	ChunkLength int
	// MaxCompressedLength is the CASSANDRA-10520 threshold: a chunk whose on-disk length
	// (without its CRC) is at least this is stored raw. It is on disk only when
	// version.HasMaxCompressedLength; ParseInfo sets math.MaxInt32 (never raw) otherwise,
	// and the Reader treats values <= 0 the same way.
	MaxCompressedLength int32
	// DataLength is the uncompressed length of Data.db.
	DataLength int64
	// Offsets holds the file offset where each chunk starts.
	Offsets []int64
}

// ParseInfo decodes CompressionInfo.db. It checks that chunkLength is a power of two, that
// each offset is at least CRCLength past the previous one, and that the chunk count is
// ceil(DataLength/ChunkLength) or one more (the trailing empty chunk of FORMAT §2.2). The
// whole input must be consumed.
func ParseInfo(b []byte, v version.Version) (*Info, error) {
	r := encoding.NewReader(b)
	info := &Info{Compressor: r.UTF()}
	// An option is two writeUTF strings: at least 4 bytes.
	if n := r.Count("compressor options", 4); n > 0 {
		info.Options = make([]Option, n)
		for i := range info.Options {
			info.Options[i] = Option{Key: r.UTF(), Value: r.UTF()}
		}
	}
	lenAt := r.Pos()
	chunkLength := r.I32()
	info.ChunkLength = int(chunkLength)
	info.MaxCompressedLength = math.MaxInt32
	mclAt := r.Pos()
	if v.HasMaxCompressedLength() {
		info.MaxCompressedLength = r.I32()
	}
	dataAt := r.Pos()
	info.DataLength = r.I64()
	countAt := r.Pos()
	n := r.Count("chunk offsets", 8)
	if n > 0 {
		// One bounds check for the whole array, then a plain loop: a 4 GiB parent has 262,144
		// offsets, parsed by every Open.
		if body := r.Bytes(8 * n); body != nil {
			info.Offsets = make([]int64, n)
			for i := range info.Offsets {
				info.Offsets[i] = int64(binary.BigEndian.Uint64(body[8*i:]))
			}
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, invalidAt(r.Pos(), fmt.Sprintf("%d trailing bytes", r.Len()))
	}
	switch {
	case chunkLength <= 0 || bits.OnesCount32(uint32(chunkLength)) != 1:
		return nil, invalidAt(lenAt, fmt.Sprintf("chunk length %d is not a positive power of two", chunkLength))
	case info.MaxCompressedLength <= 0:
		return nil, invalidAt(mclAt, fmt.Sprintf("max compressed length %d", info.MaxCompressedLength))
	case info.DataLength < 0:
		return nil, invalidAt(dataAt, fmt.Sprintf("negative data length %d", info.DataLength))
	}
	need := ceilDiv(info.DataLength, int64(info.ChunkLength))
	if int64(n) != need && int64(n) != need+1 {
		return nil, invalidAt(countAt, fmt.Sprintf("%d chunks for data length %d in %d-byte chunks (want %d or %d)",
			n, info.DataLength, info.ChunkLength, need, need+1))
	}
	for i, off := range info.Offsets {
		switch {
		case i == 0 && off < 0:
			return nil, invalidAt(countAt+4, fmt.Sprintf("negative chunk offset %d", off))
		case i > 0 && off-info.Offsets[i-1] < CRCLength:
			// Every chunk is followed by its CRC, so offsets grow by at least 4.
			return nil, invalidAt(countAt+4+8*int64(i), fmt.Sprintf("chunk %d offset %d follows %d by less than %d",
				i, off, info.Offsets[i-1], CRCLength))
		}
	}
	return info, nil
}

func invalidAt(off int64, what string) error {
	return &encoding.OffsetError{Offset: off, What: what, Err: ErrInvalid}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// Append appends the CompressionInfo.db encoding of info for version v.
func (info *Info) Append(b []byte, v version.Version) []byte {
	b = info.appendHeader(b, v)
	n := len(b)
	b = slices.Grow(b, 8*len(info.Offsets))[:n+8*len(info.Offsets)]
	for i, off := range info.Offsets {
		binary.BigEndian.PutUint64(b[n+8*i:], uint64(off))
	}
	return b
}

// Encode writes what Append appends to w, through a small buffer of its own: a split child's
// CompressionInfo.db is 8 bytes per chunk (256 KiB for a 512 MiB child), which need not be
// assembled in memory first.
func (info *Info) Encode(w io.Writer, v version.Version) error {
	b := info.appendHeader(make([]byte, 0, 4<<10), v)
	for i := 0; ; {
		for ; i < len(info.Offsets) && len(b)+8 <= cap(b); i++ {
			b = binary.BigEndian.AppendUint64(b, uint64(info.Offsets[i]))
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if i == len(info.Offsets) {
			return nil
		}
		b = b[:0]
	}
}

// appendHeader appends everything before the offsets, their count included.
func (info *Info) appendHeader(b []byte, v version.Version) []byte {
	b = encoding.AppendUTF(b, info.Compressor)
	b = encoding.AppendI32(b, int32(len(info.Options)))
	for _, o := range info.Options {
		b = encoding.AppendUTF(b, o.Key)
		b = encoding.AppendUTF(b, o.Value)
	}
	b = encoding.AppendI32(b, int32(info.ChunkLength))
	if v.HasMaxCompressedLength() {
		b = encoding.AppendI32(b, info.MaxCompressedLength)
	}
	b = encoding.AppendI64(b, info.DataLength)
	return encoding.AppendI32(b, int32(len(info.Offsets)))
}

// ChunkCount is the number of chunks, including a trailing empty one.
func (info *Info) ChunkCount() int { return len(info.Offsets) }

// ChunkFor returns the chunk holding uncompressed position pos (CompressionMetadata.chunkFor),
// or -1 when pos is outside [0, DataLength).
func (info *Info) ChunkFor(pos int64) int {
	if pos < 0 || pos >= info.DataLength {
		return -1
	}
	return int(pos / int64(info.ChunkLength))
}

// ChunkSpan returns where chunk i's on-disk bytes start and how many there are, excluding the
// CRC that follows them. The length comes from the next chunk's offset; only the last entry
// uses dataFileLength, because Data.db has no other end marker (FORMAT §2.2). A corrupt
// Info or a truncated file can make n negative or run past the file; the Reader checks.
func (info *Info) ChunkSpan(i int, dataFileLength int64) (off, n int64) {
	off = info.Offsets[i]
	end := dataFileLength
	if i+1 < len(info.Offsets) {
		end = info.Offsets[i+1]
	}
	return off, end - off - CRCLength
}

// UncompressedSpan returns the uncompressed range chunk i covers: [i*L, min((i+1)*L,
// DataLength)). A trailing empty chunk has n == 0.
func (info *Info) UncompressedSpan(i int) (start, n int64) {
	return uncompressedSpan(i, info.ChunkLength, info.DataLength)
}

func uncompressedSpan(i, chunkLength int, dataLength int64) (start, n int64) {
	start = int64(i) * int64(chunkLength)
	n = min(int64(chunkLength), dataLength-start)
	if n < 0 {
		n = 0
	}
	return start, n
}
