package bigindex

import (
	"bytes"
	"errors"
	"testing"
	"testing/iotest"

	"github.com/sluicedb/sluice/sstable/version"
)

// seedIndexes adds every fixture Index.db no larger than max bytes, plus the first entries of
// the large ones, so the fuzzer starts from real layouts.
func seedIndexes(f *testing.F, add func([]byte)) {
	for _, s := range bigFixtures(f) {
		raw := s.Read(f, "Index.db")
		if len(raw) > 40000 {
			it := NewIterator(raw)
			it.Next()
			raw = raw[:it.Offset()]
		}
		add(raw)
	}
}

// The in-memory iterator and the streaming scanner agree on every input, never panic, and
// whatever decodes re-encodes to bytes that decode the same.
func FuzzIndexIterator(f *testing.F) {
	seedIndexes(f, func(b []byte) { f.Add(b) })
	f.Add([]byte{0, 1, 'a', 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		mem := NewIterator(b)
		stream := NewScanner(iotest.HalfReader(bytes.NewReader(b)), 8)
		var again []byte
		for mem.Next() {
			e := mem.Entry()
			if !stream.Next() {
				t.Fatalf("scanner stopped before entry at %d: %v", e.Offset, stream.Err())
			}
			s := stream.Entry()
			if !bytes.Equal(e.Key, s.Key) || e.Position != s.Position || e.Offset != s.Offset || !bytes.Equal(e.Promoted, s.Promoted) {
				t.Fatalf("entry at %d differs between iterator and scanner", e.Offset)
			}
			again = AppendEntry(again, e.Key, e.Position, e.Promoted)
		}
		if stream.Next() {
			t.Fatal("scanner found an entry the iterator did not")
		}
		if (mem.Err() == nil) != (stream.Err() == nil) {
			t.Fatalf("iterator err %v, scanner err %v", mem.Err(), stream.Err())
		}
		// DecodeEntry, the decoder of an index slice arriving in frames, walks the same
		// entries and ends where the iterator did: at the end, waiting for more bytes at a
		// truncated entry, or with an error at a malformed one.
		off, walk := 0, NewIterator(b)
		for {
			var e Entry
			n, err := DecodeEntry(b[off:], int64(off), &e)
			if !walk.Next() {
				switch {
				case walk.Err() == nil && (n != 0 || err != nil || off != len(b)):
					t.Fatalf("DecodeEntry at the end (%d): %d, %v", off, n, err)
				case walk.Err() != nil && n != 0:
					t.Fatalf("DecodeEntry decoded %d bytes at %d, where the iterator failed: %v", n, off, walk.Err())
				case walk.Err() != nil && errors.Is(walk.Err(), ErrMalformed) != (err != nil):
					t.Fatalf("DecodeEntry at %d: %v; the iterator: %v", off, err, walk.Err())
				}
				break
			}
			w := walk.Entry()
			if err != nil || off+n != int(walk.Offset()) || !bytes.Equal(e.Key, w.Key) || e.Position != w.Position || !bytes.Equal(e.Promoted, w.Promoted) || e.Offset != w.Offset {
				t.Fatalf("DecodeEntry at %d: %d bytes (%v), the iterator's entry ends at %d", off, n, err, walk.Offset())
			}
			off += n
		}
		if mem.Err() != nil {
			return
		}
		re := NewIterator(again)
		it := NewIterator(b)
		for it.Next() {
			if !re.Next() || !bytes.Equal(re.Entry().Key, it.Entry().Key) || re.Entry().Position != it.Entry().Position ||
				!bytes.Equal(re.Entry().Promoted, it.Entry().Promoted) {
				t.Fatal("re-appended entries decode differently")
			}
		}
		if re.Next() || re.Err() != nil {
			t.Fatal("re-appended index has extra entries or an error")
		}
	})
}

func FuzzCheckPromoted(f *testing.F) {
	for _, s := range bigFixtures(f) {
		if !bytes.Contains([]byte(s.Name), []byte("_clust/")) {
			continue
		}
		it := NewIterator(s.Read(f, "Index.db"))
		it.Next()
		f.Add(it.Entry().Promoted, s.Version == "oa")
	}
	f.Add(promoted([]byte{0x80}, []int{5, 7}, []int32{0, 5}), true)
	oa, _ := version.Parse(version.Big, "oa")
	nb, _ := version.Parse(version.Big, "nb")
	f.Fuzz(func(t *testing.T, b []byte, uintDeletion bool) {
		v := nb
		if uintDeletion {
			v = oa
		}
		h, err := CheckPromoted(b, v)
		if err != nil || len(b) == 0 {
			return
		}
		for i := range h.BlockCount {
			if o := h.BlockOffset(b, i); o < h.IndexInfoStart || o+minIndexInfoSize > h.OffsetsStart {
				t.Fatalf("block %d at %d outside [%d, %d)", i, o, h.IndexInfoStart, h.OffsetsStart)
			}
		}
	})
}

// Whatever ParseSummary accepts, Append reproduces exactly, and Samples reads the same samples
// from the file; whatever Samples reads never panics.
func FuzzParseSummary(f *testing.F) {
	for _, s := range bigFixtures(f) {
		f.Add(s.Read(f, "Summary.db"))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if sm, err := OpenSamples(bytes.NewReader(b), int64(len(b)), "Summary.db"); err == nil {
			for i := range min(sm.Len(), 64) {
				_, _, _ = sm.Sample(i)
			}
		}
		s, err := ParseSummary(b)
		if err != nil {
			return
		}
		if got := s.Append(nil); !bytes.Equal(got, b) {
			t.Fatalf("Append(ParseSummary(b)) = %x, want %x", got, b)
		}
		sameSamples(t, s, b)
	})
}

// sameSamples checks that Samples over b reads s's samples.
func sameSamples(t *testing.T, s *Summary, b []byte) {
	t.Helper()
	sm, err := OpenSamples(bytes.NewReader(b), int64(len(b)), "Summary.db")
	if err != nil {
		t.Fatalf("OpenSamples of a summary ParseSummary accepts: %v", err)
	}
	if sm.Len() != len(s.Entries) || sm.MinIndexInterval != s.MinIndexInterval || sm.SamplingLevel != s.SamplingLevel {
		t.Fatalf("Samples: %d samples, interval %d, level %d; parsed %d, %d, %d", sm.Len(), sm.MinIndexInterval, sm.SamplingLevel,
			len(s.Entries), s.MinIndexInterval, s.SamplingLevel)
	}
	for i, e := range s.Entries {
		key, at, err := sm.Sample(i)
		if err != nil || !bytes.Equal(key, e.Key) || at != e.IndexPosition {
			t.Fatalf("sample %d: %x at %d (%v), parsed %x at %d", i, key, at, err, e.Key, e.IndexPosition)
		}
	}
}
