package bti

import (
	"fmt"
	"io"
	"math"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// PartitionIndexBuilder writes Partitions.db as Cassandra's PartitionIndexBuilder does.
// Each partition is stored under the shortest prefix of its ByteComparable form that tells
// it apart from both neighbours, so an entry is only written once the next key is known.
// Memory is bounded like Cassandra's: the path of the last key and the branches below it
// that do not yet fill a page. Output goes to w in pieces of about 64 KiB; Finish flushes.
// A builder is not safe for concurrent use.
type PartitionIndexBuilder struct {
	out           pagedOutput
	trie          *trieWriter
	last          []byte // ByteComparable of the pending (last added) key
	lastPayload   payload
	lastDiffPoint int
	pending       bool
	finished      bool
}

// NewPartitionIndexBuilder returns a builder writing to w.
func NewPartitionIndexBuilder(w io.Writer) *PartitionIndexBuilder {
	b := &PartitionIndexBuilder{out: pagedOutput{w: w}}
	b.trie = newTrieWriter(&b.out, partitionPayloads)
	return b
}

// Add records the next partition (PartitionIndexBuilder.addEntry): comparable is its key's
// ByteComparable form (AppendDecoratedKey), strictly greater than the previous one;
// hashByte the low byte of Murmur3 h1 of the key; position a Rows.db entry position (>= 0)
// or ^dataPosition for a partition without a row index. comparable is copied.
func (b *PartitionIndexBuilder) Add(comparable []byte, hashByte byte, position int64) error {
	if b.finished {
		return fmt.Errorf("%w: Add after Finish", ErrInvalid)
	}
	if position == math.MinInt64 {
		return fmt.Errorf("%w: position %d is PartitionIndex.NOT_FOUND", ErrInvalid, position)
	}
	if b.pending {
		l := commonPrefix(b.last, comparable)
		if l == len(comparable) || (l < len(b.last) && b.last[l] > comparable[l]) {
			return fmt.Errorf("%w: key %x after %x", ErrUnsorted, comparable, b.last)
		}
		diffPoint := l + 1 // ByteComparable.diffPoint
		cut := min(max(diffPoint, b.lastDiffPoint), len(b.last))
		if err := b.trie.add(b.last[:cut], b.lastPayload); err != nil {
			return err
		}
		b.lastDiffPoint = diffPoint
	}
	b.last = append(b.last[:0], comparable...)
	b.lastPayload = payload{set: true, pos: position, hash: hashByte}
	b.pending = true
	return nil
}

// Count is the number of partitions added so far.
func (b *PartitionIndexBuilder) Count() int64 {
	if b.pending {
		return b.trie.count + 1
	}
	return b.trie.count
}

// Finish writes the last entry, the rest of the trie, the first and last raw partition keys
// and the footer (PartitionIndexBuilder.complete), flushes, and returns the file size.
// firstKey and lastKey are nil for an empty index.
func (b *PartitionIndexBuilder) Finish(firstKey, lastKey []byte) (int64, error) {
	if b.finished {
		return 0, fmt.Errorf("%w: Finish called twice", ErrInvalid)
	}
	b.finished = true
	if len(firstKey) > math.MaxUint16 || len(lastKey) > math.MaxUint16 {
		return 0, fmt.Errorf("%w: partition key longer than 65535 bytes", ErrTooLarge)
	}
	if b.pending {
		if err := b.trie.add(b.last[:min(b.lastDiffPoint, len(b.last))], b.lastPayload); err != nil {
			return 0, err
		}
		b.pending = false
	}
	root, err := b.trie.finish()
	if err != nil {
		return 0, err
	}
	firstKeyPos := b.out.position()
	o := &b.out
	o.buf = encoding.AppendShortBytes(o.buf, firstKey)
	o.buf = encoding.AppendShortBytes(o.buf, lastKey)
	o.buf = encoding.AppendI64(o.buf, firstKeyPos)
	o.buf = encoding.AppendI64(o.buf, b.trie.count)
	o.buf = encoding.AppendI64(o.buf, root)
	size := o.position()
	return size, o.flush()
}
