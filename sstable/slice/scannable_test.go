package slice

import (
	"errors"
	"testing"

	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// A head filler is exactly the size asked for, parses as empty partitions in strictly
// increasing key order, and every key sorts before the child's first partition: for legacy
// and oa deletion encodings, tables with and without statics, heads from the smallest
// possible to several 64 KiB keys' worth.
func TestHeadFillerIsEmptyPartitionsBeforeTheFirstKey(t *testing.T) {
	first := []byte("first-partition")
	firstTok := token.Murmur3.Token(first)
	for _, vs := range []string{"nb", "oa", "da"} {
		v, err := version.ParseWritable(vs)
		if err != nil {
			t.Fatal(err)
		}
		for _, static := range []bool{false, true} {
			h := &schema.Header{KeyType: "org.apache.cassandra.db.marshal.BytesType",
				RegularColumns: []schema.Column{{Name: []byte("v"), Type: "org.apache.cassandra.db.marshal.BytesType"}}}
			if static {
				h.StaticColumns = []schema.Column{{Name: []byte("s"), Type: "org.apache.cassandra.db.marshal.Int32Type"}}
			}
			tb, err := schema.Compile(h)
			if err != nil {
				t.Fatal(err)
			}
			smallest, _ := emptyPartition(rows.NewWriter(tb, v), nil, nil)
			for _, size := range []int{len(smallest), len(smallest) + 1, len(smallest) + 20, 4093, 16384, 65535 + len(smallest), 65536 + len(smallest), 200000} {
				b, err := headFiller(tb, v, token.Murmur3, size, firstTok, first)
				if err != nil {
					t.Fatalf("%s static=%v size %d: %v", vs, static, size, err)
				}
				if len(b) != size {
					t.Fatalf("%s static=%v: %d bytes for a %d-byte head", vs, static, len(b), size)
				}
				var cur rows.Cursor
				var prevTok token.Token
				var prevKey []byte
				for off := 0; off < len(b); off += cur.End() {
					if err := cur.ResetTrailing(tb, v, b[off:]); err != nil {
						t.Fatalf("%s static=%v size %d: filler at %d: %v", vs, static, size, off, err)
					}
					if cur.Next() || cur.Err() != nil || !cur.Done() || !cur.Deletion().IsLive() {
						t.Fatalf("%s static=%v size %d: filler at %d is not an empty partition (%v)", vs, static, size, off, cur.Err())
					}
					key := cur.Key()
					tok := token.Murmur3.Token(key)
					if token.CompareKeys(tok, key, firstTok, first) >= 0 {
						t.Fatalf("filler key %x (token %s) does not sort before the first partition", key, tok)
					}
					if prevKey != nil && token.CompareKeys(prevTok, prevKey, tok, key) >= 0 {
						t.Fatalf("filler keys out of order: %x after %x", key, prevKey)
					}
					prevTok, prevKey = tok, append([]byte(nil), key...)
				}
			}
			if _, err := headFiller(tb, v, token.Murmur3, len(smallest)-1, firstTok, first); !errors.Is(err, errHeadTooSmall) {
				t.Fatalf("%s: a head one byte short of an empty partition: %v", vs, err)
			}
		}
	}
}
