// Package peerrpc carries the operations nodes ask of each other — a member's load and
// tables, fetch requests of a cluster operation, repair trees — over QUIC with mutual TLS
// against the cluster CA, on the stream server's own socket under the ALPN name ALPN. The
// admin HTTP API is for the local operator only; nothing between nodes uses it.
//
// One call is one bidirectional QUIC stream: the caller writes a request frame and closes its
// side, the server answers with one response frame. A frame is a 4-byte big-endian length and
// that many bytes of JSON:
//
//	request:  {"method": "fetch", "body": {...}}        at most MaxRequest bytes
//	response: {"error": "...", "code": "...", "body": {...}}  at most MaxResponse bytes
//
// The caller names the node it means to reach and the handshake proves it: the server's
// certificate must chain to the cluster CA, carry that name and the node role. The server
// learns the caller's name and role the same way, and only node certificates get here (the
// stream server refuses other roles before handing the connection over).
//
// # Bounds
//
// Every call is held to one table, Limits (DefaultMethods and the default budgets), before its
// handler sees it; the handler only routes. A client obeys the same table: it sends no body
// beyond its method's MaxBody, reads no answer beyond its MaxAnswer, and sluice's repair cuts
// its requests by the same constants (internal/node treeBatches), so it never meets them.
//
//	method          MaxBody  MaxAnswer  other bounds (checked before dispatch)              heavy  who may call
//	identity        1 KiB    4 KiB      -                                                   no     any node certificate of the CA
//	load            1 KiB    4 KiB      -                                                   no     any node certificate of the CA
//	tables          1 KiB    4 MiB      keyspace a CQL name (handler)                       no     any node certificate of the CA
//	ring            1 KiB    16 MiB     -                                                   no     any node certificate of the CA
//	fetch           64 KiB   8 MiB      4 x maxParallelTransfers run at once, more wait     no     a proven member of the callee's ring
//	                                    (node's maxPeerFetches)
//	repair_tree     64 KiB   12 MiB     MaxCallRanges 1024 ranges, normalized (sorted,      yes    any node certificate of the CA
//	                                    disjoint: N copies of one range are refused);
//	                                    depth <= MaxTreeDepth 15; MaxTreeLeaves 2^19 leaves
//	                                    (sum over ranges of 2^depth); answer predicted as
//	                                    n x repair.TreeWireSize(depth) (<= 11.3 MB); work
//	                                    TreeWorkPerLeaf 48 B a leaf + 1 KiB a tree (<= 25 MiB)
//	repair_digests  64 KiB   12 MiB     MaxCallRanges 1024 ranges, normalized; a page       yes    any node certificate of the CA
//	                                    of at most repair.MaxDigestsPerPage digests and
//	                                    repair.MaxDigestBytes (4 MiB) but its last token;
//	                                    answer predicted as the base64 of
//	                                    repair.DigestPageSize(limit) (<= 8.4 MB); work the
//	                                    digests (160 B each), twice the page and the answer
//	                                    (<= 30 MiB)
//	cassandra_load  64 KiB   8 MiB      shares fetch's slots (maxPeerFetches); a sidecar    no     a proven member of the callee's ring
//	                                    only; the caller is the source, the load id names
//	                                    what its stream server serves (StreamRequest.Source)
//
// Checks run in this order, each refusal an *Error naming the bound: the frame's length prefix
// against MaxRequest (before anything is allocated); the envelope; the method in the table
// (CodeUnknown); the body against MaxBody, then the method's Check (CodeBadRequest); the
// predicted answer against MaxAnswer, and a heavy call's predicted work against the whole
// budget (CodeBadRequest). A heavy call then takes one of its caller's HeavyPerPeer slots
// (default 2 per certificate name) and reserves its work from the node-wide MemoryBudget
// (default 256 MiB: ten tree calls at their bounds) until its answer is written; when either
// is exhausted the call is refused at once with CodeBusy. An answer that turns out larger than
// its MaxAnswer is replaced by a CodeFailed error. Every refusal is logged and reported to the
// server's OnRefuse function with a Reason (the node counts them in
// sluice_peer_calls_refused_total).
//
// Busy calls are refused, not queued: a queued call holds its stream, goroutine and request
// while it waits, so the queue would need a bound of its own, and a hostile caller would fill
// it first. A refusal costs the server nothing, and the caller retries: sluice's repair asks
// again after a pause growing from 100 ms to 5 s, for up to 10 minutes (internal/node
// callHeavy). A repair runs one heavy call at a time, so the per-peer bound never slows it;
// the memory budget only makes concurrent repairs against one node take turns.
//
// Beside the table: MaxConnsPerPeer (32) connections per caller, RequestTimeout (10 s) to
// read a request, WriteTimeout (30 s) to write an answer, and error messages of at most 1 KiB.
//
// The package sizes trees and digest pages with internal/repair and parses ranges with
// sstable/token; it must not import internal/node or the stream packages.
package peerrpc
