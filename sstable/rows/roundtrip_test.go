package rows

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// transcode decodes one partition with c and serializes what was read with w, appending to
// dst. It returns the first error of either side.
func transcode(c *Cursor, w *Writer, tb *schema.Table, v version.Version, part, dst []byte) ([]byte, error) {
	if err := c.Reset(tb, v, part); err != nil {
		return dst, err
	}
	w.Reset(tb, v)
	var err error
	if dst, err = w.BeginPartition(dst, c.Key(), c.Deletion()); err != nil {
		return dst, err
	}
	if s := c.Static(); s != nil {
		if dst, err = w.AppendStatic(dst, s); err != nil {
			return dst, err
		}
	}
	for c.Next() {
		if c.Kind() == KindRow {
			dst, err = w.AppendRow(dst, c.Row())
		} else {
			dst, err = w.AppendMarker(dst, c.Marker())
		}
		if err != nil {
			return dst, fmt.Errorf("unfiltered %d: %w", c.Count(), err)
		}
	}
	if err := c.Err(); err != nil {
		return dst, err
	}
	if !c.Done() {
		return dst, errors.New("cursor stopped before the end of the partition")
	}
	return w.EndPartition(dst)
}

func reencodeTable(t testing.TB, c *Cursor, w *Writer, tb *schema.Table, v version.Version, part []byte) []byte {
	t.Helper()
	out, err := transcode(c, w, tb, v, part, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func reencode(t testing.TB, c *Cursor, w *Writer, fx *fixture, part []byte, dst []byte) []byte {
	t.Helper()
	out, err := transcode(c, w, fx.table, fx.v, part, dst)
	if err != nil {
		t.Fatalf("%s: %v", fx.Name, err)
	}
	return out
}

// Every partition of every fixture decodes and re-serializes to the identical bytes.
func TestFixtureRoundTrip(t *testing.T) {
	var c Cursor
	var w Writer
	for _, fx := range loadAll(t) {
		t.Run(fx.Name, func(t *testing.T) {
			for i := range fx.partitions {
				part := fx.partition(i)
				got := reencode(t, &c, &w, fx, part, nil)
				if !bytes.Equal(got, part) {
					t.Fatalf("partition %d (%x): re-encoded %d bytes differ from %d original bytes\n got %x\nwant %x",
						i, fx.keys[i].Key, len(got), len(part), head(got), head(part))
				}
				if !bytes.Equal(c.Key(), fx.keys[i].Key) {
					t.Fatalf("partition %d: key %x, keys.tsv says %x", i, c.Key(), fx.keys[i].Key)
				}
				if w.PartitionSize() != int64(len(part)) {
					t.Fatalf("partition %d: writer counted %d bytes, wrote %d", i, w.PartitionSize(), len(part))
				}
			}
		})
	}
}

func head(b []byte) []byte {
	if len(b) > 256 {
		return b[:256]
	}
	return b
}

// Unfiltered spans tile the partition: the first starts at HeaderSize, each starts where the
// previous ended, and the last ends at the end-of-partition byte.
func TestFixtureSpans(t *testing.T) {
	var c Cursor
	for _, fx := range loadAll(t) {
		for i := range fx.partitions {
			part := fx.partition(i)
			if err := c.Reset(fx.table, fx.v, part); err != nil {
				t.Fatalf("%s: %v", fx.Name, err)
			}
			next := c.HeaderSize()
			for c.Next() {
				start, end := c.Span()
				if start != next || end <= start {
					t.Fatalf("%s partition %d unfiltered %d: span [%d, %d), expected start %d", fx.Name, i, c.Count(), start, end, next)
				}
				next = end
			}
			if c.Err() != nil || next != len(part)-1 {
				t.Fatalf("%s partition %d: unfiltereds end at %d of %d: %v", fx.Name, i, next, len(part), c.Err())
			}
		}
	}
}
