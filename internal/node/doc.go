// Package node owns the sluice daemon's composition (`sluice run`): the YAML configuration,
// the data directories (created if missing, cleaned of interrupted installs at start), the
// catalog (internal/catalog) that holds a table's live sstables for a sender through hard-link
// snapshots, the admin HTTP API (internal/adminapi; the node is its Backend), the peer
// operations other members call over internal/peerrpc (peerapi.go), Prometheus metrics on a
// registry of its own, and the lifecycle that runs them with the stream server until the
// context is cancelled.
//
// The stream server enters through a constructor hook (Options.NewStreamServer) and the small
// StreamServer interface, so node depends only on stream's status types, never on its engine.
// The stream layer feeds the collectors in Metrics, which the hook receives in StreamConfig.
//
// Run serves a group of services until the context is cancelled or one of them fails
// (services.go): the admin server, the stream server, the operations, and, as configured,
// membership and the Cassandra ring refresher.
//
// With gossip_addr configured the node is a cluster member (cluster.go): it joins through
// membership/gossip, announces its addresses, DC, rack, ring state and tokens (explicit,
// random by name for the first nodes, or allocated against the ring for a bootstrap), records
// them in <first data dir>/.sluice-membership.json across restarts, and fails its sessions
// with a peer as soon as gossip declares the peer dead. The cluster operations (bootstrap,
// decommission, move, rebuild, replace, cleanup, repair, import) are internal/ops'; the node
// checks their requests (operations.go) and runs them over sluice's own ring (ownring.go, an
// ops.OwnRing) and the network (peers.go: netPeers, peer calls to proven members only); a
// member counts only once it proved its identity (verifyMember). The sidecar's rebuild runs
// the same rebuild over Cassandra's ring (cassandra_ring.go), importing what it fetched
// (cassandra_rebuild.go). Operations run one at a time and report through GET /v1/ops; their
// fetch sessions appear in GET /v1/streams.
//
// node must not import cmd/sluice or testcluster.
package node
