package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// filterFixtures is every fixture sstable with a Filter.db (all of them, BIG and BTI), with
// whether its version uses the old (byte-reversed) layout.
func filterFixtures(t testing.TB) (out []fixtures.SSTable, old []bool) {
	t.Helper()
	for _, s := range fixtures.All(t) {
		if !s.Has("Filter.db") {
			continue
		}
		f, err := version.ParseFormat(s.Format)
		if err != nil {
			t.Fatal(err)
		}
		v, err := version.Parse(f, s.Version)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
		old = append(old, v.HasOldBfFormat())
	}
	if len(out) < 34 {
		t.Fatalf("found %d fixtures with Filter.db, want the full set", len(out))
	}
	return out, old
}

func TestEveryFixtureKeyMayBePresent(t *testing.T) {
	all, old := filterFixtures(t)
	for i, s := range all {
		f, err := Parse(s.Read(t, "Filter.db"), old[i])
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		for _, k := range s.Keys(t) {
			if !f.MayContain(k.Key) {
				t.Fatalf("%s: key %x missing from its filter", s.Name, k.Key)
			}
		}
	}
}

func TestFilterRoundTripsInItsOwnLayout(t *testing.T) {
	all, old := filterFixtures(t)
	sawOld, sawNew := false, false
	for i, s := range all {
		raw := s.Read(t, "Filter.db")
		f, err := Parse(raw, old[i])
		if err != nil {
			t.Fatal(err)
		}
		got := f.Append(nil)
		if old[i] {
			got = f.AppendOld(nil)
			sawOld = true
		} else {
			sawNew = true
		}
		if !bytes.Equal(got, raw) || f.Size() != len(raw) {
			t.Fatalf("%s (old format %v): re-encoded filter differs", s.Name, old[i])
		}
		var w bytes.Buffer
		if err := f.Encode(&w, old[i]); err != nil || !bytes.Equal(w.Bytes(), raw) {
			t.Fatalf("%s (old format %v): written filter differs (%v)", s.Name, old[i], err)
		}
	}
	// A filter of more words than one write holds is written whole, in order.
	big := NewSized(3, 20000)
	for i := range big.Words {
		big.Words[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	for _, o := range []bool{false, true} {
		var w bytes.Buffer
		want := big.Append(nil)
		if o {
			want = big.AppendOld(nil)
		}
		if err := big.Encode(&w, o); err != nil || !bytes.Equal(w.Bytes(), want) {
			t.Fatalf("20000-word filter (old format %v): written filter differs from Append (%v)", o, err)
		}
	}
	if !sawOld || !sawNew {
		t.Fatal("fixtures must cover both layouts")
	}
}

// A filter rebuilt from the keys alone, with the file's hash count and word count, is the
// file: the bit-index rules and both layouts are exactly Cassandra's.
func TestFilterRebuiltFromKeysIsByteIdentical(t *testing.T) {
	all, old := filterFixtures(t)
	for i, s := range all {
		raw := s.Read(t, "Filter.db")
		f, err := Parse(raw, old[i])
		if err != nil {
			t.Fatal(err)
		}
		rebuilt := NewSized(f.HashCount, len(f.Words))
		for _, k := range s.Keys(t) {
			rebuilt.Add(k.Key)
		}
		got := rebuilt.Append(nil)
		if old[i] {
			got = rebuilt.AppendOld(nil)
		}
		if !bytes.Equal(got, raw) {
			t.Fatalf("%s: rebuilt filter differs", s.Name)
		}
	}
}

// Under Murmur3 the token hash is the filter hash: AddHash with the token's (h0, h1) sets the
// same bits as Add.
func TestAddHashReusesTheMurmur3TokenHash(t *testing.T) {
	var s fixtures.SSTable
	for _, c := range fixtures.All(t) {
		if strings.HasSuffix(c.Name, "oa-13-big") {
			s = c
		}
	}
	keys := s.Keys(t)
	byKey, byHash := NewSized(5, 1555), NewSized(5, 1555)
	for _, k := range keys {
		h0, h1 := token.Hash3x64_128(k.Key, 0)
		if tok := token.Murmur3.Token(k.Key); tok.String() != k.Token || tok.Long != int64(h0) {
			t.Fatalf("key %x: token %s, h0 %d, keys.tsv %s", k.Key, tok, int64(h0), k.Token)
		}
		byKey.Add(k.Key)
		byHash.AddHash(h0, h1)
		if !byHash.MayContainHash(h0, h1) {
			t.Fatalf("key %x absent right after AddHash", k.Key)
		}
	}
	if !bytes.Equal(byKey.Append(nil), byHash.Append(nil)) || !bytes.Equal(byKey.Append(nil), s.Read(t, "Filter.db")) {
		t.Fatal("AddHash and Add disagree, or differ from the fixture")
	}
}

func TestMayContainRejectsKeysWhoseBitsAreClear(t *testing.T) {
	f := NewSized(3, 4)
	if f.MayContain([]byte("x")) {
		t.Fatal("empty filter claims a key")
	}
	f.Add([]byte("x"))
	h0, h1 := Hash([]byte("x"))
	set := 0
	for _, w := range f.Words {
		for ; w != 0; w &= w - 1 {
			set++
		}
	}
	if set < 1 || set > 3 || !f.MayContainHash(h0, h1) {
		t.Fatalf("one key with 3 hashes set %d bits", set)
	}
	// Bit i is bit i&7 of byte i>>3 in the new layout: check one of the key's bits by hand.
	i := javaIndex(int64(h1), 256)
	raw := f.Append(nil)[8:]
	if raw[i>>3]&(1<<(i&7)) == 0 {
		t.Fatalf("bit %d not at byte %d bit %d", i, i>>3, i&7)
	}
}

func TestComputeSpecMatchesBloomCalculations(t *testing.T) {
	cases := []struct {
		n           int64
		fp          float64
		k, buckets  int
		unsatisfied bool
	}{
		{1000, 0.01, 5, 10, false},  // the default
		{1000, 0.1, 3, 5, false},    // LCS default: 0.092 at k=3..4, lowering stops at 3
		{1000, 0.05, 3, 7, false},   // 7 buckets: 0.0347 at k=5, relaxed while <= 0.05
		{1000, 0.001, 7, 15, false}, // probs[15][7] == 0.001 exactly: <= keeps relaxing to 7
		{1000, 0.392, 1, 3, false},  // just under the trivial branch
		{1000, 0.393, 2, 1, false},  // trivial branch: BloomSpecification(2, optK[2] = 1)
		{1000, 0.9, 2, 1, false},
		{1, MinFPChance, 14, 20, false},
		{1, 6.7e-05, 0, 0, true}, // below what 20 buckets per element reach
		{math.MaxInt64 / 4, 0.01, 0, 0, true},
		{math.MaxInt64 / 4, 0.2, 2, 4, false}, // only 4 buckets allowed; 0.155 at k=2 still meets 0.2
		{math.MaxInt64, 0.5, 2, 1, false},     // 1 bucket allowed: the trivial branch, as in Java
		{1000, 1.0, 0, 0, true},
		{1000, 0, 0, 0, true},
		{1000, math.NaN(), 0, 0, true},
	}
	for _, c := range cases {
		k, b, err := ComputeSpec(c.n, c.fp)
		if c.unsatisfied {
			if !errors.Is(err, ErrSpec) {
				t.Errorf("ComputeSpec(%d, %v) = %d, %d, %v; want ErrSpec", c.n, c.fp, k, b, err)
			}
			continue
		}
		if err != nil || k != c.k || b != c.buckets {
			t.Errorf("ComputeSpec(%d, %v) = K %d, %d buckets, %v; want K %d, %d buckets", c.n, c.fp, k, b, err, c.k, c.buckets)
		}
	}
}

func TestOptimalHashCountsPerBucket(t *testing.T) {
	last := probs[len(probs)-1]
	if last[len(last)-1] != MinFPChance {
		t.Errorf("MinFPChance %v is not the table's last cell %v", MinFPChance, last[len(last)-1])
	}
	want := []int{1, 1, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 8, 9, 10, 10, 11, 12, 12, 13, 14}
	for b, k := range want {
		if optK[b] != k {
			t.Errorf("optK[%d] = %d, want %d", b, optK[b], k)
		}
	}
}

func TestNewSizesLikeFilterFactory(t *testing.T) {
	cases := []struct {
		n         int64
		fp        float64
		k, words  int
		rationale string
	}{
		{10000, 0.01, 5, 1563, "100,020 bits"},
		{35, 0.01, 5, 6, "370 bits: datasets.iris md-1-big has exactly this"},
		{1, 0.01, 5, 1, "30 bits"},
		{0, 0.1, 3, 1, "20 bits of excess alone"},
		{100, 0.5, 2, 2, "120 bits at 1 bucket per element"},
	}
	for _, c := range cases {
		f, err := New(c.n, c.fp)
		if err != nil || f.HashCount != c.k || len(f.Words) != c.words {
			t.Errorf("New(%d, %v): %+v %v; want K %d, %d words (%s)", c.n, c.fp, f, err, c.k, c.words, c.rationale)
		}
	}
	if !Needed(0.01) || Needed(1.0) {
		t.Error("Needed: only fp chance 1.0 means no filter")
	}
	if _, err := New(10, 1.0); !errors.Is(err, ErrSpec) {
		t.Errorf("New at fp 1.0: %v, want ErrSpec", err)
	}
	if _, err := WordCount(math.MaxInt64/2, 10); !errors.Is(err, ErrSpec) {
		t.Errorf("overflowing WordCount: %v", err)
	}
	if _, err := WordCount(1<<40, 10); !errors.Is(err, ErrSpec) {
		t.Errorf("WordCount past OffHeapBitSet's 2^31-1 words: %v", err)
	}
	if _, err := New(math.MaxInt64, 0.5); !errors.Is(err, ErrSpec) {
		t.Errorf("New with 2^63-1 keys: %v, want ErrSpec", err)
	}
}

func TestParseRejectsMalformedFilters(t *testing.T) {
	header := func(k, words int32) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(k)), uint32(words))
	}
	oneWord := append(header(3, 1), make([]byte, 8)...)
	cases := []struct {
		name string
		b    []byte
		is   error
		says string
	}{
		{"empty", nil, ErrTruncated, ""},
		{"words past the end", append(header(3, 2), make([]byte, 8)...), ErrTruncated, "words"},
		{"negative words", header(3, -1), ErrMalformed, "negative"},
		{"no words", header(3, 0), ErrMalformed, "no words"},
		{"zero hashes", append(header(0, 1), make([]byte, 8)...), ErrMalformed, "hash count"},
		{"huge hash count", append(header(1<<30, 1), make([]byte, 8)...), ErrMalformed, "hash count"},
		{"trailing byte", append(oneWord, 0), ErrMalformed, "trailing"},
	}
	for _, c := range cases {
		_, err := Parse(c.b, false)
		var oe *encoding.OffsetError
		if !errors.Is(err, c.is) || !errors.As(err, &oe) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got %v, want %v saying %q", c.name, err, c.is, c.says)
		}
	}
}

func FuzzParseFilter(f *testing.F) {
	all, old := filterFixtures(f)
	for i, s := range all {
		f.Add(s.Read(f, "Filter.db"), old[i], []byte("k"))
	}
	f.Fuzz(func(t *testing.T, b []byte, oldFormat bool, key []byte) {
		flt, err := Parse(b, oldFormat)
		if err != nil {
			return
		}
		got := flt.Append(nil)
		if oldFormat {
			got = flt.AppendOld(nil)
		}
		if !bytes.Equal(got, b) {
			t.Fatal("re-encoded filter differs from its input")
		}
		flt.Add(key)
		if !flt.MayContain(key) {
			t.Fatal("added key absent")
		}
	})
}

func BenchmarkBloomAdd(b *testing.B) {
	f, err := New(1_000_000, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	key := make([]byte, 16)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		binary.LittleEndian.PutUint64(key, i)
		f.Add(key)
		i++
	}
}

func BenchmarkBloomMayContain(b *testing.B) {
	f, err := New(1_000_000, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	key := make([]byte, 16)
	for i := range uint64(1_000_000) {
		binary.LittleEndian.PutUint64(key, i)
		f.Add(key)
	}
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		binary.LittleEndian.PutUint64(key, i%2_000_000)
		f.MayContain(key)
		i++
	}
}

// A filter outside the heap is New's filter: same sizes, same bits for the same keys, the same
// bytes written; Free releases it (and is harmless on a heap filter or twice).
func TestNewOffHeapIsNew(t *testing.T) {
	for _, n := range []int64{100, 2_000_000} { // under and over the mapping threshold
		a, err := New(n, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewOffHeap(n, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		key := make([]byte, 8)
		for i := range 5000 {
			binary.BigEndian.PutUint64(key, uint64(i)*7919)
			a.Add(key)
			b.Add(key)
		}
		if !a.Equal(b) || !bytes.Equal(a.Append(nil), b.Append(nil)) {
			t.Fatalf("%d elements: the off-heap filter differs from New's", n)
		}
		if !b.MayContain(key) {
			t.Fatalf("%d elements: the off-heap filter lost a key", n)
		}
		b.Free()
		b.Free()
		a.Free()
		// Only a filter of a MiB or more is mapped; Free leaves one on the heap as it is.
		if mapped := n >= 2_000_000; (b.Words == nil) != mapped || len(a.Words) == 0 {
			t.Fatalf("%d elements: after Free, %d words of the NewOffHeap filter and %d of New's", n, len(b.Words), len(a.Words))
		}
	}
}
