package compress

import (
	"bytes"
	"errors"
	"testing"
)

// A Reader that follows a file as it is written reads, after each Grow, exactly what a fresh
// Reader over the same prefix reads; it never shrinks or changes its chunk grid.
func TestGrowFollowsAGrowingFile(t *testing.T) {
	data := mixedData(9*16384 + 700)
	file, res := writeAll(t, WriterOptions{Version: vOA, Compressor: LZ4, ChunkLength: 16384, MinCompressRatio: 1.1}, data, 3)
	info := res.Info
	prefix := func(chunks int) (int64, *Info) {
		c := *info
		c.Offsets = info.Offsets[:chunks]
		c.DataLength = int64(chunks) * int64(info.ChunkLength)
		if chunks == len(info.Offsets) {
			return int64(len(file)), info
		}
		return info.Offsets[chunks], &c
	}
	n, first := prefix(1)
	r, err := NewReader(bytes.NewReader(file), n, first)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	if got, err = r.ReadChunk(0, got[:0]); err != nil || !bytes.Equal(got, data[:16384]) {
		t.Fatalf("chunk 0: %v", err)
	}
	if _, err := r.ReadChunk(1, nil); err == nil {
		t.Fatal("a one-chunk view read chunk 1")
	}
	for chunks := 2; chunks <= len(info.Offsets); chunks++ {
		n, c := prefix(chunks)
		if err := r.Grow(n, c); err != nil {
			t.Fatalf("grow to %d chunks: %v", chunks, err)
		}
		want := data[:min(len(data), chunks*16384)]
		buf := make([]byte, len(want))
		if k, err := r.ReadAt(buf, 0); k != len(want) || err != nil || !bytes.Equal(buf, want) {
			t.Fatalf("%d chunks: ReadAt %d, %v", chunks, k, err)
		}
	}
	n, c := prefix(3)
	if err := r.Grow(n, c); !errors.Is(err, ErrInvalid) {
		t.Fatalf("shrinking: %v, want ErrInvalid", err)
	}
	wrong := *info
	wrong.ChunkLength = 65536
	if err := r.Grow(int64(len(file)), &wrong); !errors.Is(err, ErrInvalid) {
		t.Fatalf("another chunk length: %v, want ErrInvalid", err)
	}
}
