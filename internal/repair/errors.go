package repair

import "errors"

// ErrBadTree reports a tree argument that cannot be used: a depth out of bounds, a range of
// another partitioner, a malformed encoding, or two trees of different shapes given to Diff.
var ErrBadTree = errors.New("repair: bad tree")

// ErrOrder reports partitions added to a Builder out of token order or outside its range.
var ErrOrder = errors.New("repair: partitions out of order")

// ErrUnsupportedClustering reports a clustering type whose order the comparator does not
// know; the partitions of such a table cannot be merged across sstables.
var ErrUnsupportedClustering = errors.New("repair: unsupported clustering type")

// ErrMismatch reports sstables of one table that cannot be reconciled together: different
// clustering types, or one partition key read back differently.
var ErrMismatch = errors.New("repair: sstables disagree")

// ErrCounter reports two different counter cells for one cell: merging counter contexts is not
// implemented.
var ErrCounter = errors.New("repair: counter cells cannot be reconciled")
