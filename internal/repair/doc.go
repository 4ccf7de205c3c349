// Package repair compares the replicas of a table with Merkle trees over the logical content of
// their partitions, as Cassandra's anti-entropy repair does.
//
// A Tree covers one token range with a fixed-depth binary tree: the range is cut into 2^depth
// leaves of equal token width, and each leaf holds a hash of the partitions whose tokens fall in
// it, in token order. A partition's hash covers its reconciled content, not its bytes on disk:
// the node's sstables that hold the key are merged (partition deletion, rows by clustering with
// a type-aware comparator, cells last-write-wins, row, complex, range and partition deletions
// shadowing older data), so two replicas holding the same data in different sstable layouts hash
// equal. Diff turns two trees of the same range into the token ranges whose leaves differ.
//
// The tree, diff and reconciliation code is pure; Build is the I/O shell that merges a table's
// sstables in token order and reads each partition's bytes once. The package does no networking
// and must not import the node or stream packages.
package repair
