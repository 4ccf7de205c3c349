package sstable

import (
	"testing"

	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// filledHead accepts only empty partitions in key order before the first partition.
func TestFilledHead(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	tb, err := schema.Compile(&schema.Header{KeyType: "org.apache.cassandra.db.marshal.BytesType",
		RegularColumns: []schema.Column{{Name: []byte("v"), Type: "org.apache.cassandra.db.marshal.BytesType"}}})
	if err != nil {
		t.Fatal(err)
	}
	p := token.Murmur3
	var keys [][]byte
	for i := 0; len(keys) < 3; i++ {
		k := []byte{byte(i), 'k'}
		if p.Token(k).Long < 0 {
			keys = append(keys, k)
		}
	}
	sortKeys := func(ks [][]byte) {
		for i := range ks {
			for j := i + 1; j < len(ks); j++ {
				if token.CompareKeys(p.Token(ks[j]), ks[j], p.Token(ks[i]), ks[i]) < 0 {
					ks[i], ks[j] = ks[j], ks[i]
				}
			}
		}
	}
	sortKeys(keys)
	encode := func(ks [][]byte, deletion rows.DeletionTime) []byte {
		w := rows.NewWriter(tb, v)
		var b []byte
		for _, k := range ks {
			b, _ = w.BeginPartition(b, k, deletion)
			b, _ = w.EndPartition(b)
		}
		return b
	}
	first := token.Token{Kind: token.KindMurmur3, Long: 0}
	firstKey := []byte("first")
	if !filledHead(encode(keys, rows.Live), tb, v, p, first, firstKey) {
		t.Fatal("empty partitions in key order before the first partition: not accepted")
	}
	cases := map[string][]byte{
		"out of order":          encode([][]byte{keys[1], keys[0]}, rows.Live),
		"a partition deletion":  encode(keys[:1], rows.DeletionTime{MarkedForDeleteAt: 5, LocalDeletionTime: 5}),
		"bytes of no partition": {0x00, 0x05, 'a', 'b'},
		"a partial partition":   encode(keys, rows.Live)[3:],
	}
	for name, b := range cases {
		if filledHead(b, tb, v, p, first, firstKey) {
			t.Errorf("%s: accepted as a filled head", name)
		}
	}
	// A key at or after the first partition's.
	if filledHead(encode(keys, rows.Live), tb, v, p, p.Token(keys[1]), keys[1]) {
		t.Error("filler keys not all before the first partition: accepted")
	}
}
