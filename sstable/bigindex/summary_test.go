package bigindex

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/encoding"
)

// The worked example of FORMAT.md §2.7 (legacy_nb_simple).
func TestParseSummaryOfLegacySimple(t *testing.T) {
	raw, _ := hex.DecodeString("00000080" + "00000001" + "000000000000000d" + "00000080" + "00000001" +
		"04000000" + "30" + "0000000000000000" + "00000001" + "30" + "00000001" + "34")
	s, err := ParseSummary(raw)
	if err != nil {
		t.Fatal(err)
	}
	if s.MinIndexInterval != 128 || s.SamplingLevel != 128 || s.SizeAtFullSampling != 1 || len(s.Entries) != 1 ||
		string(s.Entries[0].Key) != "0" || s.Entries[0].IndexPosition != 0 || string(s.First) != "0" || string(s.Last) != "4" {
		t.Fatalf("parsed %+v", s)
	}
	if s.OffHeapSize() != 13 || s.Size() != len(raw) {
		t.Fatalf("OffHeapSize %d Size %d", s.OffHeapSize(), s.Size())
	}
}

func TestSummaryRoundTripsEveryFixture(t *testing.T) {
	for _, f := range bigFixtures(t) {
		raw := f.Read(t, "Summary.db")
		s, err := ParseSummary(raw)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if got := s.Append(nil); !bytes.Equal(got, raw) {
			t.Fatalf("%s: Append differs from Summary.db", f.Name)
		}
	}
}

// Summary.db rebuilt from nothing but an Index.db pass is byte-identical to Cassandra's.
func TestSummaryRebuiltFromIndexIsByteIdentical(t *testing.T) {
	for _, f := range bigFixtures(t) {
		raw := f.Read(t, "Summary.db")
		sb := NewSummaryBuilder(DefaultMinIndexInterval)
		it := NewIterator(f.Read(t, "Index.db"))
		var first, last []byte
		for it.Next() {
			e := it.Entry()
			if first == nil {
				first = e.Key
			}
			last = e.Key
			sb.Add(e.Key, e.Offset)
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
		var w bytes.Buffer
		if err := sb.Encode(&w, first, last); err != nil || !bytes.Equal(w.Bytes(), raw) {
			t.Fatalf("%s: encoded summary\n%x\nwant\n%x (%v)", f.Name, w.Bytes(), raw, err)
		}
	}
}

// Sampled keys are copies, every interval-th partition is sampled, and an announced count
// (right, too small, absurdly large) changes nothing in the result.
func TestSummaryBuilderSamplesEveryIntervalAndCopiesKeys(t *testing.T) {
	for _, expect := range []int64{0, 10, 1, 1 << 40} {
		sb := NewSummaryBuilder(4)
		sb.Expect(expect)
		key := make([]byte, 1)
		for i := range 10 {
			key[0] = byte('a' + i)
			sb.Add(key, int64(100*i)) // the caller reuses key: sampled keys must be copies
		}
		s := encodeParse(t, sb, []byte("a"), []byte("j"))
		var got []string
		for _, e := range s.Entries {
			got = append(got, string(e.Key)+":"+string(rune('0'+e.IndexPosition/100)))
		}
		if strings.Join(got, " ") != "a:0 e:4 i:8" || s.SizeAtFullSampling != 3 || s.MinIndexInterval != 4 || sb.Count() != 10 {
			t.Fatalf("expecting %d: samples %v, size at full sampling %d", expect, got, s.SizeAtFullSampling)
		}
	}
}

func TestVerifySummaryAgreesOnEveryFixture(t *testing.T) {
	for _, f := range bigFixtures(t) {
		s, err := ParseSummary(f.Read(t, "Summary.db"))
		if err != nil {
			t.Fatal(err)
		}
		raw := f.Read(t, "Index.db")
		for _, src := range []Source{NewIterator(raw), NewScanner(bytes.NewReader(raw), 32)} {
			ms, err := VerifySummary(s, src)
			if err != nil || len(ms) != 0 {
				t.Fatalf("%s: %v %v", f.Name, ms, err)
			}
		}
	}
}

func TestVerifySummaryReportsEachDisagreement(t *testing.T) {
	var f = bigFixtures(t)[0]
	for _, c := range bigFixtures(t) {
		if strings.HasSuffix(c.Name, "oa-13-big") {
			f = c
		}
	}
	index := f.Read(t, "Index.db")
	fresh := func() *Summary {
		s, err := ParseSummary(f.Read(t, "Summary.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cases := []struct {
		name   string
		mutate func(s *Summary)
		sample int
		says   string
	}{
		{"wrong key", func(s *Summary) { s.Entries[3].Key = []byte{1, 2, 3, 4} }, 3, "sample key 01020304"},
		{"position inside an entry", func(s *Summary) { s.Entries[5].IndexPosition++ }, 5, "no index entry starts"},
		{"position past the end", func(s *Summary) { s.Entries[78].IndexPosition = int64(len(index)) + 10 }, 78, "past the last"},
		{"first key", func(s *Summary) { s.First = []byte{9} }, -1, "first key 09"},
		{"last key", func(s *Summary) { s.Last = nil }, -1, "last key"},
		{"sample at the wrong ordinal", func(s *Summary) {
			// sample 2 pointing at partition 257 (a real entry, the right key) is still wrong
			it := NewIterator(index)
			for n := 0; it.Next(); n++ {
				if n == 257 {
					s.Entries[2] = SummaryEntry{Key: append([]byte(nil), it.Entry().Key...), IndexPosition: it.Entry().Offset}
				}
			}
		}, 2, "partition 257, want 256"},
		{"size at full sampling", func(s *Summary) { s.SizeAtFullSampling = 80 }, -1, "want 79 for 10000"},
	}
	for _, c := range cases {
		s := fresh()
		c.mutate(s)
		ms, err := VerifySummary(s, NewIterator(index))
		if err != nil || len(ms) != 1 || ms[0].Sample != c.sample || !strings.Contains(ms[0].String(), c.says) {
			t.Errorf("%s: got %v %v; want one mismatch at sample %d saying %q", c.name, ms, err, c.sample, c.says)
		}
	}
	// A broken Index.db is an error, not a mismatch.
	if _, err := VerifySummary(fresh(), NewIterator(index[:len(index)-1])); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated index: got %v", err)
	}
}

func TestParseSummaryRejectsInconsistentLayouts(t *testing.T) {
	good := (&Summary{MinIndexInterval: 128, SamplingLevel: 128, SizeAtFullSampling: 2,
		Entries: []SummaryEntry{{Key: []byte("a"), IndexPosition: 0}, {Key: []byte("b"), IndexPosition: 7}},
		First:   []byte("a"), Last: []byte("z")}).Append(nil)
	if _, err := ParseSummary(good); err != nil {
		t.Fatal(err)
	}
	patch := func(at int, v ...byte) []byte {
		b := append([]byte(nil), good...)
		copy(b[at:], v)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		is   error
		says string
	}{
		{"empty", nil, ErrTruncated, ""},
		{"zero min index interval", patch(0, 0, 0, 0, 0), ErrMalformed, "min index interval"},
		{"sampling level 0", patch(16, 0, 0, 0, 0), ErrMalformed, "sampling level"},
		{"sampling level 129", patch(16, 0, 0, 0, 129), ErrMalformed, "sampling level"},
		{"negative count", patch(4, 0xff, 0xff, 0xff, 0xff), ErrMalformed, "negative"},
		{"off-heap past the end", patch(8, 0, 0, 0, 1, 0, 0, 0, 0), ErrMalformed, "off-heap"},
		{"huge count", patch(4, 0, 0, 0, 200), ErrMalformed, "off-heap"},
		{"first offset gap", patch(24, 9, 0, 0, 0), ErrMalformed, "first offset"},
		{"big-endian offsets", patch(24, 0, 0, 0, 8), ErrMalformed, "first offset"},
		{"entry shorter than 8", patch(28, 10, 0, 0, 0), ErrMalformed, "entry 0"},
		{"offset past off-heap", patch(28, 99, 0, 0, 0), ErrMalformed, "entry"},
		{"trailing byte", append(append([]byte(nil), good...), 0), ErrMalformed, "trailing"},
		{"truncated last key", good[:len(good)-1], ErrTruncated, ""},
	}
	for _, c := range cases {
		_, err := ParseSummary(c.b)
		var oe *encoding.OffsetError
		if !errors.Is(err, c.is) || !errors.As(err, &oe) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got %v, want %v saying %q", c.name, err, c.is, c.says)
		}
	}
}

// A builder that spills writes the Summary.db one that keeps its samples in memory writes, and
// what it holds in memory is its unspilled tail of entries and of their sizes.
func TestSummaryBuilderSpillsIntoAnUnnamedFileAndEncodesTheSame(t *testing.T) {
	defer func(old, oldSizes int) { spillBytes, spillSizes = old, oldSizes }(spillBytes, spillSizes)
	spillBytes, spillSizes = 1000, 300
	dir := t.TempDir()
	opened := 0
	kept, spilling := NewSummaryBuilder(4), NewSummaryBuilder(4)
	spilling.SpillTo(func() (*os.File, error) { opened++; return fsx.Scratch(dir) })
	key := make([]byte, 0, 32)
	for i := range 100_000 {
		key = fmt.Appendf(key[:0], "key-%08d-%d", i, i%7)
		kept.Add(key, int64(30*i))
		spilling.Add(key, int64(30*i))
	}
	if opened != 2 || len(spilling.entries) >= spillBytes+32 || spilling.spilled == 0 || len(spilling.sizes) >= spillSizes ||
		spilling.sizesSpilled == 0 {
		t.Fatalf("opened %d spill files, %d bytes of entries in memory, %d spilled; %d sizes in memory, %d spilled",
			opened, len(spilling.entries), spilling.spilled, len(spilling.sizes), spilling.sizesSpilled)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("the spill file has a name: %v", names)
	}
	var want, got bytes.Buffer
	if err := kept.Encode(&want, []byte("first"), []byte("last")); err != nil {
		t.Fatal(err)
	}
	if err := spilling.Encode(&got, []byte("first"), []byte("last")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("spilled summary of %d bytes differs from the in-memory one of %d", got.Len(), want.Len())
	}
	s, err := ParseSummary(want.Bytes())
	if err != nil || len(s.Entries) != 25_000 || !bytes.Equal(s.Append(nil), want.Bytes()) {
		t.Fatalf("%d samples, %v", len(s.Entries), err)
	}
	if spilling.spill != nil || spilling.sizeSpill != nil {
		t.Fatal("Encode left a spill file open")
	}
}

// A spill that cannot be opened fails Encode with the reason, not a short summary.
func TestSummaryBuilderSpillFailureFailsEncode(t *testing.T) {
	defer func(old int) { spillBytes = old }(spillBytes)
	spillBytes = 100
	sb := NewSummaryBuilder(1)
	sb.SpillTo(func() (*os.File, error) { return nil, errors.New("disk on fire") })
	for i := range 1000 {
		sb.Add(fmt.Appendf(nil, "key-%d", i), int64(i))
	}
	err := sb.Encode(io.Discard, []byte("a"), []byte("b"))
	if err == nil || !strings.Contains(err.Error(), "summary spill: disk on fire") {
		t.Fatalf("got %v", err)
	}
	if len(sb.sizes) > 20 {
		t.Fatalf("kept sampling after the spill failed: %d samples", len(sb.sizes))
	}
}

// encodeParse is sb's Summary.db, parsed.
func encodeParse(t *testing.T, sb *SummaryBuilder, first, last []byte) *Summary {
	t.Helper()
	var w bytes.Buffer
	if err := sb.Encode(&w, first, last); err != nil {
		t.Fatal(err)
	}
	s, err := ParseSummary(w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Samples reads every fixture's samples as ParseSummary parses them, and fails, naming the
// file, on a summary cut short or with an offset outside its entries.
func TestSamplesReadWhatParseSummaryParses(t *testing.T) {
	for _, f := range bigFixtures(t) {
		b := f.Read(t, "Summary.db")
		s, err := ParseSummary(b)
		if err != nil {
			t.Fatal(err)
		}
		sameSamples(t, s, b)
		if len(s.Entries) == 0 {
			continue
		}
		cut, err := OpenSamples(bytes.NewReader(b[:summaryHeaderSize+4]), int64(summaryHeaderSize+4), "cut-Summary.db")
		if err == nil {
			_, _, err = cut.Sample(len(s.Entries) - 1)
		}
		if err == nil || !strings.Contains(err.Error(), "cut-Summary.db") {
			t.Errorf("%s: a cut summary: %v", f.Name, err)
		}
		bad := bytes.Clone(b)
		bad[summaryHeaderSize] ^= 0x40 // the first offset
		sm, err := OpenSamples(bytes.NewReader(bad), int64(len(bad)), "bad-Summary.db")
		if err == nil {
			_, _, err = sm.Sample(0)
		}
		if err == nil || !strings.Contains(err.Error(), "bad-Summary.db") {
			t.Errorf("%s: a summary whose first offset is wrong: %v", f.Name, err)
		}
	}
}
