// Package encoding owns the primitive encodings Cassandra uses on disk: big-endian Java
// DataOutput integers, unsigned and signed (zig-zag) vints, short- and vint-length byte strings
// and Java modified UTF-8.
//
// Decoding goes through Reader, a bounds-checked cursor over a byte slice with a sticky error:
// a truncated or hostile input yields an error carrying the offset, never a panic, and no read
// allocates from a length it has not checked against the bytes that remain. Encoding appends to
// a caller's buffer (Append*), so writers control their own allocation.
//
// It imports only the standard library; every other sstable package imports it.
package encoding
