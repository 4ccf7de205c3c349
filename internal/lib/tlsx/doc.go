// Package tlsx owns sluice's node identities: a cluster certificate authority, one certificate
// per node signed by it, and the mutual-TLS configurations QUIC connections between nodes use.
//
// A cluster directory holds ca.crt and ca.key (ECDSA P-256, self-signed, valid 10 years) and,
// per node, NAME.crt and NAME.key (ECDSA P-256, CommonName NAME, DNS SAN NAME plus the hosts it
// was issued for, usable for both server and client authentication). Private keys are PKCS#8
// PEM files with mode 0600. WriteCA and WriteNode create them; every file is written to a
// temporary name, synced and then linked (or, with force, renamed) into place, so a crash never
// leaves a half-written certificate or key under its final name and an existing one is never
// replaced by accident.
//
// Load reads a node's identity and checks it before any socket is opened: the files exist and
// hold PEM of the right kind, the key matches the certificate, the certificate is signed by the
// cluster CA, names the node and is within its validity period. Errors are *FileError values
// naming the file, wrapping a sentinel from errors.go.
//
// ServerConfig and ClientConfig return TLS 1.3 configurations that negotiate ALPN wire.ALPN and
// require a certificate chaining to the cluster CA on both sides, so a peer without a valid
// certificate fails the handshake and never sees or delivers a byte of application data.
// PeerName returns the verified peer's node name from a completed handshake.
//
// The package does no network I/O and imports only the standard library and package wire (for
// the ALPN constant); it must not import QUIC, membership or sstable code.
package tlsx
