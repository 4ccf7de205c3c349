package rows

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// partitionSummary is what the content checks need from one decoded partition.
type partitionSummary struct {
	key        []byte
	deletion   DeletionTime
	static     *Row
	rows       int
	markers    int
	cells      int
	values     [][]byte // every cell value, copied
	clustering [][]byte // first clustering value of every row, copied
}

// summarize decodes every partition of fx.
func summarize(t *testing.T, fx *fixture) []partitionSummary {
	t.Helper()
	var c Cursor
	var out []partitionSummary
	for i := range fx.partitions {
		if err := c.Reset(fx.table, fx.v, fx.partition(i)); err != nil {
			t.Fatalf("%s partition %d: %v", fx.Name, i, err)
		}
		s := partitionSummary{key: c.Key(), deletion: c.Deletion()}
		if st := c.Static(); st != nil {
			s.static = st
			for _, cd := range st.Columns {
				for _, cell := range cd.Cells {
					s.values = append(s.values, bytes.Clone(cell.Value))
				}
			}
		}
		for c.Next() {
			if c.Kind() == KindMarker {
				s.markers++
				continue
			}
			r := c.Row()
			s.rows++
			if len(r.Clustering) > 0 {
				s.clustering = append(s.clustering, bytes.Clone(r.Clustering[0]))
			}
			for _, cd := range r.Columns {
				for _, cell := range cd.Cells {
					s.cells++
					s.values = append(s.values, bytes.Clone(cell.Value))
				}
			}
		}
		if err := c.Err(); err != nil {
			t.Fatalf("%s partition %d: %v", fx.Name, i, err)
		}
		out = append(out, s)
	}
	return out
}

// counterTotal sums a counter context's shard counts (db/context/CounterContext: an i16
// header length, that many i16 header entries, then 32-byte shards of id, clock, count).
func counterTotal(t *testing.T, ctx []byte) int64 {
	t.Helper()
	if len(ctx) < 2 {
		t.Fatalf("counter context of %d bytes", len(ctx))
	}
	h := int(int16(binary.BigEndian.Uint16(ctx)))
	body := ctx[2+2*h:]
	if h < 0 || len(body)%32 != 0 {
		t.Fatalf("counter context %x: bad layout", ctx)
	}
	var total int64
	for ; len(body) > 0; body = body[32:] {
		total += int64(binary.BigEndian.Uint64(body[24:]))
	}
	return total
}

// The decoded fixtures hold what FORMAT §1.1 and the fixture README say was written.
func TestFixtureContent(t *testing.T) {
	for _, fx := range loadAll(t) {
		name := fx.Name
		t.Run(name, func(t *testing.T) {
			parts := summarize(t, fx)
			if len(parts) != len(fx.keys) {
				t.Fatalf("%d partitions, keys.tsv lists %d", len(parts), len(fx.keys))
			}
			for i, p := range parts {
				if !p.deletion.IsLive() {
					t.Errorf("partition %d: deletion %+v, want live", i, p.deletion)
				}
				if p.markers != 0 {
					t.Errorf("partition %d: %d range tombstone markers", i, p.markers)
				}
			}
			legacy := strings.HasPrefix(name, "apache-legacy/")
			counter := strings.Contains(name, "_counter")
			switch {
			case legacy && strings.Contains(name, "_simple"):
				for i, p := range parts {
					if want := []byte{byte('0' + i)}; !bytes.Equal(p.key, want) {
						t.Errorf("partition %d: key %q, want %q", i, p.key, want)
					}
					compact := strings.Contains(name, "_compact")
					// COMPACT STORAGE without clustering stores the value in the static row.
					if compact != (p.static != nil) || compact != (p.rows == 0) || !compact && p.rows != 1 {
						t.Errorf("partition %d: static %v, %d rows", i, p.static != nil, p.rows)
					}
					checkValues(t, i, p.values, 1, counter, "foo bar baz")
				}
			case legacy && strings.Contains(name, "_clust"):
				for i, p := range parts {
					if p.rows != 50 || p.static != nil {
						t.Errorf("partition %d: %d rows, static %v; want 50 rows", i, p.rows, p.static != nil)
					}
					for j, ck := range p.clustering {
						if len(ck) < 1201 || len(ck) > 1202 {
							t.Errorf("partition %d row %d: clustering of %d bytes", i, j, len(ck))
						}
					}
					if !counter {
						if len(p.values[0]) != 128 || strings.Trim(string(p.values[0]), "abcdefghijklmnopqrstuvwxyz") != "" {
							t.Errorf("partition %d: val %q is not 128 a-z characters", i, p.values[0])
						}
						checkValues(t, i, p.values, 50, false, string(p.values[0]))
					} else {
						checkValues(t, i, p.values, 50, true, "")
					}
				}
			case strings.Contains(name, "datasets.iris"):
				for i, p := range parts {
					if p.rows != 1 || p.cells != 2 || len(p.values[0]) != 4 || len(p.values[1]) != 4 {
						t.Errorf("partition %d: %d rows, %d cells", i, p.rows, p.cells)
					}
					// sepal_width is a float between 2 and 4.5; target is 0, 1 or 2.
					w := math.Float32frombits(binary.BigEndian.Uint32(p.values[0]))
					target := int32(binary.BigEndian.Uint32(p.values[1]))
					if w < 2 || w > 4.5 || target < 0 || target > 2 {
						t.Errorf("partition %d: sepal_width %v target %d", i, w, target)
					}
				}
			case strings.Contains(name, "spark_test.test3"):
				// INSERT id=1 with col1=10 (generation 1/2 of oa and 1 of nb) or col2=20.
				want := uint32(10)
				if strings.HasSuffix(name, "nb-2-big") || strings.HasSuffix(name, "oa-3-big") {
					want = 20
				}
				p := parts[0]
				if p.rows != 1 || p.cells != 1 || binary.BigEndian.Uint32(p.values[0]) != want {
					t.Errorf("%d rows, %d cells, values %x; want one cell %d", p.rows, p.cells, p.values, want)
				}
			case strings.Contains(name, "testtable_10k"):
				for i, p := range parts {
					if p.rows != 1 || p.cells != 0 {
						t.Fatalf("partition %d: %d rows, %d cells; want a bare primary key row", i, p.rows, p.cells)
					}
				}
			default:
				t.Fatalf("no content expectation for fixture %s", name)
			}
		})
	}
}

func checkValues(t *testing.T, part int, values [][]byte, n int, counter bool, want string) {
	t.Helper()
	if len(values) != n {
		t.Errorf("partition %d: %d values, want %d", part, len(values), n)
		return
	}
	for j, v := range values {
		if counter {
			if got := counterTotal(t, v); got != 1 {
				t.Errorf("partition %d value %d: counter total %d, want 1", part, j, got)
			}
		} else if string(v) != want {
			t.Errorf("partition %d value %d: %q, want %q", part, j, v, want)
		}
	}
}
