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
package peerrpc
