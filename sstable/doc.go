// Package sstable owns an opened Cassandra sstable as a whole: Open reads its TOC, Statistics
// and chunk metadata and gives one partition-index scan for both formats (BIG Index.db, BTI
// Partitions.db + Rows.db) and, for BTI, a walk of the trie that reads a key from Data.db only
// when asked (ScanIndex: a plan places most partitions by their trie paths); Verify checks every component against the others; Writer produces
// a complete sstable (every component, Digest and TOC last) for the writable versions; and the
// gen workload generates Cassandra-valid stress-like tables.
//
// The component codecs live in sub-packages (compress, bigindex, bloom, bti, stats, rows) and
// know nothing of files; this package does the I/O and adds the file name to their errors.
// It must not import stream, wire, membership or anything above them.
package sstable
