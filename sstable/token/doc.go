// Package token owns partitioners and token arithmetic: Cassandra's Murmur3 hash (with the
// signed-byte tail quirk of MurmurHash.hash3_x64_128 and hash2_64), Murmur3Partitioner and
// ByteOrderedPartitioner tokens, the (token, key) order of decorated keys, and (left, right]
// token ranges with wrap-around, parsed from and printed as strings like "(-100,250]".
//
// It is pure code: no I/O. It imports only the standard library.
package token
