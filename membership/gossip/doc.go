// Package gossip owns cluster membership for a sluice node: it runs a hashicorp/memberlist
// instance (SWIM failure detection, encrypted with a cluster key, fenced by a cluster label),
// announces the node's metadata (stream and admin addresses, DC, rack, ring state, token-set
// version) and its token set, collects the same from every peer, reports membership changes as
// events, and builds a ring.Ring from what it has heard.
//
// Metadata rides in memberlist's node metadata, which is limited to 512 bytes and carried on
// every alive message. Token sets (256 vnodes are 2 KiB) do not fit there: they travel in
// memberlist's TCP push/pull state exchange, which repairs everything periodically, and as
// chunked UDP broadcasts when a node changes its tokens, which spread them quickly. Both carry
// a per-node version; the newest version wins.
//
// Everything a node says about itself (metadata, each token chunk, a leave intent) is a claim
// (package claim): signed with the key of the node's certificate when Config.Verify is set, and
// applied by receivers only once it verifies under the key the member proved at its stream
// address (claims.go). A holder of the gossip key alone can relay claims but make none; a
// claim's version (the signer's wall clock in nanoseconds) may not run ahead of the receiver's
// clock by more than maxClockSkew, so no version can wrap. Forged alive messages are stopped
// before memberlist applies them (NotifyAlive), so they change no address either.
//
// The encodings of metadata, push/pull state and broadcasts (meta.go, wire.go, claim/), the
// claim checks (claims.go) and the token-set bookkeeping (tokens.go) are pure code; gossip.go and delegate.go are the thin
// shell around memberlist. memberlist's callbacks never block on this package: events reach
// the Events channel through an internal queue (see eventQueue) and metadata re-announcements
// go through a goroutine of their own.
//
// It imports membership/ring and sstable/token; it must not import the stream packages or any
// other sstable package.
package gossip
