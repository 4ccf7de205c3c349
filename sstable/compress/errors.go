package compress

import (
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// ErrChecksum reports a chunk whose stored CRC32 does not match its bytes.
var ErrChecksum = errors.New("chunk checksum mismatch")

// ErrDecompress reports chunk bytes the codec rejects.
var ErrDecompress = errors.New("chunk does not decompress")

// ErrLength reports a chunk whose length is impossible: it extends past the end of the file,
// decompresses to other than its uncompressed span, or (raw) has the wrong stored size.
var ErrLength = errors.New("chunk length mismatch")

// ErrUnsupported reports a compressor sluice cannot read or write.
var ErrUnsupported = errors.New("unsupported compressor")

// ErrInvalid reports metadata (CompressionInfo.db, CRC.db, Digest.crc32, writer options) that
// violates the format's invariants although it decodes.
var ErrInvalid = errors.New("invalid chunk metadata")

// ChunkError is a failure to read one chunk of Data.db: which chunk, and the place (an
// encoding.OffsetError whose Offset is where the chunk's on-disk bytes start; the caller
// names the file).
type ChunkError struct {
	Chunk int
	encoding.OffsetError
}

func chunkError(chunk int, fileOffset int64, err error) *ChunkError {
	return &ChunkError{Chunk: chunk, OffsetError: encoding.OffsetError{Offset: fileOffset, What: fmt.Sprintf("chunk %d", chunk), Err: err}}
}

func (e *ChunkError) Error() string { return e.OffsetError.Error() }

func (e *ChunkError) Unwrap() error { return &e.OffsetError }

// CompressorError names a compressor class that sluice does not support, and why.
// It matches ErrUnsupported under errors.Is.
type CompressorError struct {
	Name   string
	Reason string
}

func (e *CompressorError) Error() string {
	return fmt.Sprintf("%v %q: %s", ErrUnsupported, e.Name, e.Reason)
}

func (e *CompressorError) Unwrap() error { return ErrUnsupported }
