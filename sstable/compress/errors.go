package compress

import (
	"errors"
	"fmt"
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

// ChunkError locates a failure to read one chunk of Data.db. FileOffset is where the chunk's
// on-disk bytes start. The caller adds the file name.
type ChunkError struct {
	Chunk      int
	FileOffset int64
	Err        error
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("chunk %d at file offset %d: %v", e.Chunk, e.FileOffset, e.Err)
}

func (e *ChunkError) Unwrap() error { return e.Err }

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
