package token

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The hard-coded inverses are the inverses of Murmur3's multipliers.
func TestSolveInverseConstants(t *testing.T) {
	for _, tc := range []struct {
		name   string
		a, inv uint64
	}{
		{"fmix64 first multiplier", 0xff51afd7ed558ccd, invFmixM1},
		{"fmix64 second multiplier", 0xc4ceb9fe1a85ec53, invFmixM2},
		{"c1", c1, invC1},
		{"c2", c2, invC2},
		{"5", 5, inv5},
	} {
		if got := inv64(tc.a); got != tc.inv {
			t.Errorf("%s: inv64(%#x) = %#x, constant is %#x", tc.name, tc.a, got, tc.inv)
		}
		if tc.a*tc.inv != 1 {
			t.Errorf("%s: %#x * %#x != 1", tc.name, tc.a, tc.inv)
		}
	}
}

func TestFmix64InvUndoesFmix64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := []uint64{0, 1, math.MaxUint64, 1 << 63, 1 << 33}
	for range 100000 {
		xs = append(xs, r.Uint64())
	}
	for _, x := range xs {
		if got := fmix64inv(fmix64(x)); got != x {
			t.Fatalf("fmix64inv(fmix64(%#x)) = %#x", x, got)
		}
		if got := fmix64(fmix64inv(x)); got != x {
			t.Fatalf("fmix64(fmix64inv(%#x)) = %#x", x, got)
		}
	}
}

func TestUnmixUndoesBlockMixes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		k := r.Uint64()
		if unmix1(mix1(k)) != k || unmix2(mix2(k)) != k {
			t.Fatalf("unmix does not undo mix for %#x", k)
		}
	}
}

// randomKey returns n random bytes, its tail (the bytes after the last whole block) all >= 0x80
// when highTail, so that the signed-byte quirk of the tail is exercised.
func randomKey(r *rand.Rand, n int, highTail bool) []byte {
	key := make([]byte, n)
	for i := range key {
		key[i] = byte(r.Uint32())
	}
	if highTail {
		for i := n / 16 * 16; i < n; i++ {
			key[i] |= 0x80
		}
	}
	return key
}

// SolveKey makes the partitioner's own token of the key exactly the target, wherever the free
// block sits (first, middle, last whole block) and whatever the tail, touching nothing else.
func TestSolveKeyHitsTheTargetExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	targets := []int64{0, 1, -1, math.MaxInt64, math.MinInt64 + 1, math.MaxInt64 - 1}
	for range 20 {
		targets = append(targets, int64(r.Uint64()))
	}
	var lengths []int
	for n := 16; n <= 48; n++ {
		lengths = append(lengths, n) // every tail size 0..15, one to three blocks
	}
	lengths = append(lengths, 63, 64, 65, 100, 127, 128, 143, 199, 200)
	for _, n := range lengths {
		for _, highTail := range []bool{false, true} {
			if highTail && n%16 == 0 {
				continue
			}
			for at := 0; at+16 <= n; at += 16 {
				for _, target := range targets {
					name := fmt.Sprintf("len=%d/at=%d/highTail=%v/target=%d", n, at, highTail, target)
					key := randomKey(r, n, highTail)
					orig := bytes.Clone(key)
					seed := r.Uint64()
					if !SolveKey(key, at, target, &seed, 1, nil) {
						t.Fatalf("%s: no solution with accept=nil", name)
					}
					if got := Murmur3.Token(key); got.Long != target {
						t.Fatalf("%s: token of solved key %x is %d", name, key, got.Long)
					}
					if !bytes.Equal(key[:at], orig[:at]) || !bytes.Equal(key[at+16:], orig[at+16:]) {
						t.Fatalf("%s: bytes outside the block changed:\n was %x\n now %x", name, orig, key)
					}
				}
			}
		}
	}
}

// A target of Long.MAX_VALUE may be reached either way (raw MAX or raw MIN normalised); either
// is a valid key. The raw-hash path is checked against Hash3x64_128 too.
func TestSolveKeyMaxTokenIsRawMax(t *testing.T) {
	key := make([]byte, 40)
	var seed uint64
	if !SolveKey(key, 16, math.MaxInt64, &seed, 1, nil) {
		t.Fatal("no solution")
	}
	if h0, _ := Hash3x64_128(key, 0); int64(h0) != math.MaxInt64 {
		t.Fatalf("raw h0 = %d, want MaxInt64", int64(h0))
	}
}

// Accept sees the whole key, may reject, and SolveKey moves on to the next candidate; every
// returned key was accepted, and successive calls sharing a seed give distinct keys.
func TestSolveKeyASCIIWithinBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name   string
		n, at  int
		solver func([]byte, int, int64, *uint64, int, func([]byte) bool) bool
	}{
		{"SolveKey one block", 16, 0, SolveKey},
		{"SolveKey last block with tail", 37, 16, SolveKey},
		{"SolveKey first of several blocks", 70, 0, SolveKey},
		{"SolveKeyASCII one block", 16, 0, SolveKeyASCII},
		{"SolveKeyASCII middle block with tail", 53, 16, SolveKeyASCII},
		{"SolveKeyASCII first of several blocks", 100, 0, SolveKeyASCII},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := int64(r.Uint64())
			key := bytes.Repeat([]byte("k"), tc.n)
			orig := bytes.Clone(key)
			accept := func(k []byte) bool { return ASCII(k[tc.at : tc.at+16]) }
			seed := r.Uint64()
			seen := map[string]bool{}
			for range 4 {
				before := seed
				if !tc.solver(key, tc.at, target, &seed, 1<<22, accept) {
					t.Fatalf("no ASCII solution within 1<<22 candidates from seed %d", before)
				}
				if seed <= before && before < math.MaxUint64-(1<<22) {
					t.Fatalf("seed did not advance: %d -> %d", before, seed)
				}
				if !ASCII(key) {
					t.Fatalf("key %x is not ASCII", key)
				}
				if got := Murmur3.Token(key); got.Long != target {
					t.Fatalf("token %d, want %d", got.Long, target)
				}
				if !bytes.Equal(key[:tc.at], orig[:tc.at]) || !bytes.Equal(key[tc.at+16:], orig[tc.at+16:]) {
					t.Fatalf("bytes outside the block changed: %q", key)
				}
				if seen[string(key)] {
					t.Fatalf("key %q returned twice", key)
				}
				seen[string(key)] = true
			}
		})
	}
}

func TestSolveKeyGivesUpWithinItsBudget(t *testing.T) {
	key := make([]byte, 32)
	seed := uint64(10)
	calls := 0
	never := func([]byte) bool { calls++; return false }
	if SolveKey(key, 0, 42, &seed, 1000, never) {
		t.Fatal("solved with an accept that never accepts")
	}
	if calls != 1000 || seed != 1010 {
		t.Fatalf("accept called %d times, seed %d; want 1000 and 1010", calls, seed)
	}
	if SolveKey(key, 0, 42, &seed, 0, nil) || seed != 1010 {
		t.Fatalf("budget 0 should fail and leave the seed, seed %d", seed)
	}
}

func TestSolveKeyRejectsBadArguments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n, at  int
		target int64
	}{
		{"misaligned at", 40, 8, 1},
		{"negative at", 40, -16, 1},
		{"block past the end", 40, 32, 1},
		{"key shorter than a block", 15, 0, 1},
		{"empty key", 0, 0, 1},
		{"Long.MIN_VALUE is no key's token", 32, 0, math.MinInt64},
	} {
		key := bytes.Repeat([]byte{0xab}, tc.n)
		seed := uint64(7)
		if SolveKey(key, tc.at, tc.target, &seed, 1<<10, nil) {
			t.Errorf("%s: solved", tc.name)
		}
		if seed != 7 || !bytes.Equal(key, bytes.Repeat([]byte{0xab}, tc.n)) {
			t.Errorf("%s: seed or key changed", tc.name)
		}
	}
}

func TestASCII(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want bool
	}{
		{nil, true},
		{[]byte("plain text, long enough for a word"), true},
		{[]byte{0x7f}, true},
		{[]byte{0x80}, false},
		{append([]byte("0123456789abcdef"), 0xff), false},
		{append([]byte{0xc3}, "0123456789"...), false},
		{[]byte("0123456\xe97"), false},
	} {
		if got := ASCII(tc.b); got != tc.want {
			t.Errorf("ASCII(%q) = %v", tc.b, got)
		}
	}
}

// ns/op is per solved ASCII key (about 65536 candidates each).
func BenchmarkSolveKeyASCII(b *testing.B) {
	for _, bc := range []struct {
		name   string
		n, at  int
		solver func([]byte, int, int64, *uint64, int, func([]byte) bool) bool
	}{
		{"SolveKey+accept=ASCII/len=16", 16, 0, SolveKey},
		{"SolveKeyASCII/len=16", 16, 0, SolveKeyASCII},
		{"SolveKeyASCII/len=40,at=16", 40, 16, SolveKeyASCII},
		{"SolveKeyASCII/len=200,at=0", 200, 0, SolveKeyASCII},
	} {
		b.Run(bc.name, func(b *testing.B) {
			key := bytes.Repeat([]byte("x"), bc.n)
			accept := func(k []byte) bool { return ASCII(k[bc.at : bc.at+16]) }
			var seed uint64
			r := rand.New(rand.NewPCG(9, 10))
			for b.Loop() {
				if !bc.solver(key, bc.at, int64(r.Uint64()|1), &seed, 1<<24, accept) {
					b.Fatal("no solution")
				}
			}
		})
	}
}
