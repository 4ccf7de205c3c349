// Package bti owns the index components of Cassandra's BTI sstable format (version da):
// Partitions.db, the page-aware on-disk trie that maps the shortest distinguishing prefix of
// each partition key's ByteComparable form to its Rows.db or Data.db position, and Rows.db,
// which holds per-partition row-index tries and the entries that describe them.
//
// It reads both components with bounds-checked decoders (a corrupt file yields an error with
// the byte offset, never a panic) and writes them byte-for-byte as Cassandra 5.0 does: the
// trie writer mirrors IncrementalDeepTrieWriterPageAware (node-type choice by pointer size,
// bottom-up page packing so that no node crosses a 4096-byte page boundary), and the
// builders mirror PartitionIndexBuilder and RowIndexWriter.
//
// On-disk layout (all integers big-endian):
//
//	Partitions.db
//	+--------------------------------------------------------------+ 0
//	| trie nodes, children before parents, packed into 4 KiB pages |
//	| (zero padding where a branch had to start a new page)        |
//	+--------------------------------------------------------------+ firstKeyPos
//	| u16 len, first partition key | u16 len, last partition key   |
//	+--------------------------------------------------------------+ len-24
//	| i64 firstKeyPos | i64 keyCount | i64 rootPos                 |
//	+--------------------------------------------------------------+
//
//	trie node: byte0 = type<<4 | payloadBits, then the type's transitions and backward
//	pointers (child = nodePos - delta), then the payload:
//	  partition payload (payloadBits 8..15): u8 hashByte, signed position of
//	      payloadBits-7 bytes; >= 0: Rows.db entry, < 0: ~pos is a Data.db offset
//	  row-index payload: signed offset within the partition of payloadBits&7 bytes,
//	      then a DeletionTime (open range-tombstone marker) if payloadBits&8
//
//	Rows.db, per partition with more than one index block:
//	+--------------------------------------------------------------+
//	| row-index trie nodes (separator prefix -> block offset)      |
//	+--------------------------------------------------------------+ entry position
//	| u16 len, partition key                                       |
//	| uvint dataPosition | vint rootPos-basePos | uvint blockCount |  basePos = after key
//	| DeletionTime: 0x80 (live) or i64 markedForDeleteAt, u32 ldt  |
//	+--------------------------------------------------------------+
//
//	ByteComparable (OSS50) of a decorated key:
//	  0x40 token 0x40 escaped(key) 0x38
//	  Murmur3 token: 8 bytes of token^0x8000000000000000; ByteOrdered: escaped(token bytes)
//
// Partitions.db grows with the partition count (~8.5 bytes per partition), so a file-backed
// PartitionIndex (OpenPartitionIndexAt) reads its trie through four cached 64 KiB blocks:
// each node is decoded from a copy of its own bytes held by the walk frame, so the walk's path
// stays valid while the cache moves on, and memory is the same at 2M partitions as at 20M.
// Rows.db, which grows with the data instead, is read from a byte slice.
//
// It is pure code over byte slices, io.ReaderAt and io.Writers; it imports only the standard
// library and the sstable encoding and token packages.
package bti
