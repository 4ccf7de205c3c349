package bti

import (
	"bytes"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const utf8Type = "org.apache.cassandra.db.marshal.UTF8Type"

// legacyClusterings are the ck values LegacySSTableTest.testGenerateSstables inserts into
// every *_clust partition, in clustering (UTF-8 byte) order, as ByteComparable.
func legacyClusterings(t *testing.T) [][]byte {
	long := strings.Repeat("0123456789", 120)
	var cks []string
	for i := range 50 {
		cks = append(cks, strconv.Itoa(i)+long)
	}
	sort.Strings(cks)
	var out [][]byte
	for _, ck := range cks {
		c, err := AppendClusteringComparable(nil, []string{utf8Type}, [][]byte{[]byte(ck)}, Clustering)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func TestReadRowIndexEntriesMatchKeysOracle(t *testing.T) {
	for _, s := range btiFixtures(t) {
		rows := s.Read(t, "Rows.db")
		for _, k := range s.Keys(t) {
			if k.IndexPos < 0 {
				continue
			}
			e, err := ReadRowIndexEntry(rows, k.IndexPos)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			if !bytes.Equal(e.Key, k.Key) || e.DataPosition != k.DataPos || !e.Deletion.IsLive() {
				t.Errorf("%s: entry %+v, want key %x data %d live", s.Name, e, k.Key, k.DataPos)
			}
			var w RowIndexWalker
			n, prev := 0, int64(-1)
			err = w.Walk(rows, e, func(b RowIndexBlock) error {
				if b.Offset <= prev {
					t.Errorf("%s key %x: block offsets not increasing: %d after %d", s.Name, k.Key, b.Offset, prev)
				}
				prev = b.Offset
				n++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != e.BlockCount+1 {
				t.Errorf("%s key %x: %d trie entries, want blockCount+1 = %d", s.Name, k.Key, n, e.BlockCount+1)
			}
		}
	}
}

// TestRebuildRowsByteIdentical rebuilds Rows.db of the *_clust fixtures from the clustering
// values the legacy test wrote and the block offsets the fixture records.
func TestRebuildRowsByteIdentical(t *testing.T) {
	cks := legacyClusterings(t)
	for _, s := range btiFixtures(t) {
		keys := s.Keys(t)
		if keys[0].IndexPos < 0 {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			want := s.Read(t, "Rows.db")
			var out bytes.Buffer
			w := NewRowIndexWriter(&out)
			var walker RowIndexWalker
			for _, k := range keys {
				e, err := ReadRowIndexEntry(want, k.IndexPos)
				if err != nil {
					t.Fatal(err)
				}
				var blocks []RowIndexBlock
				walker.Walk(want, e, func(b RowIndexBlock) error {
					blocks = append(blocks, RowIndexBlock{Offset: b.Offset, OpenMarker: b.OpenMarker})
					return nil
				})
				end := blocks[len(blocks)-1].Offset
				blocks = blocks[:len(blocks)-1]
				// Rows are of nearly equal size, so a block's share of the partition gives
				// its row count.
				rowSize := float64(end-blocks[0].Offset) / float64(len(cks))
				next := 0
				for i, b := range blocks {
					stop := end
					if i+1 < len(blocks) {
						stop = blocks[i+1].Offset
					}
					n := int(math.Round(float64(stop-b.Offset) / rowSize))
					if err := w.AddBlock(cks[next], cks[next+n-1], b.Offset, b.OpenMarker); err != nil {
						t.Fatal(err)
					}
					next += n
				}
				if next != len(cks) {
					t.Fatalf("key %x: blocks cover %d rows, want %d", k.Key, next, len(cks))
				}
				pos, err := w.FinishPartition(k.Key, k.DataPos, end, e.Deletion)
				if err != nil {
					t.Fatal(err)
				}
				if pos != k.IndexPos {
					t.Errorf("key %x: entry at %d, want %d", k.Key, pos, k.IndexPos)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("rebuilt Rows.db differs:\n got %x\nwant %x", out.Bytes(), want)
			}
		})
	}
}

func TestRowIndexWriterSkipsSingleBlockPartitions(t *testing.T) {
	var out bytes.Buffer
	w := NewRowIndexWriter(&out)
	if pos, err := w.FinishPartition([]byte("k"), 77, 10, Live); err != nil || pos != ^int64(77) {
		t.Fatalf("no blocks: pos %d, err %v; want ^77", pos, err)
	}
	if err := w.AddBlock([]byte{0x40, 0x61, 0x00, 0x38}, []byte{0x40, 0x62, 0x00, 0x38}, 3, Live); err != nil {
		t.Fatal(err)
	}
	if pos, err := w.FinishPartition([]byte("k"), 99, 10, Live); err != nil || pos != ^int64(99) {
		t.Fatalf("one block: pos %d, err %v; want ^99", pos, err)
	}
	if w.Flush(); out.Len() != 0 {
		t.Errorf("wrote %d bytes for partitions without a row index", out.Len())
	}
}

func TestRowIndexWriterRoundTripWithOpenMarkers(t *testing.T) {
	var out bytes.Buffer
	w := NewRowIndexWriter(&out)
	del := DeletionTime{MarkedForDeleteAt: 1700000000000000, LocalDeletionTime: 1700000000}
	var entries []int64
	for p := range 3 {
		for i := range 40 {
			first := []byte{0x40, byte('a' + i/10), byte('a' + i%10), 0x00, 0x38}
			last := []byte{0x40, byte('a' + i/10), byte('a' + i%10), 0xFF, 0x38}
			marker := Live
			if i%3 == 1 {
				marker = del
			}
			if err := w.AddBlock(first, last, int64(5+i*70000), marker); err != nil {
				t.Fatal(err)
			}
		}
		pos, err := w.FinishPartition([]byte{byte(p)}, int64(p)<<40, 5+40*70000, del)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, pos)
	}
	w.Flush()
	rows := out.Bytes()
	var walker RowIndexWalker
	for p, pos := range entries {
		e, err := ReadRowIndexEntry(rows, pos)
		if err != nil {
			t.Fatal(err)
		}
		if e.BlockCount != 40 || e.DataPosition != int64(p)<<40 || e.Deletion != del || !bytes.Equal(e.Key, []byte{byte(p)}) {
			t.Errorf("entry %+v", e)
		}
		i := 0
		walker.Walk(rows, e, func(b RowIndexBlock) error {
			if i < 40 {
				wantDel := Live
				if i%3 == 1 {
					wantDel = del
				}
				if b.Offset != int64(5+i*70000) || b.OpenMarker != wantDel {
					t.Errorf("block %d: %+v", i, b)
				}
			} else if b.Offset != 5+40*70000 {
				t.Errorf("end entry: %+v", b)
			}
			i++
			return nil
		})
		if i != 41 {
			t.Errorf("partition %d: %d entries, want 41", p, i)
		}
	}
}

func TestRowIndexWriterRejectsBadInput(t *testing.T) {
	w := NewRowIndexWriter(&bytes.Buffer{})
	a, b := []byte{0x40, 0x62, 0x00, 0x38}, []byte{0x40, 0x61, 0x00, 0x38}
	if err := w.AddBlock(a, a, 0, Live); err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlock(b, b, 10, Live); !errors.Is(err, ErrUnsorted) {
		t.Errorf("descending block: %v, want ErrUnsorted", err)
	}
	if err := w.AddBlock(a, a, 1<<56, Live); !errors.Is(err, ErrTooLarge) {
		t.Errorf("huge offset: %v, want ErrTooLarge", err)
	}
}

func TestPatchDataPosition(t *testing.T) {
	s := btiFixtures(t)[0]
	rows := bytes.Clone(s.Read(t, "Rows.db"))
	k := s.Keys(t)[1]
	e, err := ReadRowIndexEntry(rows, k.IndexPos)
	if err != nil {
		t.Fatal(err)
	}
	before := bytes.Clone(rows)
	if err := PatchDataPosition(rows, e, 5); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRowIndexEntry(rows, k.IndexPos)
	if err != nil || got.DataPosition != 5 || got.DataPositionWidth != e.DataPositionWidth || got.End != e.End {
		t.Errorf("after patch: %+v, %v", got, err)
	}
	for i := range rows {
		if rows[i] != before[i] && (int64(i) < e.DataPositionOffset || int64(i) >= e.DataPositionOffset+int64(e.DataPositionWidth)) {
			t.Fatalf("patch changed byte %d outside the slot", i)
		}
	}
	if err := PatchDataPosition(rows, e, 1<<40); !errors.Is(err, ErrTooLarge) {
		t.Errorf("too wide: %v, want ErrTooLarge", err)
	}
	if err := PatchDataPosition(rows, e, -1); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative: %v, want ErrInvalid", err)
	}
	e.DataPositionOffset = int64(len(rows))
	if err := PatchDataPosition(rows, e, 1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("slot outside: %v, want ErrCorrupt", err)
	}
}

func TestReadRowIndexEntryTruncations(t *testing.T) {
	s := btiFixtures(t)[0]
	rows := s.Read(t, "Rows.db")
	k := s.Keys(t)[0]
	e, err := ReadRowIndexEntry(rows, k.IndexPos)
	if err != nil {
		t.Fatal(err)
	}
	for end := k.IndexPos; end < e.End; end++ {
		if _, err := ReadRowIndexEntry(rows[:end], k.IndexPos); err == nil {
			t.Errorf("entry cut at %d parsed", end)
		}
	}
	bad := bytes.Clone(rows)
	bad[e.End-1] = 0x81 // deletion flags with the live bit and more
	if _, err := ReadRowIndexEntry(bad, k.IndexPos); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad deletion flags: %v, want ErrCorrupt", err)
	}
}
