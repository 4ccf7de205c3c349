package rows

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// walk decodes a whole partition and returns the first error.
func walk(c *Cursor, tb *schema.Table, v version.Version, part []byte) error {
	if err := c.Reset(tb, v, part); err != nil {
		return err
	}
	for c.Next() {
	}
	if err := c.Err(); err != nil {
		return err
	}
	if !c.Done() {
		return errors.New("not done")
	}
	return nil
}

// stride visits every offset of a partition's first 2 KiB, then a sample, so large
// partitions stay quick to test.
func stride(i int) int {
	if i < 2048 {
		return 1
	}
	return 509
}

// Strict prefixes of every fixture partition fail with a located error.
func TestTruncatedPartitions(t *testing.T) {
	var c Cursor
	for _, fx := range loadAll(t) {
		n := min(len(fx.partitions), 3)
		for i := 0; i < n; i++ {
			part := fx.partition(i)
			for cut := 0; cut < len(part); cut += stride(cut) {
				err := walk(&c, fx.table, fx.v, part[:cut])
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Offset < 0 || ce.Offset > cut {
					t.Fatalf("%s partition %d cut at %d: %v", fx.Name, i, cut, err)
				}
			}
		}
	}
}

// A few bytes flipped anywhere never panic; whatever decodes also re-encodes.
func TestMutatedPartitions(t *testing.T) {
	var c Cursor
	w := &Writer{}
	var out []byte
	for _, fx := range loadAll(t) {
		part := bytes.Clone(fx.partition(0))
		for i := 0; i < len(part); i += stride(i) {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				part[i] ^= x
				if walk(&c, fx.table, fx.v, part) == nil {
					var err error
					if out, err = transcode(&c, w, fx.table, fx.v, part, out[:0]); err != nil && !errors.Is(err, ErrInvalid) {
						t.Fatalf("%s byte %d ^ %#x: decoded, then %v", fx.Name, i, x, err)
					}
				}
				part[i] ^= x
			}
		}
	}
}

func firstFixture(t *testing.T, substr string) *fixture {
	t.Helper()
	for _, fx := range loadAll(t) {
		if bytes.Contains([]byte(fx.Name), []byte(substr)) {
			return fx
		}
	}
	t.Fatalf("no fixture %s", substr)
	return nil
}

// The sizes around every unfiltered are checked against the bytes present.
func TestSizeChecks(t *testing.T) {
	fx := firstFixture(t, "legacy_nb_simple/")
	part := fx.partition(0)
	// 0001 30 | 12-byte LIVE | 24 (flags) 0f (row size) 0f (previous size) ...
	const rowSize, prevSize = 16, 17
	if part[rowSize] != 0x0f || part[prevSize] != 0x0f {
		t.Fatalf("fixture layout changed: %x", part)
	}
	var c Cursor
	cases := []struct {
		name string
		at   int
		val  byte
		want error
		off  int
	}{
		{"row size too large", rowSize, 0x11, ErrTruncated, rowSize},
		{"row size too small", rowSize, 0x0e, ErrSizeMismatch, prevSize},
		{"previous size wrong", prevSize, 0x0e, ErrSizeMismatch, prevSize},
	}
	for _, tc := range cases {
		b := bytes.Clone(part)
		b[tc.at] = tc.val
		err := walk(&c, fx.table, fx.v, b)
		var ce *CorruptError
		if !errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.Offset != tc.off {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// Bytes after the end-of-partition flag.
	err := walk(&c, fx.table, fx.v, append(bytes.Clone(part), 0))
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("trailing byte: %v", err)
	}
	// A static row where the table has none.
	b := bytes.Clone(part)
	b[15] = 0xa4
	if err := walk(&c, fx.table, fx.v, b); !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) {
		t.Errorf("static flag: %v", err)
	}
	// A 32-bit delta that does not fit an int (VIntCoding.checkedCast).
	tb := compile(t, &schema.Header{MinTimestamp: ts0, MinLocalDeletionTime: 1_600_000_000, KeyType: m + "BytesType", ClusteringTypes: []string{m + "Int32Type"}})
	w := NewWriter(tb, vOA)
	buf, _ := w.BeginPartition(nil, []byte("k"), Live)
	buf, _ = w.AppendMarker(buf, &Marker{Kind: InclStartBound, Deletion: DeletionTime{MarkedForDeleteAt: ts0, LocalDeletionTime: 1_600_000_000}})
	buf, _ = w.EndPartition(buf)
	// k | 80 | 02 01 0000 | size 03 | prev 04 | ts delta 00 | ldt delta 00 | 01
	if want := []byte{0, 1, 'k', 0x80, 0x02, 0x01, 0, 0, 0x03, 0x04, 0x00, 0x00, 0x01}; !bytes.Equal(buf, want) {
		t.Fatalf("marker bytes %x, want %x", buf, want)
	}
	wide := encoding.AppendUVint(nil, 1<<31)
	bad := append(append(append([]byte{}, buf[:8]...), byte(3+len(wide)-1), 0x04, 0x00), wide...)
	bad = append(bad, 0x01)
	err = walk(&c, tb, vOA, bad)
	var ce *CorruptError
	if !errors.Is(err, ErrMalformed) || !errors.As(err, &ce) || ce.Offset != 11 {
		t.Errorf("ldt delta 2^31: %v", err)
	}
}

// Errors name the column whose cell was being read.
func TestErrorNamesColumn(t *testing.T) {
	fx := firstFixture(t, "legacy_oa_simple/")
	// 0001 30 | 80 | 24 0f 04 | 00 (timestamp) | 08 (cell flags) 0b "foo bar baz" | 01
	part := bytes.Clone(fx.partition(0))
	if part[9] != 0x0b {
		t.Fatalf("fixture layout changed: %x", part)
	}
	part[9] = 0x7f
	var c Cursor
	err := walk(&c, fx.table, fx.v, part)
	var ce *CorruptError
	if !errors.As(err, &ce) || string(ce.Column) != "val" || ce.What != "cell value" || ce.Offset != 9 {
		t.Fatalf("%v", err)
	}
}
