// Package bigindex owns the BIG format's partition index components: Index.db (the primary
// index: one entry per partition, with the promoted row index carried verbatim) and Summary.db
// (the sampled index summary, rebuilt from an Index.db pass).
//
// Index.db is a run of entries in partitioner order, with no header and no trailer:
//
//	+--------+-----------+----------------+-------------------+---------------------------+
//	| u16 kl | key[kl]   | uvint position | uvint promotedLen | promoted[promotedLen]     |
//	+--------+-----------+----------------+-------------------+---------------------------+
//	position: uncompressed Data.db offset of the partition header
//
//	promoted (only when the partition spans >= 2 index blocks), opaque to this package except:
//	+--------------------+--------------+------------+---------------------+--------------+
//	| uvint headerLength | DeletionTime | uvint nblk | IndexInfo[nblk] ... | i32[nblk]    |
//	+--------------------+--------------+------------+---------------------+--------------+
//	DeletionTime: < oa  i32 localDeletionTime, i64 markedForDeleteAt      (12 bytes)
//	              oa+   0x80 = LIVE (1 byte), else i64 mfda, u32 ldt      (12 bytes)
//	i32[nblk]: offset of each IndexInfo from the first; everything is relative to the
//	partition start in Data.db, so a split rewrites only position.
//
// Summary.db (Cassandra 5.0 writes offsets and positions little-endian):
//
//	+---------------------+------------------+-----------------+-------------------+
//	| i32 minIndexInterval| i32 offsetCount  | i64 offHeapSize | i32 samplingLevel |
//	+---------------------+------------------+-----------------+-------------------+
//	| i32 sizeAtFullSampling | i32le offsets[offsetCount] (from the start of offsets) |
//	+------------------------+--------------------------------------------------------+
//	| entries: key bytes (no length), i64le Index.db position   ... offsetCount times  |
//	+-----------------------------------------------------------------------------------+
//	| i32 len, first key | i32 len, last key |
//	+--------------------+-------------------+
//
// Decoders take byte slices (or an io.Reader / io.ReaderAt for Index.db, which can be many
// GiB), never panic, never allocate from an unchecked length, and report corruption with the
// byte offset; encoders append to a caller's buffer. The Index.db iterators allocate nothing
// per entry. It imports only the standard library and the sstable encoding and version
// packages; it must not import Data.db, clustering or schema code: promoted indexes are
// validated only as far as their opaque structure allows.
package bigindex
