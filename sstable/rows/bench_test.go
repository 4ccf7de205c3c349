package rows

import (
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable/schema"
)

// stressHeader is the project's stress-like table: text partition key, text clustering key,
// one blob regular column "value".
func stressHeader() *schema.Header {
	return &schema.Header{
		MinTimestamp:         1_700_000_000_000_000,
		MinLocalDeletionTime: 1442880000,
		KeyType:              m + "UTF8Type",
		ClusteringTypes:      []string{m + "UTF8Type"},
		RegularColumns:       []schema.Column{{Name: []byte("value"), Type: m + "BytesType"}},
	}
}

func generatedPartition(b testing.TB, tb *schema.Table, rows, size int) []byte {
	w := NewWriter(tb, vOA)
	buf, err := w.BeginPartition(nil, []byte("partition-key-0001"), Live)
	if err != nil {
		b.Fatal(err)
	}
	var s SimpleRow
	value := []byte(strings.Repeat("v", size))
	ck := []byte("clustering-0000")
	for i := 0; i < rows; i++ {
		ck[len(ck)-1] = byte('a' + i)
		if buf, err = w.AppendRow(buf, s.Set(ck, 0, 1_700_000_000_000_000+int64(i), value)); err != nil {
			b.Fatal(err)
		}
	}
	buf, err = w.EndPartition(buf)
	if err != nil {
		b.Fatal(err)
	}
	return buf
}

func benchmarkCursor(b *testing.B, tb *schema.Table, fx *fixture, parts [][]byte) {
	var c Cursor
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range parts {
			v := vOA
			if fx != nil {
				v = fx.v
			}
			if err := c.Reset(tb, v, p); err != nil {
				b.Fatal(err)
			}
			for c.Next() {
			}
			if c.Err() != nil || !c.Done() {
				b.Fatal(c.Err())
			}
		}
	}
}

func BenchmarkCursor(b *testing.B) {
	b.Run("generated-16x4KiB", func(b *testing.B) {
		tb := compile(b, stressHeader())
		benchmarkCursor(b, tb, nil, [][]byte{generatedPartition(b, tb, 16, 4096)})
	})
	for _, fx := range loadAll(b) {
		if !strings.Contains(fx.Name, "_clust/") {
			continue
		}
		var parts [][]byte
		for i := range fx.partitions {
			parts = append(parts, fx.partition(i))
		}
		b.Run(fx.Version+"-clust", func(b *testing.B) { benchmarkCursor(b, fx.table, fx, parts) })
	}
}

func BenchmarkWriteRow(b *testing.B) {
	tb := compile(b, stressHeader())
	w := NewWriter(tb, vOA)
	value := make([]byte, 4096)
	ck := []byte("clustering-0001")
	var s SimpleRow
	buf := make([]byte, 0, 1<<20)
	buf, _ = w.BeginPartition(buf, []byte("pk"), Live)
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(buf) > 1<<20-8192 {
			buf = buf[:0] // the caller flushed; the writer only tracks sizes
		}
		var err error
		if buf, err = w.AppendRow(buf, s.Set(ck, 0, 1_700_000_000_000_000+int64(i), value)); err != nil {
			b.Fatal(err)
		}
	}
}
