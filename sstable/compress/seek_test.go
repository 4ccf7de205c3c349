package compress

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// seekFile is an LZ4 file of many 4 KiB chunks, some stored raw, over several scan blocks.
func seekFile(t *testing.T) (*Reader, []byte, []byte, Result) {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 9))
	data := make([]byte, 6<<20)
	for i := range data {
		if i%4096 < 3000 {
			data[i] = byte(i / 97) // compresses
		} else {
			data[i] = byte(rng.Uint32())
		}
	}
	for i := 200 << 12; i < 210<<12; i++ { // incompressible chunks, stored raw
		data[i] = byte(rng.Uint32())
	}
	file, res := writeAll(t, WriterOptions{Version: vNB, Compressor: LZ4, ChunkLength: 4096, MinCompressRatio: 1.1}, data, 2)
	return reopen(t, file, res, vNB), data, file, res
}

// Seek passes chunks over: within the block read, into the block being read, and far past
// both (a fresh read, short first); with and without decoding ahead, every chunk Next then
// gives is the chunk's bytes, and the scanner goes on from there.
func TestScannerSeek(t *testing.T) {
	r, data, _, _ := seekFile(t)
	n := r.ChunkCount()
	rng := rand.New(rand.NewPCG(10, 10))
	for trial := range 40 {
		ahead := trial%2 == 1
		sc := r.NewScanner(0, n)
		sc.DecodeAhead(ahead)
		next := 0
		for next < n {
			switch k := rng.IntN(10); {
			case k < 5: // sequential
			case k < 8:
				next += 1 + rng.IntN(20)
			default:
				next += 1 + rng.IntN(600) // past a 1 MiB block of 4 KiB records
			}
			if rng.IntN(7) == 0 {
				ahead = !ahead
				sc.DecodeAhead(ahead)
			}
			sc.Seek(next)
			if !sc.Next() {
				if next < n || sc.Err() != nil {
					t.Fatalf("trial %d: Next at chunk %d of %d: %v", trial, next, n, sc.Err())
				}
				break
			}
			lo := int64(next) * 4096
			hi := min(lo+4096, int64(len(data)))
			if sc.Chunk() != next || !bytes.Equal(sc.Bytes(), data[lo:hi]) {
				t.Fatalf("trial %d (ahead %v): chunk %d after a seek to %d differs", trial, ahead, sc.Chunk(), next)
			}
			next++
		}
	}
}

// Decoding ahead reports a damaged chunk at that chunk, as decoding in Next does, and the
// chunks before it read.
func TestScannerDecodeAheadError(t *testing.T) {
	r, data, file, res := seekFile(t)
	for _, bad := range []int{3, 300, 1000} {
		for _, ahead := range []bool{false, true} {
			f := bytes.Clone(file)
			off, size := res.Info.ChunkSpan(bad, int64(len(f)))
			f[off+size/2] ^= 0x20
			r2, err := NewReader(bytes.NewReader(f), int64(len(f)), r.info)
			if err != nil {
				t.Fatal(err)
			}
			sc := r2.NewScanner(0, r2.ChunkCount())
			sc.DecodeAhead(ahead)
			got := 0
			for sc.Next() {
				if lo := int64(got) * 4096; !bytes.Equal(sc.Bytes(), data[lo:lo+4096]) {
					t.Fatalf("chunk %d differs", got)
				}
				got++
			}
			var ce *ChunkError
			if got != bad || !errors.Is(sc.Err(), ErrChecksum) || !errors.As(sc.Err(), &ce) || ce.Chunk != bad {
				t.Errorf("ahead %v, chunk %d damaged: stopped after %d chunks with %v", ahead, bad, got, sc.Err())
			}
			// A seek past the damaged chunk reads on.
			sc = r2.NewScanner(0, r2.ChunkCount())
			sc.DecodeAhead(ahead)
			for i := 0; i < bad-1; i++ {
				sc.Next()
			}
			sc.Seek(bad + 1)
			if !sc.Next() || sc.Chunk() != bad+1 {
				t.Errorf("ahead %v: a seek past damaged chunk %d: %v", ahead, bad, sc.Err())
			}
		}
	}
}
