// Package compress owns the chunk layer of Data.db: CompressionInfo.db, CRC.db and
// Digest.crc32 codecs, the per-chunk compressors Cassandra uses (LZ4, Snappy, Deflate, Zstd,
// Noop), a Reader that checks and decompresses chunks (random access and fast sequential
// scans), and a Writer that produces a Data.db and its chunk metadata (FORMAT.md §2.1–2.3,
// §2.10).
//
// It knows nothing about partitions or rows: it maps uncompressed Data.db positions to chunks
// and bytes. It imports only the standard library, sstable/encoding, sstable/version and the
// compression libraries, never other sstable packages.
//
// On-disk layout of a compressed Data.db (no chunk length is stored anywhere):
//
//	Data.db                                       CompressionInfo.db
//	offset                                        +---------------------------------+
//	  0  +----------------------------+ <-------- | writeUTF compressor class name  |
//	     | chunk 0 bytes              |           | i32 option count                |
//	     |  (compressed, or raw when  |           |   { writeUTF key, value } *     |
//	     |   length >= maxCompLength) |           | i32 chunkLength L (power of 2)  |
//	     +----------------------------+           | i32 maxCompressedLength (na+)   |
//	     | u32 BE CRC32(chunk 0 bytes)|           | i64 dataLength (uncompressed)   |
//	o1   +----------------------------+ <-------- | i32 chunk count                 |
//	     | chunk 1 bytes              |           | i64 offset[0..count)            |
//	     +----------------------------+           +---------------------------------+
//	     | u32 BE CRC32(chunk 1 bytes)|
//	     +----------------------------+
//	     | ...                        |  chunk i covers uncompressed [i*L, min((i+1)*L, dataLength))
//	oN   +----------------------------+  len(i) = offset[i+1] - offset[i] - 4; the last entry
//	     | last chunk bytes           |  uses the file length. A trailing chunk may decode to
//	     +----------------------------+  0 bytes (count = ceil(dataLength/L) + 1).
//	     | u32 BE CRC32               |
//	     +----------------------------+
//
// Chunk framing per compressor:
//
//	LZ4Compressor      u32 LE uncompressed length, raw LZ4 block (lz4-java)
//	SnappyCompressor   raw Snappy block (uvarint length, then elements)
//	DeflateCompressor  zlib stream (java.util.zip); empty input is zero bytes
//	ZstdCompressor     one zstd frame with content size and checksum (zstd-jni)
//	NoopCompressor     the bytes as they are
//
// A raw chunk (CASSANDRA-10520, na+): when the compressed form is at least
// maxCompressedLength = ceil(L / min_compress_ratio) bytes, the uncompressed bytes are stored
// instead, a short last chunk zero-padded to maxCompressedLength. Readers decide by length
// alone: on-disk length >= maxCompressedLength means raw.
//
// An uncompressed Data.db is the plain bytes, with CRC.db beside it:
//
//	CRC.db:  i32 chunkLength (65536) | u32 BE CRC32 of each chunkLength slice of Data.db ...
//
// Digest.crc32 is the ASCII decimal of the CRC32 of the whole Data.db, inline CRCs included.
package compress
