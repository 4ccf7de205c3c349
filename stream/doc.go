// Package stream owns partial-sstable streaming between sluice nodes: session state machines
// as pure code (no sockets, goroutines or clocks inside), the sender's per-sstable decision
// (entire, partial zero-copy, or rows), the receiver's chunk checking, rebuild and atomic
// install, and a thin driver that runs sessions over quic-go streams with mutual TLS.
//
// It reuses sstable/slice for planning and rebuilding (there is one planner and one
// rebuilder) and wire for the message set. It must not import membership: it is told peers
// and ranges; it does not look them up.
package stream
