// Package slice owns the zero-copy machinery shared by split and streaming: planning which
// partitions of an sstable a token-range set selects and which whole compressed chunks hold
// them (Plan, Layout — pure), rebuilding every other component of a child from an index-only
// pass (Builder), and the local split executor (Split) that moves the chunk runs with reflink,
// copy_file_range, a rechunk or a row-by-row rewrite and installs each child atomically.
//
// A child of a compressed parent is the run of whole parent chunks [i..j] covering its
// partitions (FORMAT.md §5): Data.db bytes are copied verbatim (optionally behind a head pad
// that keeps the copy block-aligned for FICLONERANGE), CompressionInfo.db is rebased, and
// Index/Summary/Filter/Statistics/Digest/TOC (BIG) or Partitions/Rows/Filter/Statistics/
// Digest/TOC (BTI) are rebuilt without reading a row. Digest.crc32 is derived from the chunks'
// inline CRCs with CRC-32 combination, reading 4 bytes per chunk.
//
// It must not import stream, wire or membership.
package slice
