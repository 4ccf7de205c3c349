package slice

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/token"
)

// A Partitions.db built a batch behind is byte for byte the one built in line, across batch
// edges; a key out of order fails the build, by the flush at the latest.
func TestTrieFeedBuildsTheSameTrie(t *testing.T) {
	p := token.Murmur3
	keys := make([][]byte, 3*trieBatchLen+17)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%07d", i)
		if i%500 == 7 {
			keys[i] = append(keys[i], bytes.Repeat([]byte{'x'}, 60000)...) // a long key: batches cut by bytes too
		}
	}
	slices.SortFunc(keys, func(a, b []byte) int { return token.CompareKeys(p.Token(a), a, p.Token(b), b) })
	var inline, behind bytes.Buffer
	direct := bti.NewPartitionIndexBuilder(&inline)
	feed := newTrieFeed(bti.NewPartitionIndexBuilder(&behind))
	for i, k := range keys {
		tok := p.Token(k)
		if err := direct.Add(bti.AppendDecoratedKey(nil, tok, k), byte(i), ^int64(i*100)); err != nil {
			t.Fatal(err)
		}
		if err := feed.add(tok, k, byte(i), ^int64(i*100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := feed.flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Finish(keys[0], keys[len(keys)-1]); err != nil {
		t.Fatal(err)
	}
	if _, err := feed.pib.Finish(keys[0], keys[len(keys)-1]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(inline.Bytes(), behind.Bytes()) {
		t.Fatalf("Partitions.db differs: %d bytes in line, %d a batch behind", inline.Len(), behind.Len())
	}

	feed = newTrieFeed(bti.NewPartitionIndexBuilder(&bytes.Buffer{}))
	var err error
	for i := 0; i < 2*trieBatchLen && err == nil; i++ {
		k := keys[i]
		if i == 10 {
			k = keys[5] // out of order
		}
		err = feed.add(p.Token(k), k, 0, ^int64(i))
	}
	if err == nil {
		err = feed.flush()
	}
	if !errors.Is(err, bti.ErrUnsorted) {
		t.Fatalf("out of order: %v, want ErrUnsorted", err)
	}
}
