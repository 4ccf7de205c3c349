package bti

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

func TestAppendEscaped(t *testing.T) {
	// ByteSource.java's examples: A00B -> 4100FEFF4200, A0B0 -> 4100FF4200FE, A0 -> 4100FE.
	for _, tc := range []struct{ in, want string }{
		{"", "00"},
		{"41", "4100"},
		{"410000", "4100fefe"},
		{"41000042", "4100feff4200"},
		{"41004200", "4100ff4200fe"},
		{"4100", "4100fe"},
		{"00", "00fe"},
		{"ff00ff", "ff00ffff00"},
	} {
		in, _ := hex.DecodeString(tc.in)
		if got := hex.EncodeToString(appendEscaped(nil, in)); got != tc.want {
			t.Errorf("escape(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// appendEscaped writes what the byte-by-byte escape of ByteSource.AbstractReinterpreter
// does, for runs of zeros anywhere.
func TestAppendEscapedMatchesByteByByte(t *testing.T) {
	ref := func(b []byte) []byte {
		var dst []byte
		escaped := false
		for _, c := range b {
			if escaped {
				if c == 0 {
					dst = append(dst, 0xFE)
					continue
				}
				dst = append(dst, 0xFF)
				escaped = false
			}
			dst = append(dst, c)
			escaped = c == 0
		}
		if escaped {
			return append(dst, 0xFE)
		}
		return append(dst, 0)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, rnd.IntN(12))
		for i := range b {
			if rnd.IntN(3) > 0 {
				b[i] = byte(rnd.IntN(3)) // zeros, ones and twos: runs of zeros of every length
			} else {
				b[i] = byte(rnd.IntN(256))
			}
		}
		if got, want := appendEscaped([]byte{7}, b), append([]byte{7}, ref(b)...); !bytes.Equal(got, want) {
			t.Fatalf("escape(%x) = %x, want %x", b, got[1:], want[1:])
		}
	}
}

func TestAppendDecoratedKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		tok  token.Token
		key  []byte
		want string
	}{
		{"byte ordered", token.ByteOrdered.Token([]byte("0")), []byte("0"), "40300040300038"},
		{"byte ordered with zero", token.ByteOrdered.Token([]byte{0, 1}), []byte{0, 1}, "4000ff01004000ff010038"},
		{"murmur3 min", token.Token{Kind: token.KindMurmur3, Long: -1 << 63}, []byte{}, "4000000000000000004000" + "38"},
		{"murmur3 -1", token.Token{Kind: token.KindMurmur3, Long: -1}, []byte("a"), "407fffffffffffffff40610038"},
		{"murmur3 1", token.Token{Kind: token.KindMurmur3, Long: 1}, []byte("a"), "40800000000000000140610038"},
	} {
		if got := hex.EncodeToString(AppendDecoratedKey(nil, tc.tok, tc.key)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestAppendDecoratedKeyOrdersLikeDecoratedKeys(t *testing.T) {
	keys := [][]byte{{}, {0}, {0, 0}, {0, 1}, {1}, []byte("a"), []byte("ab"), {0xff}, {0xff, 0}}
	for _, p := range []token.Partitioner{token.Murmur3, token.ByteOrdered} {
		for _, a := range keys {
			for _, b := range keys {
				ta, tb := p.Token(a), p.Token(b)
				want := token.CompareKeys(ta, a, tb, b)
				got := bytes.Compare(AppendDecoratedKey(nil, ta, a), AppendDecoratedKey(nil, tb, b))
				if got != want {
					t.Errorf("%s %x vs %x: comparable order %d, key order %d", p.Name(), a, b, got, want)
				}
			}
		}
	}
}

func TestAppendDecoratedKeyAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 64)
	key := []byte("partition-key")
	tok := token.Murmur3.Token(key)
	if n := testing.AllocsPerRun(100, func() { buf = AppendDecoratedKey(buf[:0], tok, key) }); n != 0 {
		t.Errorf("%v allocations per call", n)
	}
}

func TestAppendClusteringComparable(t *testing.T) {
	types := []string{utf8Type, "BytesType"}
	for _, tc := range []struct {
		values [][]byte
		kind   ClusteringKind
		want   string
	}{
		{[][]byte{[]byte("A"), {0, 5}}, Clustering, "40410040" + "00ff0500" + "38"},
		{[][]byte{[]byte("A")}, ExclStartBound, "40410060"},
		{[][]byte{[]byte("A")}, InclStartBound, "40410020"},
		{[][]byte{{}, nil}, Clustering, "40003f38"},
		{nil, StaticClustering, "18"},
		{nil, InclEndBound, "60"},
	} {
		got, err := AppendClusteringComparable(nil, types, tc.values, tc.kind)
		if err != nil || hex.EncodeToString(got) != tc.want {
			t.Errorf("%q kind %d: %x, %v; want %s", tc.values, tc.kind, got, err, tc.want)
		}
	}
	// Int32Type flips the sign bit; ReversedType inverts its base's bytes; an empty number is
	// NEXT_COMPONENT_EMPTY (0x3F), reversed NEXT_COMPONENT_EMPTY_REVERSED (0x41).
	const i32, rev = "org.apache.cassandra.db.marshal.Int32Type", "org.apache.cassandra.db.marshal.ReversedType("
	for _, tc := range []struct {
		types  []string
		values [][]byte
		want   string
	}{
		{[]string{i32}, [][]byte{{0, 0, 0, 1}}, "408000000138"},
		{[]string{i32}, [][]byte{{0xff, 0xff, 0xff, 0xfe}}, "407ffffffe38"},
		{[]string{rev + i32 + ")"}, [][]byte{{0, 0, 0, 1}}, "407ffffffe38"},
		{[]string{rev + utf8Type + ")"}, [][]byte{[]byte("A")}, "40beff38"},
		{[]string{i32, rev + i32 + ")"}, [][]byte{{}, {}}, "3f4138"},
	} {
		got, err := AppendClusteringComparable(nil, tc.types, tc.values, Clustering)
		if err != nil || hex.EncodeToString(got) != tc.want {
			t.Errorf("%q %x: %x, %v; want %s", tc.types, tc.values, got, err, tc.want)
		}
	}
	if _, err := AppendClusteringComparable(nil, []string{"org.apache.cassandra.db.marshal.LongType"}, [][]byte{make([]byte, 8)}, Clustering); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("LongType: %v, want ErrUnsupportedType", err)
	}
	if _, err := AppendClusteringComparable(nil, []string{i32}, [][]byte{{1, 2}}, Clustering); !errors.Is(err, ErrInvalid) {
		t.Errorf("2-byte Int32Type: %v, want ErrInvalid", err)
	}
	if _, err := AppendClusteringComparable(nil, []string{utf8Type}, [][]byte{{1}, {2}}, Clustering); !errors.Is(err, ErrInvalid) {
		t.Errorf("too many values: %v, want ErrInvalid", err)
	}
}

// A key's form lies above AppendTokenBound(t) exactly when its token is above t, and every
// prefix of the form that ComparePrefix decides on says the same; an undecided prefix is a
// proper prefix of the bound. Murmur3 and ByteOrdered keys (with zero bytes, empty, prefixes
// of one another) against tokens equal to, next to and far from theirs.
func TestTokenBoundOrdersKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	var keys [][]byte
	for _, k := range []string{"", "00", "0000", "0001", "01", "30", "3000", "30ff", "31", "ff", "ff00", "ffff"} {
		b, _ := hex.DecodeString(k)
		keys = append(keys, b)
	}
	for range 200 {
		k := make([]byte, rng.IntN(6))
		for i := range k {
			k[i] = []byte{0, 1, 0x40, 0xfe, 0xff, byte(rng.Uint32())}[rng.IntN(6)]
		}
		keys = append(keys, k)
	}
	for _, p := range []token.Partitioner{token.Murmur3, token.ByteOrdered} {
		var bounds []token.Token
		for _, k := range keys {
			tk := p.Token(k)
			bounds = append(bounds, tk)
			if tk.Kind == token.KindMurmur3 {
				bounds = append(bounds, token.Token{Kind: tk.Kind, Long: tk.Long - 1}, token.Token{Kind: tk.Kind, Long: tk.Long + 1})
			} else {
				bounds = append(bounds, token.Token{Kind: tk.Kind, Bytes: append(bytes.Clone(tk.Bytes), 0)})
			}
		}
		bounds = append(bounds, p.MinToken())
		for _, k := range keys {
			tk := p.Token(k)
			form := AppendDecoratedKey(nil, tk, k)
			for _, b := range bounds {
				bound := AppendTokenBound(nil, b)
				want := 1
				if tk.Compare(b) <= 0 {
					want = -1
				}
				if got := bytes.Compare(form, bound); got != want {
					t.Fatalf("%x (token %s) against the bound of %s: %d, want %d", k, tk, b, got, want)
				}
				for n := 0; n <= len(form); n++ {
					got := ComparePrefix(form[:n], bound)
					if got != 0 && got != want || got == 0 && (n >= len(bound) || !bytes.HasPrefix(bound, form[:n])) {
						t.Fatalf("%x (token %s), prefix %x against the bound of %s (%x): %d, want %d or 0 for a prefix of it",
							k, tk, form[:n], b, bound, got, want)
					}
				}
			}
		}
	}
}
