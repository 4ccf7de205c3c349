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
// With gossip_addr configured the node is a cluster member (cluster.go): it joins through
// membership/gossip, announces its addresses, DC, rack, ring state and tokens (explicit,
// random by name for the first nodes, or allocated against the ring for a bootstrap), records
// them in <first data dir>/.sluice-membership.json across restarts, and fails its sessions
// with a peer as soon as gossip declares the peer dead. Topology operations (ops.go:
// bootstrap, decommission, move) compute a membership/ring stream plan per configured
// keyspace and run it against the peers interface (peers.go): stream.Fetch directly when this
// node gains ranges, the gaining node's peer operation "fetch" (naming the source) otherwise;
// a member counts only once it proved its identity (verifyMember); cleanup and import (cleanup.go) rewrite table
// directories with sstable/slice and fsx installs. Operations run one at a time and report
// through GET /v1/ops; their fetch sessions appear in GET /v1/streams.
//
// node must not import cmd/sluice or testcluster.
package node
