// Package schema owns what an sstable says about its own table: the SerializationHeader stored
// in Statistics.db (key, clustering, static and regular column types as Cassandra marshal type
// strings, and the EncodingStats that rows are delta-encoded against), and the parsed marshal
// types the row codec needs (fixed or variable width, multi-cell collections, counters).
//
// No CQL schema is needed anywhere in sluice: the header is enough to walk every row.
// It is pure code and imports only the standard library and sstable/encoding.
package schema
