// Package node owns the sluice daemon's composition (`sluice run`): the YAML configuration,
// the data directories (created if missing, cleaned of interrupted installs at start), the
// Catalog that holds a table's live sstables for a sender through hard-link snapshots, the
// admin HTTP API (status, sessions, throughput, Prometheus metrics on a registry of its own)
// and the lifecycle that runs them with the stream server until the context is cancelled.
//
// The stream server enters through a constructor hook (Options.NewStreamServer) and the small
// StreamServer interface, so node depends only on stream's status types, never on its engine.
// The stream layer feeds the collectors in Metrics, which the hook receives in StreamConfig.
//
// node must not import cmd/sluice, testcluster or membership.
package node
