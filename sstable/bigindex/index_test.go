package bigindex

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/token"
)

func TestIndexEntriesMatchKeysOracle(t *testing.T) {
	for _, s := range bigFixtures(t) {
		t.Run(s.Name, func(t *testing.T) {
			want := s.Keys(t)
			got := collect(t, NewIterator(s.Read(t, "Index.db")))
			if len(got) != len(want) {
				t.Fatalf("%d entries, keys.tsv has %d", len(got), len(want))
			}
			p := fixturePartitioner(s)
			var prev token.Token
			for i, e := range got {
				k := want[i]
				if !bytes.Equal(e.Key, k.Key) || e.Position != k.DataPos || e.Offset != k.IndexPos || int64(len(e.Promoted)) != k.PromotedSize {
					t.Fatalf("entry %d = key %x pos %d offset %d promoted %d; want %x %d %d %d",
						i, e.Key, e.Position, e.Offset, len(e.Promoted), k.Key, k.DataPos, k.IndexPos, k.PromotedSize)
				}
				tok := p.Token(e.Key)
				if tok.String() != k.Token {
					t.Fatalf("entry %d: token %s, keys.tsv says %s", i, tok, k.Token)
				}
				if i > 0 && token.CompareKeys(prev, got[i-1].Key, tok, e.Key) >= 0 {
					t.Fatalf("entry %d (%x) is not after entry %d (%x) in %s order", i, e.Key, i-1, got[i-1].Key, p.Name())
				}
				prev = tok
			}
		})
	}
}

func TestIndexReappendsByteIdentical(t *testing.T) {
	for _, s := range bigFixtures(t) {
		raw := s.Read(t, "Index.db")
		var out []byte
		it := NewIterator(raw)
		for it.Next() {
			e := it.Entry()
			if e.Offset != int64(len(out)) {
				t.Fatalf("%s: entry offset %d, re-appended so far %d", s.Name, e.Offset, len(out))
			}
			out = AppendEntry(out, e.Key, e.Position, e.Promoted)
			if int64(len(out))-e.Offset != int64(e.Size()) {
				t.Fatalf("%s: Size() = %d, appended %d", s.Name, e.Size(), int64(len(out))-e.Offset)
			}
		}
		if it.Err() != nil || it.Offset() != int64(len(raw)) {
			t.Fatalf("%s: err=%v, stopped at %d of %d", s.Name, it.Err(), it.Offset(), len(raw))
		}
		if !bytes.Equal(out, raw) {
			t.Fatalf("%s: re-appended Index.db differs", s.Name)
		}
	}
}

func TestAppendEntryUsesMinimalVints(t *testing.T) {
	cases := []struct {
		key      string
		pos      int64
		promoted []byte
		want     []byte
	}{
		{"0", 0, nil, []byte{0, 1, '0', 0, 0}},
		{"", 127, nil, []byte{0, 0, 0x7f, 0}},
		{"k", 128, []byte{9}, []byte{0, 1, 'k', 0x80, 0x80, 1, 9}},
		{"k", 0x4000, nil, []byte{0, 1, 'k', 0xc0, 0x40, 0x00, 0}},
	}
	for _, c := range cases {
		got := AppendEntry(nil, []byte(c.key), c.pos, c.promoted)
		if !bytes.Equal(got, c.want) {
			t.Errorf("AppendEntry(%q, %d, %x) = %x, want %x", c.key, c.pos, c.promoted, got, c.want)
		}
	}
}

// Every entry of every fixture decodes the same through the streaming Scanner, whatever the
// buffer size and however the reader splits its reads.
func TestScannerMatchesIterator(t *testing.T) {
	for _, s := range bigFixtures(t) {
		raw := s.Read(t, "Index.db")
		want := collect(t, NewIterator(raw))
		readers := map[string]func() *Scanner{
			"one-byte reads, 16-byte buffer": func() *Scanner { return NewScanner(iotest.OneByteReader(bytes.NewReader(raw)), 16) },
			"half reads, 100-byte buffer":    func() *Scanner { return NewScanner(iotest.HalfReader(bytes.NewReader(raw)), 100) },
			"data+EOF reads, default buffer": func() *Scanner { return NewScanner(iotest.DataErrReader(bytes.NewReader(raw)), 0) },
			"ReaderAt, 64-byte buffer":       func() *Scanner { return NewScannerAt(bytes.NewReader(raw), 0, int64(len(raw)), 64) },
		}
		for name, mk := range readers {
			got := collect(t, mk())
			if len(got) != len(want) {
				t.Fatalf("%s %s: %d entries, want %d", s.Name, name, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i].Key, want[i].Key) || got[i].Position != want[i].Position ||
					got[i].Offset != want[i].Offset || !bytes.Equal(got[i].Promoted, want[i].Promoted) {
					t.Fatalf("%s %s: entry %d differs", s.Name, name, i)
				}
			}
		}
	}
}

// A scan may start at any entry (a Summary.db sample's position) and reports file offsets.
func TestScannerAtWindowReportsFileOffsets(t *testing.T) {
	s := bigFixtures(t)[0]
	for _, f := range bigFixtures(t) {
		if f.Name == "sstable-transformer/oa/spark_test.testtable_10k/oa-13-big" {
			s = f
		}
	}
	raw := s.Read(t, "Index.db")
	keys := s.Keys(t)
	from, to := keys[128].IndexPos, keys[256].IndexPos
	got := collect(t, NewScannerAt(bytes.NewReader(raw), from, to, 0))
	if len(got) != 128 || got[0].Offset != from || !bytes.Equal(got[127].Key, keys[255].Key) {
		t.Fatalf("window [%d,%d): %d entries, first at %d", from, to, len(got), got[0].Offset)
	}
	var it Iterator
	it.Reset(raw[from:to], from)
	if again := collect(t, &it); len(again) != 128 || again[5].Offset != keys[133].IndexPos {
		t.Fatalf("Iterator.Reset window: %d entries", len(again))
	}
}

// Cutting an Index.db anywhere inside an entry yields an EntryError naming that entry's offset;
// cutting it between entries yields a clean end.
func TestEveryTruncationIsReportedAtItsEntry(t *testing.T) {
	for _, name := range []string{
		"apache-legacy/oa/legacy_tables/legacy_oa_clust/oa-1-big",
		"apache-legacy/md/legacy_tables/legacy_md_simple_counter/md-1-big",
		"sstable-to-arrow/md/datasets.iris/md-1-big",
	} {
		var raw []byte
		var entries []Entry
		for _, s := range bigFixtures(t) {
			if s.Name == name {
				raw = s.Read(t, "Index.db")
				entries = collect(t, NewIterator(raw))
			}
		}
		if raw == nil {
			t.Fatalf("fixture %s missing", name)
		}
		starts := map[int64]bool{int64(len(raw)): true}
		for _, e := range entries {
			starts[e.Offset] = true
		}
		step := 1
		if len(raw) > 4000 {
			step = 97 // the clust entries are 31 KB each; sample the cuts, keep every boundary
		}
		for cut := 0; cut < len(raw); cut++ {
			if cut%step != 0 && !starts[int64(cut)] && !starts[int64(cut-1)] && !starts[int64(cut+1)] {
				continue
			}
			var want int64 // start of the entry the cut falls in
			for _, e := range entries {
				if e.Offset < int64(cut) {
					want = e.Offset
				}
			}
			for _, src := range []Source{
				NewIterator(raw[:cut]),
				NewScanner(iotest.OneByteReader(bytes.NewReader(raw[:cut])), 8),
				NewScannerAt(bytes.NewReader(raw), 0, int64(cut), 8),
			} {
				for src.Next() {
				}
				err := src.Err()
				if starts[int64(cut)] {
					if err != nil {
						t.Fatalf("%s cut at entry boundary %d: %v", name, cut, err)
					}
					continue
				}
				var ee *encoding.OffsetError // the outermost place is the entry's
				if !errors.As(err, &ee) || ee.Offset != want || !errors.Is(err, ErrTruncated) {
					t.Fatalf("%s cut at %d (%T): got %v, want a truncation of the entry at %d", name, cut, src, err, want)
				}
			}
		}
	}
}

func TestMalformedEntriesSayWhatIsWrong(t *testing.T) {
	good := AppendEntry(nil, []byte("ab"), 5, nil)
	cases := []struct {
		name string
		b    []byte
		at   int64
		is   error
		says string
	}{
		{"one byte of key length", []byte{0}, 0, ErrTruncated, "key length"},
		{"short key", []byte{0, 5, 'a'}, 2, ErrTruncated, "key of 5 bytes"},
		{"no position", []byte{0, 1, 'a'}, 3, ErrTruncated, "position vint"},
		{"cut position vint", []byte{0, 1, 'a', 0xc0, 1}, 3, ErrTruncated, "position vint of 3 bytes"},
		{"no promoted size", []byte{0, 1, 'a', 7}, 4, ErrTruncated, "promoted size vint"},
		{"promoted past the end", []byte{0, 1, 'a', 7, 0x10, 1, 2}, 5, ErrTruncated, "promoted index of 16 bytes"},
		{"position beyond int64", append([]byte{0, 0}, encoding.AppendUVint(nil, 1<<63)...), 2, ErrMalformed, "exceeds int64"},
		{"promoted size beyond int32", append([]byte{0, 0, 0}, encoding.AppendUVint(nil, 1<<31)...), 3, ErrMalformed, "exceeds int32"},
	}
	for _, c := range cases {
		b := append(append([]byte(nil), good...), c.b...)
		it := NewIterator(b)
		if !it.Next() || it.Next() {
			t.Fatalf("%s: want exactly the good entry first", c.name)
		}
		var ee, oe *encoding.OffsetError
		err := it.Err()
		if errors.As(err, &ee) {
			errors.As(ee.Err, &oe) // the failing field inside the entry
		}
		if ee == nil || ee.Offset != int64(len(good)) || !errors.Is(err, c.is) ||
			oe == nil || oe.Offset != int64(len(good))+c.at || !bytes.Contains([]byte(err.Error()), []byte(c.says)) {
			t.Errorf("%s: got %v; want entry %d, field at %d, %v, saying %q", c.name, err, len(good), int64(len(good))+c.at, c.is, c.says)
		}
	}
}

// A tiny stream claiming a 2 GiB promoted index must fail as truncated without the Scanner
// ever allocating more than the bytes it actually received justify.
func TestScannerGrowsOnlyWithArrivingBytes(t *testing.T) {
	b := []byte{0, 1, 'k', 0}
	b = encoding.AppendUVint(b, 1<<31-1)
	b = append(b, make([]byte, 1000)...)
	sc := NewScanner(bytes.NewReader(b), 64)
	if sc.Next() || !errors.Is(sc.Err(), ErrTruncated) {
		t.Fatalf("want truncation, got %v", sc.Err())
	}
	if cap(sc.buf) > 4*len(b) {
		t.Fatalf("buffer grew to %d bytes for a %d-byte input", cap(sc.buf), len(b))
	}
	at := NewScannerAt(bytes.NewReader(b), 0, int64(len(b)), 64)
	if at.Next() || !errors.Is(at.Err(), ErrTruncated) || cap(at.buf) > 64 {
		t.Fatalf("known size: err=%v buffer %d; want truncation before any growth", at.Err(), cap(at.buf))
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestScannerReportsReadErrors(t *testing.T) {
	boom := errors.New("disk on fire")
	sc := NewScanner(io.MultiReader(bytes.NewReader([]byte{0, 1, 'k'}), failingReader{boom}), 0)
	if sc.Next() || !errors.Is(sc.Err(), boom) {
		t.Fatalf("got %v, want the read error", sc.Err())
	}
	stuck := NewScanner(failingReader{nil}, 0)
	if stuck.Next() || !errors.Is(stuck.Err(), ErrNoProgress) {
		t.Fatalf("got %v, want ErrNoProgress", stuck.Err())
	}
}
