// Package ring owns the token-ring arithmetic of a sluice cluster: which node owns which Murmur3
// token ranges, which nodes replicate each range under SimpleStrategy or NetworkTopologyStrategy
// (walking the ring exactly as Cassandra's AbstractReplicationStrategy implementations do), how
// ownership is balanced when a node picks its tokens, and, for a topology change (bootstrap,
// decommission, move), the future ring, the ranges each node gains or gives up, and a streaming
// plan naming one source replica for every range a node must fetch. It also answers the
// questions cleanup and repair ask: what a node should keep, and what two nodes both replicate.
//
// It is the counterpart of Cassandra's TokenMetadata, SimpleStrategy, NetworkTopologyStrategy,
// PendingRangeMaps, RangeStreamer and the token allocator, reduced to values and functions.
// A Ring is immutable: every change returns a new Ring, so one value may be shared by any number
// of goroutines without locking.
//
// It is pure code: no I/O, no goroutines, no clocks, no randomness except through a caller's
// *rand.Rand. It imports only the standard library and sstable/token; it must not import
// net, os, io, memberlist or the stream packages. The membership layer that watches gossip
// builds Rings from what it hears and hands the plans computed here to the streaming code.
//
// Only the Murmur3 partitioner is supported: tokens of any other kind are rejected when a Ring is
// built and ignored by queries.
package ring
