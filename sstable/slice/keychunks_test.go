package slice

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/version"
)

// chunkedFile is an LZ4 Data.db of n chunks of l bytes of random-ish bytes, and its plain
// bytes.
func chunkedFile(t *testing.T, n, l int) ([]byte, []byte, *compress.Info) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	plain := make([]byte, n*l)
	for i := range plain {
		plain[i] = byte(rng.IntN(16))
	}
	var buf bytes.Buffer
	w, err := compress.NewWriter(&buf, compress.WriterOptions{Version: version.Version{Format: version.Big, Name: "oa"}, Compressor: compress.LZ4, ChunkLength: l})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), plain, res.Info
}

// The decoder ahead of KeyAt hands back every chunk as written, whether asked for in order,
// skipping chunks, or going back; a corrupt chunk is an error for that chunk alone; and once
// nothing is left to decode no decoder runs.
func TestKeyChunksServeEveryChunkAsWritten(t *testing.T) {
	for _, l := range []int{16 << 10, 256 << 10} { // windows of 32 and of 2 chunks
		t.Run(fmt.Sprint(l), func(t *testing.T) { keyChunksServe(t, l) })
	}
}

func keyChunksServe(t *testing.T, l int) {
	const n = 100
	file, plain, info := chunkedFile(t, n, l)
	// A chunk of the file is corrupt: its record's first byte flipped.
	bad := 70
	file[info.Offsets[bad]] ^= 0xff
	r, err := compress.NewReader(bytes.NewReader(file), int64(len(file)), info)
	if err != nil {
		t.Fatal(err)
	}
	want := func(c int) []byte { return plain[c*l : (c+1)*l] }
	// Every chunk in order, each still as written after the decoder had time to run ahead:
	// what get returns stays valid until another chunk is asked for.
	k := newKeyChunks(r)
	for c := range bad {
		got, err := k.get(c, n)
		if err != nil {
			t.Fatalf("chunk %d: %v", c, err)
		}
		for range 3 {
			runtime.Gosched()
		}
		time.Sleep(50 * time.Microsecond)
		if !bytes.Equal(got, want(c)) {
			t.Fatalf("chunk %d changed while held", c)
		}
	}
	k = newKeyChunks(r)
	for _, c := range []int{0, 1, 2, 5, 40, 41, 69} { // in order, with gaps past a window
		got, err := k.get(c, n)
		if err != nil || !bytes.Equal(got, want(c)) {
			t.Fatalf("chunk %d: %v, bytes equal %v", c, err, bytes.Equal(got, want(c)))
		}
	}
	if _, err := k.get(bad, n); !errors.Is(err, compress.ErrChecksum) && !errors.Is(err, compress.ErrDecompress) && !errors.Is(err, compress.ErrLength) {
		t.Fatalf("corrupt chunk %d: %v, want a chunk error", bad, err)
	}
	if got, err := k.get(71, n); err != nil || !bytes.Equal(got, want(71)) {
		t.Fatalf("chunk after the corrupt one: %v", err)
	}
	if got, err := k.get(3, n); err != nil || !bytes.Equal(got, want(3)) { // back, before the window
		t.Fatalf("chunk 3 again: %v", err)
	}
	if _, err := k.get(n, n); err == nil {
		t.Fatal("a chunk not in the file was served")
	}
	if got, err := k.get(n-1, n); err != nil || !bytes.Equal(got, want(n-1)) {
		t.Fatalf("last chunk: %v", err)
	}
	k.mu.Lock()
	for k.running {
		k.ready.Wait()
	}
	k.mu.Unlock()
}
