// Package ops owns sluice's cluster operations: bootstrap, decommission and move of sluice's
// own ring, rebuild and replace, cleanup with its confirmation by the owners, repair, and
// import; the tracker that runs them one at a time and reports them (GET /v1/ops); the journal
// that lets a retried operation skip the transfers it completed; and the execution of a stream
// plan (pairs of members, each streaming every table of a keyspace, a few pairs at a time).
//
// The operations do not know which ring they run on. They are driven by a small Ring
// interface (the ring and its keyspaces' strategies, this node's name on it, the members that
// cannot be sources, the sluice member that serves a ring member's data) and reach the other
// members through Peers. Two rings implement it, both in internal/node: sluice's own gossip
// ring (which also implements OwnRing, what bootstrap, decommission, move, replace, cleanup
// and repair change or check), and a live Cassandra cluster's ring, where the sidecars are
// found over gossip by host id and an Installer (fetch into staging, then nodetool import)
// lands what a rebuild fetches. Local is this node's data: its catalog, and the locks that
// order what rewrites a table directory against what installs into it.
//
// ops must not import internal/node.
package ops
