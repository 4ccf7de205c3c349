// Package testcluster starts sluice clusters on loopback for tests, drills and demos: N nodes
// in-process or as separate processes, each with its own data directory, ports, certificate
// from one test CA and the cluster key, seeded with generated sstables placed on exactly
// their replicas, with faults (kill -9 and restart, datagram loss, partition and heal, a full
// disk) and an invariant check of where every partition lives.
//
// It drives nodes only through internal/node's exported API and admin HTTP endpoints, and
// reads their data directories from disk for the check. Waits poll predicates with deadlines;
// nothing sleeps for a fixed time to let something happen.
//
// testcluster must not be imported by internal/node, stream, membership or sstable.
package testcluster
