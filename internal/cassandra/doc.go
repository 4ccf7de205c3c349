// Package cassandra is sluice's side of a live Apache Cassandra node when sluice runs as its
// sidecar (the cassandra: section of sluice.yaml): the section's configuration (Config), the
// ring as Cassandra itself describes it over CQL (Reader: system.local, system.peers_v2,
// system_schema.keyspaces and system_schema.tables; Snapshot), the conversion of that ring and
// of the keyspaces' replication to membership/ring's Ring and Strategy so that the planning
// code sluice already has can use them, and the Importer that hands verified sstables to the
// node from a staging directory on the data directories' file system, then confirms on disk
// that the node took every one of them. The hand-over is Cassandra's importNewSSTables, called
// by the persistent JMX client (JMX, jmx.go, java/SluiceJMX.java: one small JVM per sidecar,
// flags SidecarImportFlags, which skip only the digest re-read sluice's strict verification
// made and keep the token check) or, without cassandra.jmx_address, by `nodetool import`.
//
// The sidecar never writes into a live table directory: sstables reach the node only through
// nodetool import, which moves them in itself. Reading the node's sstables (holds, hard-link
// snapshots under each table's snapshots/ directory) is internal/catalog's job.
//
// The pure parts (replication maps, ring conversion, token parsing, nodetool's output) do no
// I/O. Reader is the only code that talks to Cassandra's native protocol (through
// github.com/gocql/gocql); Importer runs the configured nodetool argv or the JMX client and
// touches only the staging directory, the source directory it is given and (reading) the data
// directories.
//
// cassandra must not import internal/node or cmd/sluice: the daemon composes it, not the
// other way round.
package cassandra
