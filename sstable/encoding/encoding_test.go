package encoding

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestUVintMatchesCassandraSizes(t *testing.T) {
	cases := []struct {
		v    uint64
		want []byte
	}{
		{0, []byte{0x00}},
		{127, []byte{0x7f}},
		{128, []byte{0x80, 0x80}},
		{0x3fff, []byte{0xbf, 0xff}},
		{0x4000, []byte{0xc0, 0x40, 0x00}},
		{math.MaxUint64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, c := range cases {
		got := AppendUVint(nil, c.v)
		if !bytes.Equal(got, c.want) {
			t.Errorf("AppendUVint(%d) = %x, want %x", c.v, got, c.want)
		}
		if UVintSize(c.v) != len(c.want) {
			t.Errorf("UVintSize(%d) = %d, want %d", c.v, UVintSize(c.v), len(c.want))
		}
		v, n := UVint(got)
		if v != c.v || n != len(got) {
			t.Errorf("UVint(%x) = %d,%d", got, v, n)
		}
	}
}

func TestUVintRoundTripAllWidths(t *testing.T) {
	for shift := 0; shift < 64; shift++ {
		for _, v := range []uint64{1 << uint(shift), 1<<uint(shift) - 1, 1<<uint(shift) + 1} {
			enc := AppendUVint(nil, v)
			got, n := UVint(enc)
			if got != v || n != len(enc) {
				t.Fatalf("round trip %d: got %d n=%d enc=%x", v, got, n, enc)
			}
			// Padded (non-minimal) forms decode to the same value.
			for w := len(enc); w <= 9; w++ {
				p := AppendUVintWidth(nil, v, w)
				got, n := UVint(p)
				if got != v || n != w {
					t.Fatalf("padded width %d of %d: got %d n=%d enc=%x", w, v, got, n, p)
				}
			}
		}
	}
}

func TestSignedVintZigZag(t *testing.T) {
	for _, v := range []int64{0, -1, 1, -65536, 65536, math.MinInt64, math.MaxInt64} {
		enc := AppendVint(nil, v)
		got, n := Vint(enc)
		if got != v || n != len(enc) || VintSize(v) != len(enc) {
			t.Errorf("vint %d: got %d n=%d size=%d enc=%x", v, got, n, VintSize(v), enc)
		}
	}
	if got := AppendVint(nil, -1); !bytes.Equal(got, []byte{1}) {
		t.Errorf("zigzag(-1) = %x, want 01", got)
	}
}

func TestReaderTruncationIsStickyAndLocated(t *testing.T) {
	r := NewReaderAt([]byte{0, 5, 'a', 'b'}, 100)
	_ = r.ShortBytes()
	if !errors.Is(r.Err(), ErrTruncated) {
		t.Fatalf("want ErrTruncated, got %v", r.Err())
	}
	var oe *OffsetError
	if !errors.As(r.Err(), &oe) || oe.Offset != 102 {
		t.Fatalf("want offset 102, got %v", r.Err())
	}
	if r.U64() != 0 || r.Len() != 0 {
		t.Fatal("reads after failure must return zero values")
	}
}

func TestReaderCountRejectsHostileLengths(t *testing.T) {
	r := NewReader([]byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3})
	if n := r.Count("things", 8); n != -1 || r.Err() == nil {
		t.Fatalf("count = %d err=%v; want rejection", n, r.Err())
	}
	r = NewReader([]byte{0xff, 0xff, 0xff, 0xff})
	if n := r.Count("things", 1); n != -1 {
		t.Fatalf("negative count accepted: %d", n)
	}
}

func TestModifiedUTF8(t *testing.T) {
	for _, s := range []string{"", "LZ4Compressor", "org.apache.cassandra.dht.Murmur3Partitioner", "nul\x00byte", "é€😀"} {
		enc := AppendUTF(nil, s)
		r := NewReader(enc)
		if got := r.UTF(); got != s || r.Err() != nil {
			t.Errorf("UTF round trip %q: got %q err=%v", s, got, r.Err())
		}
	}
	if enc := AppendUTF(nil, "\x00"); !bytes.Equal(enc, []byte{0, 2, 0xC0, 0x80}) {
		t.Errorf("NUL must encode as C0 80, got %x", enc)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{0xff, 0xff, 1})
	f.Add(AppendUTF(nil, "x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(b)
		for r.Err() == nil && r.Len() > 0 {
			_ = r.UVint()
			_ = r.UTF()
			_ = r.VintBytes()
			_ = r.Count("x", 4)
		}
	})
}

// appendUVintWidthByBytes is AppendUVintWidth byte by byte, as Cassandra's VIntCoding writes it.
func appendUVintWidthByBytes(b []byte, v uint64, width int) []byte {
	extra := width - 1
	if extra >= 8 {
		b = append(b, 0xFF)
		return binary.BigEndian.AppendUint64(b, v)
	}
	b = append(b, byte(0xFF<<(8-uint(extra)))|byte(v>>(8*uint(extra))))
	for i := extra - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*uint(i))))
	}
	return b
}

// AppendUVintWidth writes Cassandra's bytes whether it has spare capacity to store a word at
// once or is patching a slice cut to the vint's width, and leaves the bytes around it alone.
func TestAppendUVintWidthIsCassandrasBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var vs []uint64
	for shift := range 64 {
		vs = append(vs, 1<<shift, 1<<shift-1, 1<<shift+1, rng.Uint64()>>shift)
	}
	vs = append(vs, 0, math.MaxUint64)
	for _, v := range vs {
		for w := UVintSize(v); w <= 9; w++ {
			want := appendUVintWidthByBytes([]byte{0xAB}, v, w)
			roomy := append(make([]byte, 0, 32), 0xAB)
			if got := AppendUVintWidth(roomy, v, w); !bytes.Equal(got, want) {
				t.Fatalf("%d in %d bytes: %x, want %x", v, w, got, want)
			}
			buf := bytes.Repeat([]byte{0xCD}, 12)
			AppendUVintWidth(buf[1:1:1+w], v, w)
			if !bytes.Equal(buf[:1+w], append([]byte{0xCD}, want[1:]...)) || !bytes.Equal(buf[1+w:], bytes.Repeat([]byte{0xCD}, 11-w)) {
				t.Fatalf("%d patched in %d bytes: %x, want %x between 0xcd bytes", v, w, buf, want[1:])
			}
			if w == UVintSize(v) {
				if got := AppendUVint(roomy[:1], v); !bytes.Equal(got, want) {
					t.Fatalf("AppendUVint(%d): %x, want %x", v, got, want)
				}
			}
		}
	}
}
