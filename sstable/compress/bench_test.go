package compress

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/sluicedb/sluice/sstable/version"
)

const (
	benchSize  = 64 << 20
	benchChunk = 16 << 10
)

var benchData = sync.OnceValue(func() []byte { return genData(rand.New(rand.NewPCG(1, 2)), benchSize) })

// genData makes row-like bytes that LZ4 compresses to about half: words from a small
// vocabulary (compressible) interleaved with random binary blobs (incompressible).
func genData(rng *rand.Rand, n int) []byte {
	words := make([][]byte, 512)
	for i := range words {
		w := make([]byte, 3+rng.IntN(8))
		for j := range w {
			w[j] = 'a' + byte(rng.IntN(26))
		}
		words[i] = w
	}
	b := make([]byte, 0, n+64)
	for len(b) < n {
		if rng.IntN(4) == 0 {
			for range 8 + rng.IntN(24) {
				b = append(b, byte(rng.Uint32()))
			}
		} else {
			b = append(b, words[rng.IntN(len(words))]...)
			b = append(b, ' ')
		}
	}
	return b[:n]
}

// benchChunks is benchData as LZ4Compressor chunks: LE length, LZ4 block, BE CRC.
var benchChunks = sync.OnceValue(func() [][]byte {
	data := benchData()
	var c lz4.CompressorCCompat
	var chunks [][]byte
	for off := 0; off < len(data); off += benchChunk {
		src := data[off:min(off+benchChunk, len(data))]
		out := make([]byte, 4+lz4.CompressBlockBound(len(src)))
		binary.LittleEndian.PutUint32(out, uint32(len(src)))
		k, err := c.CompressBlock(src, out[4:])
		if err != nil {
			panic(err)
		}
		out = out[:4+k]
		chunks = append(chunks, binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out)))
	}
	return chunks
})

// BenchmarkRawLZ4DecompressCRC is the reference for BenchmarkReaderSequential: CRC and
// decompress in-memory chunks with bare pierrec/lz4 calls.
func BenchmarkRawLZ4DecompressCRC(b *testing.B) {
	chunks := benchChunks()
	out := make([]byte, benchChunk)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range chunks {
			body := c[:len(c)-4]
			if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(c[len(body):]) {
				b.Fatal("crc")
			}
			if _, err := lz4.UncompressBlock(body[4:], out); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReaderSequential verifies and decompresses a Data.db file with a Reader.
func BenchmarkReaderSequential(b *testing.B) {
	path := filepath.Join(b.TempDir(), "Data.db")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w, err := NewWriter(f, WriterOptions{Version: version.Version{Format: version.Big, Name: "oa"}, Compressor: LZ4, ChunkLength: benchChunk})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.Write(benchData()); err != nil {
		b.Fatal(err)
	}
	res, err := w.Close()
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	if f, err = os.Open(path); err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r, err := NewReader(f, res.FileLength, res.Info)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.ForEachChunk(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawLZ4Compress is the reference for BenchmarkWriter: bare single-core compression
// of the same chunks with the compressor the LZ4 codec uses.
func BenchmarkRawLZ4Compress(b *testing.B) {
	data := benchData()
	var c lz4.CompressorCCompat
	out := make([]byte, lz4.CompressBlockBound(benchChunk))
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		for off := 0; off < len(data); off += benchChunk {
			if _, err := c.CompressBlock(data[off:off+benchChunk], out); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkWriter writes an LZ4 Data.db (compression, CRCs, digest) to io.Discard.
func BenchmarkWriter(b *testing.B) {
	data := benchData()
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		w, err := NewWriter(io.Discard, WriterOptions{Version: version.Version{Format: version.Big, Name: "oa"}, Compressor: LZ4, ChunkLength: benchChunk})
		if err != nil {
			b.Fatal(err)
		}
		// Row-sized writes, as a partition serializer makes them.
		for off := 0; off < len(data); off += 4000 {
			if _, err := w.Write(data[off:min(off+4000, len(data))]); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
