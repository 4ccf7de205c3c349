// Package stream owns partial-sstable streaming between sluice nodes: session state machines
// as pure code (no sockets, goroutines or clocks inside), the sender's per-sstable decision
// (entire, partial zero-copy, or rows), the receiver's chunk checking, rebuild and atomic
// install, and a thin driver that runs sessions over quic-go streams with mutual TLS.
//
// It reuses sstable/slice for planning and rebuilding (there is one planner and one
// rebuilder) and wire for the message set. It must not import membership: it is told peers
// and ranges; it does not look them up.
//
// # Pure core, thin shell
//
// Sender and Receiver are state machines in the etcd raft RawNode style: they take decoded
// wire messages and driver events and return the messages to send and what to do next
// (Step.Receive, Step.Discard). Decide is the sender's pure per-sstable decision. Incoming
// (per sstable) validates each Data frame, CRC-checks every compressed chunk as soon as its
// last byte arrives and digests Data.db, in O(1) memory. Server and Fetch are the drivers:
// one goroutine per connection on the server plus one control-stream reader, and Fetch's
// own goroutine on the receiver.
//
// # Session protocol
//
// The fetching node (receiver) dials the serving node (sender) with QUIC, TLS 1.3, ALPN
// wire.ALPN and a client certificate the server verifies against the cluster CA (a client
// without one is closed with code unauthorized).
//
//  1. The receiver opens the one bidirectional control stream and sends Hello; the sender
//     answers HelloAck with wire.Negotiate's version (or Failure{version} and closes).
//  2. The receiver sends StreamRequest: a random SessionID, OpFetch, keyspace, table, the
//     ranges (Murmur3 tokens as 8 big-endian bytes; the minimum token as no bytes) and, on
//     resume, one ResumePoint{ID, ResumeInstalled} per sstable it already installed.
//  3. The sender holds the table's sstables (Catalog.Hold, released at session end), runs
//     one index pass per sstable (slice.Partials) and decides each before promising
//     anything: entire when its children tile its whole Data.db (the files go as they are),
//     rows when slice.Refusal refuses zero-copy, otherwise one partial per child piece. It
//     sends Prepare with every planned sstable (ID, kind, reason, bytes, partitions), less
//     those the receiver resumes. IDs are "<parent>" (entire) or
//     "<parent>@<firstOrdinal>+<partitions>" (a child): stable for one parent and range set.
//  4. For each planned sstable, in order, the sender sends its Manifest on the control
//     stream, opens one unidirectional stream and writes its bytes as Data frames (payload
//     Config.FrameSize, read straight into the buffer behind the frame header), then closes
//     that stream (FIN). Partial: the Data.db run (StreamRuns), the index slice
//     (StreamIndex) and, BTI, the Rows.db slice as component 0. Entire: every component file
//     but TOC.txt, Statistics.db and CompressionInfo.db, which ride in the Manifest
//     (Compression, Statistics). A rows sstable gets Failure{refused} instead: this build
//     does not re-serialise rows.
//  5. The receiver validates the Manifest (limits, lengths, chunk offsets, component names
//     from a fixed list; a bad one fails that sstable with Failure{protocol} and it resets
//     the data stream), names the files itself (descriptor.NextGeneration in the target
//     directory), writes each frame at its offset through an fsx.Install, checks chunks and
//     digest as bytes arrive, then rebuilds the other components (slice.RebuildPartial) or,
//     entire, writes the manifest's components and TOC and runs sstable.Verify on the
//     uncommitted files (through a scratch directory of symbolic links) before Commit. It
//     answers Received{verified chunks, bytes} and Installed{partitions}, or
//     Failure{checksum|no_space|protocol, ID} after aborting the install and resetting the
//     data stream (CancelRead). A sender whose write is reset by the receiver moves on; a
//     sender read error resets the stream and sends Failure{internal, ID}.
//  6. Once every planned sstable has an outcome the receiver sends Complete and closes its
//     side of the control stream. The sender, on Complete, closes its side; the receiver,
//     on reading that end, closes the connection with code 0.
//
// A session-level failure (a protocol violation on the control stream, a cancelled
// context, a peer gone) closes the connection with the wire.Code of the error as QUIC
// application error code; every open install is aborted, so nothing half-written is
// visible. Liveness is QUIC's: KeepAlivePeriod pings keep a quiet session (a long rebuild)
// open, MaxIdleTimeout (Config.IdleTimeout) fails one whose peer vanished. The wire
// Keepalive message is accepted and ignored.
//
// # Resume
//
// Fetch keeps ".sluice-fetch-<hash of peer, table, ranges>.json" in the target directory:
// the sender IDs installed so far and their local TOC names, rewritten atomically (temporary
// under fsx.TempPrefix, fsync, rename, directory fsync) after each Commit, and removed when a
// session completes with nothing failed. Fetch with Resume sends the entries whose TOC
// still exists as ResumeInstalled points, and the sender leaves them out. A crash between a
// Commit and the state write re-fetches that one sstable (a duplicate, harmless to
// Cassandra). Chunk-level resume (ResumePoint.VerifiedChunks < ResumeInstalled) is not
// implemented: a partially received sstable is aborted and fetched again from its start.
//
// # Limits
//
// Server.SetThroughput sets node-wide token buckets (Limiter) for outbound bytes and, via
// Server.Inbound passed as Config.Inbound, for inbound bytes; 0 is unlimited, and a change
// wakes waiters at once. Config.MaxSessions bounds concurrent sessions (more are closed with
// code refused). Receiver memory is the frame buffer (about one frame) plus the index and
// BTI rows slices of the sstable in progress, bounded by Config.MaxIndexSlice; the sender
// holds the index slices of its whole plan.
//
// # Throughput
//
// BenchmarkFetch over loopback (TLS 1.3, QUIC, one 1000-partition 4 KiB-chunk LZ4 oa
// sstable, sender and receiver in one process, AMD EPYC, 2 cores shared):
//
//	go test -run XXX -bench BenchmarkFetch -benchtime=20x ./stream
//	BenchmarkFetch/partial-2   15.3 ms/op   120.7 MB/s   7.6 MB/op   12055 allocs/op
//	BenchmarkFetch/entire-2    28.1 ms/op   131.6 MB/s  19.7 MB/op   23180 allocs/op
//
// The allocations include both sides, the sender's planning pass and quic-go's packet
// handling; QUIC's user-space crypto and packetisation, not the file path, bound the rate.
package stream
