package crcx

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestCombineEqualsCRCOfConcatenation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sizes := range [][2]int{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {16384, 4}, {7, 65536}, {100000, 12345}, {3, 262143}, {3, 262144}, {2, 1<<20 + 777}, {1, 255}, {1, 256}} {
		a, b := make([]byte, sizes[0]), make([]byte, sizes[1])
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		want := crc32.ChecksumIEEE(append(append([]byte{}, a...), b...))
		if got := Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b))); got != want {
			t.Errorf("sizes %v: Combine = %08x, want %08x", sizes, got, want)
		}
	}
}

// A chunk-sized length with many bits set, as compressed chunks have.
func BenchmarkCombineCompressedChunk(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_ = Combine(uint32(i), 0x12345678, 8191+4)
	}
}

func BenchmarkCombine16K(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = Combine(uint32(i), 0x12345678, 16384)
	}
}
