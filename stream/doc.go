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
//     resume, one ResumePoint{ID, ResumeInstalled} per sstable it already installed and
//     one ResumePoint{ID, VerifiedChunks} for the sstable it was receiving (see Resume).
//  3. The sender holds the table's sstables (Catalog.Hold, released at session end), plans
//     each with slice.Partials (BIG: one index pass, in parallel parts for a large index,
//     that also measures the index slices and locates each run's Index.db entries; BTI: one
//     pass over the trie that plans, measures the slices and builds the rows slices, reading
//     keys from Data.db only for the child's partitions; it keeps the lengths rather than the
//     slices) and decides each before promising
//     anything: entire when the ranges take every one of its partitions (the files go as
//     they are), rows when slice.Refusal refuses zero-copy, otherwise one multi-run partial
//     holding its chunk runs for every range (one partial per run past the slice bounds,
//     Config.SliceBounds, with the reason in the plan). It
//     sends Prepare with every planned sstable (ID, kind, reason, bytes, partitions), less
//     those the receiver already installed. IDs are "<parent>" (entire) or
//     "<parent>@<firstOrdinal>+<partitions>" (a child): stable for one parent and range set.
//     On Prepare the receiver admits the session against its directory's free space (the
//     announced bytes, less what concurrent sessions into the directory still have to
//     receive; space.go) and otherwise ends it with no_space before any byte flows.
//  4. For each planned sstable, in order, the sender sends its Manifest on the control
//     stream, opens one unidirectional stream and writes its bytes as Data frames (payload
//     Config.FrameSize, read straight into the buffer behind the frame header), then closes
//     that stream (FIN). Partial and rows: BTI, first the Rows.db slice as component 0 (the
//     index records point into it); the Data.db segments in order (StreamRuns, each
//     announced as a wire.Run with its parent chunks and child offset); the index slice
//     (StreamIndex; made while it is sent, slice.IndexReader: for BIG, when the receiver's
//     Hello offers wire.FeatureIndexBig, the runs' Index.db spans verbatim
//     (Manifest.IndexFormat = IndexBig), else records from the runs' own Index.db entries;
//     for BTI records from a pass over the parent's index, or, compressed and when the Hello
//     offers wire.FeatureIndexPositions, the partitions' positions without their keys
//     (IndexPositions: no chunk decoded on the sender; the receiver reads each key from the
//     Data.db it received once the chunks holding it are in, and the sender interleaves
//     the slice no faster than the runs); on a goroutine of its own from the
//     Manifest on, so that it is read while the runs are sent, at most 4 MiB ahead:
//     readAhead); the child's rebased CompressionInfo rides in the Manifest.
//     Entire: every component file but TOC.txt,
//     Statistics.db and CompressionInfo.db, which ride in the Manifest (Compression,
//     Statistics). For a resumed sstable the Data.db bytes start at the first chunk the
//     receiver does not hold (frames carry their file offsets); everything else is sent
//     whole.
//  5. The receiver validates the Manifest (limits, lengths, chunk offsets, component names
//     from a fixed list; a bad one fails that sstable with Failure{protocol} and it resets
//     the data stream), names the files itself (descriptor.NextGeneration in the target
//     directory, under a per-directory lock held until the first file of that generation
//     exists, so concurrent Fetches into one directory never collide; a final name another
//     process published meanwhile moves on to the next generation), writes each frame at
//     its offset through the sstable's installer (see Receive side) into an fsx.Install
//     (a compressed partial whose Manifest carries Spans, offered with
//     wire.FeatureFillInPlace, is filled as it arrives: slice.InPlaceFill writes each chunk
//     a run keeps whole once, at its place in the filled child, and re-encodes the runs'
//     edges with filler partitions),
//     checks chunks and digest as bytes arrive, then
//     rebuilds the other components as the index slice arrives (slice.PartialRebuild; for
//     BTI once the rows slice is in, index frames arriving before it waiting) or, entire, writes the
//     manifest's components and TOC and runs sstable.Verify on the uncommitted files
//     (through a scratch directory of symbolic links) before its commit. Partial and
//     entire sstables received whole wait in a batch (up to Config.CommitBatch, default 64,
//     or 64 MiB; a batch also goes before an sstable of 64 MiB or more and when nothing more
//     is to arrive), which one goroutine finishes (installer.Finish: rebuilds or verifies,
//     as above) and commits with fsx.CommitAll (one syncfs for many files, at most three syncs in all) while
//     the next sstables' bytes flow (commit.go); the resume record names a batch's
//     sstables once, before its commit. A rows sstable is
//     received and rebuilt like a partial one but in a private scratch directory inside
//     the target directory (".sluice-rows-<request key>-*"), then rewritten row by row
//     over the whole ring (slice.Split, ModeRewrite) inside the scratch, published into
//     the target directory under a new generation by a second fsx.Install (TOC last), and
//     the scratch removed: nothing is visible before that commit, and a failure at any
//     step removes the scratch. The sstable writer writes nb, nc, oa and da only, so rows
//     of an md or me sstable are refused at the Manifest with Failure{refused} saying so.
//     The receiver answers Received{verified chunks, bytes} and Installed{partitions}, or
//     Failure{checksum|no_space|protocol, ID} after aborting the install and resetting the
//     data stream (CancelRead). A sender whose write is reset by the receiver moves on; a
//     sender read error resets the stream and sends Failure{internal, ID}, whose reason (the
//     file and offset it could not read) the receiver joins to the error it recorded for the
//     reset, which arrives first.
//  6. Once every planned sstable has an outcome the receiver sends Complete and closes its
//     side of the control stream. The sender, on Complete, closes its side; the receiver,
//     on reading that end, closes the connection with code 0.
//
// A session-level failure (a protocol violation on the control stream, a cancelled
// context, a peer gone) closes the connection with the wire.Code of the error as QUIC
// application error code; every open install is aborted, so nothing half-written is
// visible. A Server whose context ends closes every connection with code shutting_down
// before its socket goes, so a Fetch in flight fails at once with a *SessionError naming
// the peer and carrying the peer's code. Liveness is otherwise QUIC's: KeepAlivePeriod
// pings keep a quiet session (a long rebuild) open, MaxIdleTimeout (Config.IdleTimeout)
// fails one whose peer vanished without a word (a crashed process, a cut network). The
// wire Keepalive message is accepted and ignored. A Server also fails a session whose
// receiver sent no control message for IdleTimeout while QUIC keepalives hold the connection,
// and gives every control and data write IdleTimeout to finish (a receiver that stops
// reading frees its slot).
//
// # Admission and identity
//
// A Server admits a connection only with a certificate verified against its ClientCAs, at
// most MaxSessions sessions and MaxSessionsPerPeer per certificate name, so one peer cannot
// lock the others out. A session's Hello must name its certificate, its table must be a
// Cassandra identifier, and Config.Authorize (the node's roles) may refuse it: all three
// answer CodeUnauthorized or CodeProtocol before any sstable is opened. Control frames are
// bounded to 8 MiB until the StreamRequest and 256 KiB after it, with at most 16 decoded
// messages queued. Connections negotiating another ALPN name go to Config.Protocols (the
// node's peer calls), for node certificates only.
//
// # TLS data plane
//
// Config.Transport tls moves the bulk bytes over one TLS 1.3 connection on TCP per session:
// the recommended fast path where QUIC's user-space crypto and 1452-byte packets bound
// streaming (Go's TLS seals 16 KiB records with AES-GCM in hardware and TCP segments are
// offloaded). It is the TCP data plane below with a TLS session over the connection: the
// sender's data listener runs the server side with the same certificate, cluster CA and
// required client certificate as the QUIC listener (ALPN "sluice-data/1", TLS 1.3 only);
// the receiver verifies the server's certificate as for QUIC and, inside TLS, presents the
// one-time token. Both ends then check that the data connection's peer certificate is
// byte for byte the one the QUIC connection's peer presented, so the data connection is
// bound to the authenticated session twice: by the token and by the identity. The Hello
// feature is "tls-data"; a sender offers TCPDataPlane only to a receiver that asked for
// the plane it runs, so a receiver asking for TLS never dials plaintext, and mismatched
// ends stream over QUIC. Frames are as on the TCP plane; what differs is that payloads
// pass through user space (no sendfile or splice through TLS; Go has no kernel TLS): the
// sender reads each frame into the session's buffer behind its header and writes it in one
// call, as on QUIC; the receiver reads each payload whole (one frame, at most FrameSize)
// into memory, puts Data.db bytes through the chunk checker, the digest and the CRC.db
// writer there, and writes them, as on QUIC. Config.TCPCongestion selects the TCP
// congestion control of both ends' data sockets (setsockopt TCP_CONGESTION; the listener's
// is inherited by accepted connections), e.g. "bbr" where the kernel offers it.
//
// # TCP data plane
//
// Config.Transport tcp moves the bulk bytes over plain TCP, for trusted networks only: the
// sstable bytes travel UNENCRYPTED and unauthenticated on the wire (anyone on the path can
// read them, and, short of the chunk CRCs, alter them); only the QUIC control stream keeps
// mutual TLS. Use it inside one data centre or a private network where QUIC's user-space
// crypto, not the disks, bounds streaming; keep quic (the default) everywhere else. A
// receiver dials the offered data address only on the host it reached the sender at (a
// sender cannot make it connect elsewhere), and the data listener's accept loop backs off
// on errors (descriptors exhausted by a flood) and goes on.
//
// A session uses it when both ends are configured for it: the receiver lists the Hello
// feature "tcp-data", and a sender with Transport tcp answers, on the control stream right
// before Prepare, with wire.TCPDataPlane{Token, Addr}: 32 random bytes and the address of
// its TCP data listener (Config.TCPAddr; an unspecified host there means the host the
// receiver dialed). Otherwise the session runs over QUIC as above. The receiver dials Addr
// and writes the token first; the sender's listener hands the connection to the session
// that offered a token only if it matches an outstanding one (compared in constant time),
// within HandshakeTimeout of the offer and of the connection's start, and once: the token
// is then forgotten. Any other connection is closed without a byte written to it. Mutual
// TLS on the control stream authenticates both peers, and the token binds the data
// connection to that authenticated session.
//
// The one data connection carries every sstable of the session in order, in place of the
// per-sstable unidirectional streams: after each Manifest, the sstable's Data frames
// exactly as on QUIC (frames from memory written whole; for file bytes, the frame header
// with a write and the payload straight from the file with sendfile, the run bytes being
// verbatim on disk), then an empty Data frame for that sstable, which ends its data as the
// FIN does on QUIC. The receiver reads each frame header through a 512-byte buffer,
// validates it as Accept does, and splices the payload from the socket into the file at its
// offset (fsx.SpliceToFile); index and rows slices go to memory. The checks stay: every
// spliced Data.db payload is then read back from the file (the page cache, where the splice
// just put it) in 256 KiB pieces and fed to the chunk CRC checker, the digest and the CRC.db
// writer, so they see exactly the bytes the file holds. Design note: that read-back costs
// the same copies as a plain read + pwrite path would (splice copies the socket's pages
// into the page cache, the read-back copies them out once; read + pwrite copies into user
// space and back into the page cache), and measured within noise of it (sluice bench stream
// --transport tcp); splice was kept because it is what the data plane is for and checks the
// file's bytes rather than a buffer's. Only the sender's side is zero-copy in the strict
// sense.
//
// Failures: a receiver that fails an sstable (a bad chunk CRC, a refused Manifest, no
// space found before writing) says so on the control stream as on QUIC and skips the rest
// of that sstable's frames up to its end frame; the sender, which checks the control stream
// between frames, stops sending it at once and ends it early. An error in the middle of a
// frame (the connection breaks or is cut, a splice or sendfile fails, the sender cannot read
// its file) leaves the connection out of step and fails the whole session, like a broken
// QUIC connection: installs abort and the verified Data.db prefix is kept for Resume as
// usual; the receiver waits up to a second for the sender's QUIC close, whose reason (the
// file it could not read) its error then carries. Either side closes the data connection
// when its QUIC connection ends, and a cancelled Fetch closes both. The send loop, not the
// plane, reads the control stream between frames: a plane sees only planeLink (outbound.go).
// A Readable or Writable without a file (File() nil; the fault tests') makes sendfile and
// splice fall back to the session's buffer, as under TLS.
//
// # Receive side
//
// By concern: recvsession.go runs the control stream (the Receiver stepped, what it decided
// carried out); transfer.go receives one sstable over the data plane (inbound.go); an
// installer per kind (installer.go; install_entire.go, install_partial.go, install_rows.go)
// writes it, behind one interface with pebble's Writable contract: after creation exactly
// one of Finish or Abort is called, Abort (or a Finish that fails) removes everything the
// installer created, and a Finish that succeeds hands a pending commit on (a shared batch's
// fsx.CommitAll, commit.go, or its own); space.go admits the session against free space;
// resume.go holds the resume record (resumeState) and the kept Data.db prefixes. What the
// kinds share (temporary names through fsx.Install, the scratch directory, the Writables)
// is installFiles, and partial and rows share the index-slice rebuild (childRebuild).
//
// # I/O seam
//
// objio.go, after pebble's objstorage: the sender reads every component byte it sends
// through a Readable (ReadAt never returns a short result: short reads are read on; WillRead
// hints; File for sendfile) and the receiver writes every received file through a Writable
// (Write, WriteAt, Sync for checkpoints, File for splice and copy_file_range, Finish or Abort).
// Config's unexported storage picks the implementation: files in production, a faulty one in
// fault_test.go (short reads, EIO at byte N on the sender, ENOSPC at byte N and a torn write
// on the receiver), without root or loop mounts. The rebuilt components (slice's) and the
// fill's output are written by sstable/slice and are not under the seam; an IndexPositions
// rebuild reads its keys back from the received Data.db through the Writable's file, or a
// file of its own when the Writable has none.
//
// The sender's read-ahead policy is one place, readahead.go: file sources are asked for
// (WillRead: POSIX_FADV_WILLNEED) up to two 4 MiB windows ahead of what is sent and never past
// a source's end, and the index slice a pass makes is read up to 3 x 1 MiB ahead on a
// goroutine of its own (readAhead).
//
// # Resume
//
// Fetch keeps ".sluice-fetch-<key>.json" in the target directory, key a hash of (peer,
// table, ranges): the sender IDs installed so far with their local TOC names, and the
// sstable being received as a partial record {sender ID, kept file, verified chunks,
// bytes, manifest hash}. It is rewritten atomically (temporary under fsx.TempPrefix,
// fsync, rename, directory fsync) before each batch's commit and at each checkpoint, and removed with
// the kept file when a session completes with nothing failed. All of it is resumeState's,
// resume.go. Fetch with Resume sends the
// installed entries whose TOC still exists as ResumeInstalled points, which the sender
// leaves out, and the partial one as a ResumePoint with its verified chunk count.
//
// Chunk level: the Data.db of the sstable being received gets a second name, a hard link
// ".sluice-part-<key>-<random>" beside the install's temporary, which survives the
// install's abort. A checkpoint fsyncs that file (beside the receive loop, which goes on),
// then records its verified prefix: the
// chunks whose CRC matched (compressed), or the whole chunks of the CRC grid that arrived
// (uncompressed; the grid is the manifest's chunk length, 64 KiB when it has none), and
// their byte length. Checkpoints happen every 64 MiB of received data and when the session
// fails while the sstable is in progress (cancel, peer gone, sender shut down); an
// sstable that fails on its own (checksum, no space) drops its prefix. The sender of a
// resumed sstable restarts its Data.db at the offset of the first unverified chunk, which
// both sides compute from the same manifest facts (CompressionInfo offsets, or the grid);
// the receiver, given a manifest whose hash matches the record, copies the kept prefix
// into the new install through the same Accept and write path as received frames, in one
// sequential read that re-verifies every compressed chunk and rebuilds the digest and
// CRC.db state, and receives the rest. A partial filled in place keeps the child as
// written instead, recorded at the fill's last clean point (a chunk written through,
// nothing held; slice.FillState: the runs' first keys and the re-encoded chunks' lengths
// with the counts and CRC32s of both sides): the resumed fill lays the runs out again from
// the keys, copies the kept child prefix proving every chunk's CRC and its digest, and
// takes up the received bytes after it. A prefix under another manifest, or one that fails
// its CRCs, fails that sstable (and is dropped; the next resume fetches it whole).
//
// Crash argument. (1) The kept file's bytes are fsynced before a record names them, and
// the record is replaced atomically, so a durable record never names bytes that are not
// durable; a torn prefix on a file system that lies is still caught by the replay's CRC
// checks (compressed). (2) A kept file exists before any record names it and is removed
// only after the record stops naming it (a later checkpoint, an install, a dropped
// sstable), so a crash anywhere leaves at most files the record does not name; the next
// Fetch of the same request removes exactly those (kept files and rows scratch
// directories carrying its key, other than the recorded one) before it creates any file,
// and never touches another request's files or anything under fsx.TempPrefix, which
// belongs to installs and is fsx.CleanLeftovers' to remove at start-up. (3) Installs are
// fsx.Install commits, crash-atomic on their own, also inside a batch's fsx.CommitAll; the
// record names a batch's sstables before the commit and loadState keeps only names whose
// TOC exists, so a crash before or during the shared sync re-fetches those sstables and
// one after it does not; nothing of a batch is visible before its files are durable. Two Fetches of
// the same request into one directory at once are not supported (they share the record).
//
// # Limits
//
// Server.SetThroughput sets node-wide token buckets (Limiter) for outbound bytes and, via
// Server.Inbound passed as Config.Inbound, for inbound bytes; 0 is unlimited, and a change
// wakes waiters at once. A bucket holds a quarter second of tokens (at least 64 KiB) and
// may go one request into debt, so over any window the bytes passed are at most rate ×
// window + burst + one request (tested on a fake clock). Config.MaxSessions bounds concurrent sessions (more are closed with
// code refused), MaxSessionsPerPeer those of one certificate. Receiver memory is the frame buffer (about one frame), the rebuild feed's
// pieces (at most 4 x 256 KiB), the bloom filter of the sstable in progress (sized from the
// Manifest's partition count, outside the Go heap), its parsed CompressionInfo (8 bytes per
// chunk; the Manifest's copy of a large one is dropped once parsed), the Partitions.db trie
// writer's few hundred nodes and waiting branches (BTI) and, BTI only, its rows slice,
// bounded by Config.MaxIndexSlice; Summary.db's samples and their sizes wait in unnamed
// files. The index slice is rebuilt as it arrives and never held (a BTI one from when the
// rows slice, sent first, is in). The control stream's buffer goes back to 64 KiB after a
// large Manifest. The sender holds no index slice: each is made while it is sent.
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
//
// The TCP data plane, sluice bench stream --size 2GiB --transport tcp --runs 3 (787 MiB of
// partial payload, sender and receiver processes on 127.0.0.1, page cache warm, medians):
// raw TCP (sendfile, splice into a file, fsync) 1657 MB/s; partial streaming over the TCP
// data plane 1143 MB/s, 0.69x raw TCP, receiver 0.75 CPU s/GiB (raw 0.42), against 306 MB/s
// and 2.8 CPU s/GiB for the same transfer over QUIC.
package stream
