// Package bloom owns Filter.db, the per-sstable Bloom filter over partition keys (BIG and BTI):
// its sizing (BloomCalculations, FilterFactory), its bit indexes (BloomFilter over Cassandra's
// MurmurHash3 x64_128) and both on-disk layouts.
//
//	+---------------+---------------+------------------------------------------+
//	| i32 hashCount | i32 wordCount | wordCount x 8-byte words                 |
//	+---------------+---------------+------------------------------------------+
//	new format (na+, BTI): raw OffHeapBitSet memory, bit i = byte[i>>3] bit (i&7)
//	old format (md, me):   each 8-byte word byte-reversed (a big-endian long)
//
//	bits of a key: h0, h1 = MurmurHash3_x64_128(key, seed 0)   (h0 is the Murmur3 token)
//	               max = 64*wordCount; base = h1; inc = h0
//	               hashCount times: set bit abs(base % max)  (Java signed %), base += inc
//
//	sizing:        K, buckets = computeBloomSpec(maxBucketsPerElement(n), fp)
//	               numBits = n*buckets + 20; wordCount = ((numBits-1) >>> 6) + 1
//	               fp == 1.0: no filter at all (AlwaysPresent)
//
// It is pure code: no I/O. It imports only the standard library and the sstable encoding and
// token packages.
package bloom
