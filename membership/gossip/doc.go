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
// The encodings of metadata, push/pull state and broadcasts (meta.go, wire.go) and the
// token-set bookkeeping (tokens.go) are pure code; gossip.go and delegate.go are the thin
// shell around memberlist. memberlist's callbacks never block on this package: events reach
// the Events channel through an internal queue (see eventQueue) and metadata re-announcements
// go through a goroutine of their own.
//
// It imports membership/ring and sstable/token; it must not import the stream packages or any
// other sstable package.
package gossip
