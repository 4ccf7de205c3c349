// Package interop has Apache Cassandra itself judge what sluice writes.
//
// Cassandra (cassandra-all from Maven Central, see pom.xml and cassandra.sh) runs offline in a
// small Java harness (harness/): it reads every partition of an sstable with Cassandra's own
// scanner and prints one canonical digest per partition, deserializes every metadata
// component, and runs Cassandra's verifier as `sstableverify` and `sstableverify -e` do. It
// also writes fixtures with CQLSSTableWriter and merges sstables with Cassandra's own
// reconciliation. The Go tests in this directory drive sluice and the harness and compare
// Cassandra's view of sluice's output with Cassandra's view of the input.
//
// The tests run only with SLUICE_INTEROP=1 (`make interop` sets it; it needs Java 17 and
// Maven); under `make test` they skip. The package has no code of its own beyond this file.
package interop
