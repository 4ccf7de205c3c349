package bigindex

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

const benchEntries = 1_000_000

// benchIndex is an in-memory Index.db of benchEntries entries with 8..16-byte keys and no
// promoted indexes, and the keys' Index.db offsets.
func benchIndex() ([]byte, [][]byte, []int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b []byte
	keys := make([][]byte, benchEntries)
	offsets := make([]int64, benchEntries)
	var pos int64
	for i := range benchEntries {
		key := make([]byte, 8+rng.IntN(9))
		binary.BigEndian.PutUint64(key, rng.Uint64())
		keys[i], offsets[i] = key, int64(len(b))
		b = AppendEntry(b, key, pos, nil)
		pos += 40 + int64(rng.IntN(200))
	}
	return b, keys, offsets
}

// BenchmarkIndexPass is the speed target: one op is a pass over a 1,000,000-entry Index.db
// that decodes each entry and computes its Murmur3 token.
func BenchmarkIndexPass(b *testing.B) {
	raw, _, _ := benchIndex()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	var it Iterator
	var sink int64
	for b.Loop() {
		it.Reset(raw, 0)
		n := 0
		for it.Next() {
			e := it.Entry()
			sink += token.Murmur3.Token(e.Key).Long ^ e.Position
			n++
		}
		if it.Err() != nil || n != benchEntries {
			b.Fatalf("%d entries, err %v", n, it.Err())
		}
	}
	perEntry := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / benchEntries
	b.ReportMetric(perEntry, "ns/entry")
	b.ReportMetric(1e9/perEntry/1e6, "Mentries/s")
	_ = sink
}

// BenchmarkSummaryBuilder: one op adds benchEntries keys and encodes the summary.
func BenchmarkSummaryBuilder(b *testing.B) {
	_, keys, offsets := benchIndex()
	b.ReportAllocs()
	for b.Loop() {
		sb := NewSummaryBuilder(DefaultMinIndexInterval)
		for i, k := range keys {
			sb.Add(k, offsets[i])
		}
		if err := sb.Encode(io.Discard, keys[0], keys[len(keys)-1]); err != nil || len(sb.sizes) != (benchEntries+127)/128 {
			b.Fatalf("%d samples: %v", len(sb.sizes), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchEntries, "ns/entry")
}
