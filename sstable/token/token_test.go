package token

import (
	"encoding/hex"
	"math"
	"strconv"
	"testing"
)

// Test vectors from FORMAT.md §3.1 (checked against the fixtures' tokens and bloom filters).
func TestMurmur3TokenVectors(t *testing.T) {
	cases := []struct {
		keyHex string
		want   int64
	}{
		{"000010dd", -9223297786983086897},
		{"80", -5284281814142962636},
		{"fffe", -2002833339314343643},
		{"61", -8839064797231613815},
		{"30", 3083240331115144064},
		{"", math.MinInt64},
	}
	for _, c := range cases {
		key, _ := hex.DecodeString(c.keyHex)
		if got := Murmur3.Token(key).Long; got != c.want {
			t.Errorf("token(%s) = %d, want %d", c.keyHex, got, c.want)
		}
	}
}

func TestRangeContainsAndWrap(t *testing.T) {
	p := Murmur3
	rs, err := ParseRanges(p, "(-100,250], (300,-200]")
	if err != nil {
		t.Fatal(err)
	}
	tok := func(v int64) Token { return Token{Kind: KindMurmur3, Long: v} }
	cases := []struct {
		r    int
		v    int64
		want bool
	}{
		{0, -100, false}, {0, -99, true}, {0, 250, true}, {0, 251, false},
		{1, 300, false}, {1, 301, true}, {1, math.MaxInt64, true}, {1, math.MinInt64, true},
		{1, -200, true}, {1, -199, false}, {1, 0, false},
	}
	for _, c := range cases {
		if got := rs[c.r].Contains(tok(c.v)); got != c.want {
			t.Errorf("%s contains %d = %v, want %v", rs[c.r], c.v, got, c.want)
		}
	}
	if got := rs.String(); got != "(-100,250],(300,-200]" {
		t.Errorf("String = %q", got)
	}
	full := Range{tok(5), tok(5)}
	if !full.Contains(tok(math.MinInt64)) || !full.Contains(tok(5)) {
		t.Error("left == right must be the full ring")
	}
	u := rs[1].Unwrap(p.MinToken())
	if len(u) != 2 || u[0].String() != "(300,-9223372036854775808]" || u[1].String() != "(-9223372036854775808,-200]" {
		t.Errorf("unwrap = %v", u)
	}
}

func TestParseRangesRejectsGarbage(t *testing.T) {
	for _, s := range []string{"", "(1,2", "[1,2]", "(1;2]", "(a,2]", "(1,2],", "(1,2](3,4]"} {
		if _, err := ParseRanges(Murmur3, s); err == nil {
			t.Errorf("ParseRanges(%q) accepted", s)
		}
	}
	rs, err := ParseRanges(ByteOrdered, "(30,34]")
	if err != nil || !rs.Contains(ByteOrdered.Token([]byte("4"))) || rs.Contains(ByteOrdered.Token([]byte("0"))) {
		t.Errorf("byte-ordered range: %v %v", rs, err)
	}
}

func BenchmarkMurmur3Token16B(b *testing.B) {
	key := []byte("0123456789abcdef")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = Murmur3.Token(key)
	}
}

// TokenAndHash hashes once what Token and the bloom filter's Murmur3 x64-128 hash would
// each compute: the same token, and the same hash, for every key, the empty one (the
// minimum token, no hash) and a ByteOrdered key (no hash) included.
func TestTokenAndHash(t *testing.T) {
	keys := [][]byte{nil, {}, {0}, []byte("k"), []byte("a longer key of more than sixteen bytes, two blocks")}
	for i := 0; i < 200; i++ {
		keys = append(keys, []byte(strconv.Itoa(i*7919)))
	}
	for _, k := range keys {
		tok, h, ok := TokenAndHash(Murmur3, k)
		if tok.Compare(Murmur3.Token(k)) != 0 || tok.Kind != KindMurmur3 {
			t.Errorf("%q: token %v, want %v", k, tok, Murmur3.Token(k))
		}
		h0, h1 := Hash3x64_128(k, 0)
		if ok != (len(k) > 0) || (ok && h != [2]uint64{h0, h1}) {
			t.Errorf("%q: hash %x %v, want %x %x", k, h, ok, h0, h1)
		}
		if tok, _, ok := TokenAndHash(ByteOrdered, k); ok || tok.Compare(ByteOrdered.Token(k)) != 0 {
			t.Errorf("%q: ByteOrdered token %v (hash %v)", k, tok, ok)
		}
	}
}

// Within answers as RangeSet.Contains does, for tokens through ranges, gaps, the ring's end
// and a wrapping range, asked in increasing order and out of it.
func TestWithinIsContains(t *testing.T) {
	ranges, err := ParseRanges(Murmur3, "(-100,0],(10,20],(1000,-5000]")
	if err != nil {
		t.Fatal(err)
	}
	toks := []int64{math.MinInt64 + 1, -9000, -5000, -4999, -100, -99, 0, 1, 10, 11, 20, 21, 1000, 1001, 1 << 60, math.MaxInt64}
	w := ranges.Within()
	for _, order := range [][]int64{toks, {20, -9000, 1001, 5, 11, -5000}} {
		for _, v := range order {
			tk := Token{Kind: KindMurmur3, Long: v}
			if got, want := w.Holds(tk), ranges.Contains(tk); got != want {
				t.Errorf("token %d: Holds %v, Contains %v", v, got, want)
			}
		}
	}
}
