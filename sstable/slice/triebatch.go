package slice

import (
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/token"
)

// trieBatchLen and trieBatchBytes bound what a trieFeed hands its trie at once, partitions
// and bytes of their forms: enough that a goroutine per batch costs nothing next to the batch
// (~100 µs of trie work), little enough that two batches stay in cache, and long keys (up to
// 64 KiB each) do not make a batch large.
const (
	trieBatchLen   = 1024
	trieBatchBytes = 256 << 10
)

// trieFeed builds a BTI child's Partitions.db (bti.PartitionIndexBuilder) a batch behind the
// partitions added: a batch is filled while the one before goes into the trie on a goroutine
// of its own. The trie writer is a third of a small-partition rebuild's per-partition work,
// which is the receiver's critical path; the rest (filter, statistics, order and range
// checks) stays where it is.
//
// Each batch's goroutine ends with the batch, so an abandoned builder leaves nothing running
// for longer than one batch; the trie is only ever used by one goroutine at a time (the
// batch's, then, after its done, the next).
type trieFeed struct {
	pib   *bti.PartitionIndexBuilder
	fill  *trieBatch // the batch being filled
	spare *trieBatch
	in    *trieBatch // the batch in the trie, or nil
	err   error      // the trie's first error
}

// trieBatch is a run of partitions for the trie: their ByteComparable forms back to back.
type trieBatch struct {
	forms  []byte
	ends   []int32
	hashes []byte
	pos    []int64
	done   chan struct{}
	err    error
}

func newTrieFeed(pib *bti.PartitionIndexBuilder) *trieFeed {
	return &trieFeed{pib: pib, fill: &trieBatch{}, spare: &trieBatch{}}
}

// add queues one partition: its token and key, the low byte of its filter hash, and its trie
// payload (a Rows.db position, or ^data position).
func (t *trieFeed) add(tok token.Token, key []byte, hashByte byte, position int64) error {
	b := t.fill
	b.forms = bti.AppendDecoratedKey(b.forms, tok, key)
	b.ends = append(b.ends, int32(len(b.forms)))
	b.hashes = append(b.hashes, hashByte)
	b.pos = append(b.pos, position)
	if len(b.ends) < trieBatchLen && len(b.forms) < trieBatchBytes {
		return t.err
	}
	return t.hand(false)
}

// hand waits for the batch in the trie and hands it the filled one: on a goroutine, or here
// when wait.
func (t *trieFeed) hand(wait bool) error {
	if t.in != nil {
		<-t.in.done
		if t.err == nil {
			t.err = t.in.err
		}
		t.spare, t.in = t.in, nil
	}
	b := t.fill
	if t.err != nil || len(b.ends) == 0 {
		return t.err
	}
	t.fill, t.spare = t.spare, nil
	t.fill.reset()
	if wait {
		b.into(t.pib)
		t.err = b.err
		t.spare = b
		return t.err
	}
	b.done = make(chan struct{})
	t.in = b
	go func() {
		b.into(t.pib)
		close(b.done)
	}()
	return nil
}

// flush puts every partition added into the trie and returns its first error.
func (t *trieFeed) flush() error { return t.hand(true) }

func (b *trieBatch) into(pib *bti.PartitionIndexBuilder) {
	start := int32(0)
	for i, end := range b.ends {
		if b.err = pib.Add(b.forms[start:end], b.hashes[i], b.pos[i]); b.err != nil {
			return
		}
		start = end
	}
}

func (b *trieBatch) reset() {
	b.forms, b.ends, b.hashes, b.pos, b.err = b.forms[:0], b.ends[:0], b.hashes[:0], b.pos[:0], nil
}
