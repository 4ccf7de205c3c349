package compress

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sluicedb/sluice/sstable/version"
)

// writeAll writes data through a Writer in random-sized pieces and returns the file and result.
func writeAll(t testing.TB, opts WriterOptions, data []byte, seed uint64) ([]byte, Result) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for p := data; len(p) > 0; {
		k := min(len(p), 1+rng.IntN(40000))
		if n, err := w.Write(p[:k]); n != k || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
		p = p[k:]
	}
	if w.Position() != int64(len(data)) {
		t.Fatalf("Position %d after %d bytes", w.Position(), len(data))
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

// reopen parses the written metadata back from its encoding and reads the file through a Reader.
func reopen(t testing.TB, file []byte, res Result, v version.Version) *Reader {
	t.Helper()
	if res.FileLength != int64(len(file)) {
		t.Fatalf("FileLength %d, wrote %d", res.FileLength, len(file))
	}
	if d := crc32.ChecksumIEEE(file); res.Digest != d {
		t.Fatalf("Digest %d, crc32 of the file %d", res.Digest, d)
	}
	var r *Reader
	var err error
	if res.Info != nil {
		info, perr := ParseInfo(res.Info.Append(nil, v), v)
		if perr != nil {
			t.Fatal(perr)
		}
		r, err = NewReader(bytes.NewReader(file), int64(len(file)), info)
	} else {
		crc, perr := ParseCRC(res.CRC.Append(nil))
		if perr != nil {
			t.Fatal(perr)
		}
		r, err = NewUncompressedReader(bytes.NewReader(file), int64(len(file)), crc)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.DataLength() != res.DataLength {
		t.Fatalf("DataLength %d, Result says %d", r.DataLength(), res.DataLength)
	}
	return r
}

func checkContents(t testing.TB, r *Reader, data []byte) {
	t.Helper()
	var got []byte
	if err := r.ForEachChunk(func(_ int, b []byte) error { got = append(got, b...); return nil }); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("scan returned %d bytes that differ from the %d written", len(got), len(data))
	}
	all := make([]byte, len(data))
	if n, err := r.ReadAt(all, 0); n != len(data) || err != nil || !bytes.Equal(all, data) {
		t.Fatalf("ReadAt: %d, %v", n, err)
	}
}

func mixedData(n int) []byte {
	rng := rand.New(rand.NewPCG(uint64(n), 9))
	b := genData(rng, n)
	// Every third 16 KiB stretch is random, so no compressor can shrink it.
	for off := 16384; off < n; off += 3 * 16384 {
		for i := off; i < min(off+16384, n); i++ {
			b[i] = byte(rng.Uint32())
		}
	}
	return b
}

func TestWriterRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 16383, 16384, 16385, 5*16384 + 1000, 200000}
	for _, c := range append(allCodecs, struct {
		class string
		opts  []Option
	}{"", nil}) {
		for _, ratio := range []float64{0, 1.1} {
			if c.class == "" && ratio != 0 {
				continue
			}
			for _, v := range []version.Version{vOA, vMD} {
				if ratio != 0 && !v.HasMaxCompressedLength() {
					continue
				}
				for _, n := range sizes {
					data := mixedData(n)
					opts := WriterOptions{Version: v, Compressor: c.class, Options: c.opts, MinCompressRatio: ratio}
					if c.class != "" {
						opts.ChunkLength = 16384
					}
					file, res := writeAll(t, opts, data, uint64(n))
					if res.DataLength != int64(n) {
						t.Fatalf("DataLength %d, wrote %d", res.DataLength, n)
					}
					r := reopen(t, file, res, v)
					// Cassandra's final flush writes one chunk even for no data; compressed data
					// ending at a chunk boundary ends with an empty chunk (Cassandra's verify -e
					// seeks to the data length).
					want := max(1, int(ceilDiv(int64(n), int64(r.ChunkLength()))))
					if c.class != "" && n > 0 && n%r.ChunkLength() == 0 {
						want++
					}
					if r.ChunkCount() != want {
						t.Fatalf("%s n=%d: %d chunks, want %d", c.class, n, r.ChunkCount(), want)
					}
					checkContents(t, r, data)
					if res.Info != nil && res.Info.Compressor != SimpleName(c.class) {
						t.Errorf("Info names %q for %q", res.Info.Compressor, c.class)
					}
				}
			}
		}
	}
}

// TestWriterRawChunks follows CASSANDRA-10520 (FORMAT §2.2): with min_compress_ratio 1.1 and
// 16 KiB chunks the threshold is ceil(16384/1.1) = 14895 bytes. A chunk compressing to more
// is stored raw; a short last chunk stored raw is zero-padded up to the threshold.
func TestWriterRawChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	compressible := bytes.Repeat([]byte("abcd"), 4096)
	data := append(append(append([]byte{}, compressible...), random(16384)...), random(14890)...)
	file, res := writeAll(t, WriterOptions{Version: vNB, Compressor: LZ4, ChunkLength: 16384, MinCompressRatio: 1.1}, data, 1)
	info := res.Info
	if info.MaxCompressedLength != 14895 {
		t.Fatalf("MaxCompressedLength %d, want 14895", info.MaxCompressedLength)
	}
	var lens []int64
	for i := range info.ChunkCount() {
		_, n := info.ChunkSpan(i, int64(len(file)))
		lens = append(lens, n)
	}
	if len(lens) != 3 || lens[0] >= 14895 || lens[1] != 16384 || lens[2] != 14895 {
		t.Fatalf("on-disk chunk lengths %v, want [<14895 16384 14895]", lens)
	}
	if !bytes.Equal(file[info.Offsets[1]:info.Offsets[1]+16384], data[16384:32768]) {
		t.Error("raw chunk 1 is not the uncompressed bytes")
	}
	last := file[info.Offsets[2] : info.Offsets[2]+14895]
	if !bytes.Equal(last[:14890], data[32768:]) || !bytes.Equal(last[14890:], make([]byte, 5)) {
		t.Error("raw chunk 2 is not the uncompressed bytes followed by 5 zeros")
	}
	checkContents(t, reopen(t, file, res, vNB), data)

	// Without maxCompressedLength (md) no chunk is ever raw, whatever its length.
	md := *info
	md.MaxCompressedLength = 0
	r, err := NewReader(bytes.NewReader(file), int64(len(file)), &md)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadChunk(1, nil); !errors.Is(err, ErrLength) && !errors.Is(err, ErrDecompress) {
		t.Errorf("raw chunk decompressed as LZ4: %v", err)
	}
}

func TestMaxCompressedLength(t *testing.T) {
	for _, c := range []struct {
		l     int
		ratio float64
		want  int32
	}{{16384, 0, math.MaxInt32}, {16384, 1, 16384}, {16384, 1.1, 14895}, {65536, 2, 32768}, {16384, 3, 5462}} {
		if got := MaxCompressedLength(c.l, c.ratio); got != c.want {
			t.Errorf("MaxCompressedLength(%d, %v) = %d, want %d", c.l, c.ratio, got, c.want)
		}
	}
}

func TestWriterOptionsRejected(t *testing.T) {
	for _, o := range []WriterOptions{
		{Version: vOA, Compressor: LZ4, ChunkLength: 1000},
		{Version: vOA, Compressor: LZ4, ChunkLength: -16},
		{Version: vOA, Compressor: LZ4, MinCompressRatio: 0.5},
		{Version: vOA, Compressor: LZ4, MinCompressRatio: math.NaN()},
		{Version: vMD, Compressor: LZ4, MinCompressRatio: 2},
		{Version: vOA, MinCompressRatio: 2},
		{Version: vOA, ChunkLength: -1},
	} {
		if _, err := NewWriter(&bytes.Buffer{}, o); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewWriter(%+v): %v, want ErrInvalid", o, err)
		}
	}
	if _, err := NewWriter(&bytes.Buffer{}, WriterOptions{Version: vOA, Compressor: "ZstdDictionaryCompressor"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("dictionary compressor: %v", err)
	}
}

type failingWriter struct{ after int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestWriterReportsWriteErrors(t *testing.T) {
	w, err := NewWriter(&failingWriter{after: 2}, WriterOptions{Version: vOA, Compressor: LZ4, ChunkLength: 16384})
	if err != nil {
		t.Fatal(err)
	}
	data := mixedData(1 << 20)
	var werr error
	for off := 0; off < len(data) && werr == nil; off += 4096 {
		_, werr = w.Write(data[off : off+4096])
	}
	_, cerr := w.Close()
	if cerr == nil || cerr.Error() != "disk full" {
		t.Fatalf("Close: %v (last Write: %v), want disk full", cerr, werr)
	}
	if _, err := w.Write([]byte{1}); err == nil {
		t.Error("Write after Close succeeded")
	}
}

func TestWriterSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	w, err := NewWriter(io.Discard, WriterOptions{Version: vOA, Compressor: LZ4, ChunkLength: 16384})
	if err != nil {
		t.Fatal(err)
	}
	data := mixedData(16384)
	// Warm up the codec; the offsets slice still grows, amortized well below one per chunk.
	for range 64 {
		w.Write(data)
	}
	if a := testing.AllocsPerRun(100, func() { w.Write(data) }); a != 0 {
		t.Errorf("Write of a full chunk allocates %v times", a)
	}
	w.Close()
}
