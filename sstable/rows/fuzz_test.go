package rows

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// fuzzTable is a header a fuzzed partition is decoded against.
type fuzzTable struct {
	tb   *schema.Table
	v    version.Version
	rich bool // richHeader: seeded with richPartitions
}

// fuzzTables returns the tables FuzzCursor picks from with its first byte: fixture headers
// (clustering, static-only compact, fixed-width columns, counters) and the synthetic ones
// (complex columns, a 70-column superset), each in a legacy and the oa DeletionTime encoding.
func fuzzTables(f *testing.F) []fuzzTable {
	var out []fuzzTable
	seen := map[string]bool{}
	for _, fx := range loadAll(f) {
		for _, want := range []string{"legacy_nb_clust/", "legacy_oa_clust_counter/", "legacy_me_simple_compact/", "datasets.iris", "legacy_da_simple/"} {
			if strings.Contains(fx.Name, want) && !seen[want] {
				seen[want] = true
				out = append(out, fuzzTable{fx.table, fx.v, false})
			}
		}
	}
	wide := &schema.Header{KeyType: m + "BytesType", ClusteringTypes: []string{m + "Int32Type"}}
	for i := 0; i < 70; i++ {
		wide.RegularColumns = append(wide.RegularColumns, schema.Column{Name: []byte(fmt.Sprintf("c%02d", i)), Type: m + "UTF8Type"})
	}
	rich := compile(f, richHeader())
	out = append(out, fuzzTable{rich, vNB, true}, fuzzTable{rich, vOA, true})
	tb := compile(f, wide)
	out = append(out, fuzzTable{tb, vNB, false}, fuzzTable{tb, vOA, false})
	return out
}

// shortened keeps seeds small, so the fuzzer mutates rather than minimizes: a partition
// over 4 KiB is replaced by its header, static row and first n unfiltereds, re-written.
func shortened(f *testing.F, fx *fixture, part []byte, n int) []byte {
	if len(part) <= 4096 {
		return part
	}
	var c Cursor
	if err := c.Reset(fx.table, fx.v, part); err != nil {
		f.Fatal(err)
	}
	w := NewWriter(fx.table, fx.v)
	out, err := w.BeginPartition(nil, c.Key(), c.Deletion())
	if err == nil && c.Static() != nil {
		out, err = w.AppendStatic(out, c.Static())
	}
	for i := 0; i < n && err == nil && c.Next(); i++ {
		if c.Kind() == KindRow {
			out, err = w.AppendRow(out, c.Row())
		} else {
			out, err = w.AppendMarker(out, c.Marker())
		}
	}
	if err == nil {
		out, err = w.EndPartition(out)
	}
	if err != nil || c.Err() != nil {
		f.Fatal(err, c.Err())
	}
	return out
}

// FuzzCursor decodes fuzzed partitions: the cursor never panics, every failure is a located
// *CorruptError, and whatever decodes re-encodes to bytes that re-encode to themselves.
func FuzzCursor(f *testing.F) {
	tables := fuzzTables(f)
	for i, ft := range tables {
		for _, fx := range loadAll(f) {
			if fx.table == ft.tb && fx.v == ft.v {
				for p := range min(len(fx.partitions), 2) {
					f.Add(append([]byte{byte(i)}, shortened(f, fx, fx.partition(p), 2)...))
				}
			}
		}
	}
	for i, ft := range tables {
		if ft.rich {
			w := NewWriter(ft.tb, ft.v)
			for _, p := range richPartitions() {
				f.Add(append([]byte{byte(i)}, writePartition(f, w, nil, p, false)...))
			}
		}
	}
	var c Cursor
	var w Writer
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		ft := tables[int(data[0])%len(tables)]
		part := data[1:]
		if err := walk(&c, ft.tb, ft.v, part); err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Offset < 0 || ce.Offset > len(part) {
				t.Fatalf("unlocated error %v", err)
			}
			return
		}
		once, err := transcode(&c, &w, ft.tb, ft.v, part, nil)
		if err != nil {
			if errors.Is(err, ErrInvalid) {
				return // decodable, but not something Cassandra writes (e.g. an expiring tombstone)
			}
			t.Fatalf("decoded, then %v", err)
		}
		twice, err := transcode(&c, &w, ft.tb, ft.v, once, nil)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("re-encoding is not stable: %v\n%x\n%x", err, once, twice)
		}
	})
}
