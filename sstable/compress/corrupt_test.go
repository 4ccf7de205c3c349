package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
)

func multiChunkFixture(t *testing.T) (fixtures.SSTable, *Info, []byte) {
	for _, s := range fixtures.All(t) {
		if s.Name == "sstable-transformer/oa/spark_test.testtable_10k/oa-13-big" {
			info, err := ParseInfo(s.Read(t, "CompressionInfo.db"), vOA)
			if err != nil {
				t.Fatal(err)
			}
			return s, info, s.Read(t, "Data.db")
		}
	}
	t.Fatal("oa-13-big fixture missing")
	return fixtures.SSTable{}, nil, nil
}

func TestCorruptByteNamesChunk(t *testing.T) {
	_, info, data := multiChunkFixture(t)
	for _, chunk := range []int{0, 3, 8, 9} {
		off, n := info.ChunkSpan(chunk, int64(len(data)))
		// A byte inside the chunk, and a byte of its stored CRC.
		for _, at := range []int64{off + n/2, off + n + 1} {
			bad := bytes.Clone(data)
			bad[at] ^= 0x40
			r, err := NewReader(bytes.NewReader(bad), int64(len(bad)), info)
			if err != nil {
				t.Fatal(err)
			}
			want := func(what string, err error) {
				t.Helper()
				var ce *ChunkError
				if !errors.Is(err, ErrChecksum) || !errors.As(err, &ce) || ce.Chunk != chunk || ce.Offset != off {
					t.Errorf("byte %d of chunk %d flipped: %s: %v, want ErrChecksum naming chunk %d at %d", at, chunk, what, err, chunk, off)
				}
			}
			_, err = r.ReadChunk(chunk, nil)
			want("ReadChunk", err)
			want("ForEachChunk", r.ForEachChunk(nil))
			if chunk < 9 { // chunk 9 is the empty trailing chunk: no uncompressed bytes reach it
				p := make([]byte, 10)
				_, err = r.ReadAt(p, int64(chunk)*16384)
				want("ReadAt", err)
			}
			// The other chunks still read.
			if _, err := r.ReadChunk((chunk+1)%info.ChunkCount(), nil); err != nil {
				t.Errorf("neighbour of corrupt chunk %d: %v", chunk, err)
			}
		}
	}
}

func TestTruncatedFileFails(t *testing.T) {
	for _, s := range fixtures.All(t) {
		data := s.Read(t, "Data.db")
		for _, cut := range []int{1, 4, 5, len(data) / 2, len(data) - 1, len(data)} {
			short := data[:len(data)-cut]
			var r *Reader
			var err error
			if s.Has("CompressionInfo.db") {
				info, perr := ParseInfo(s.Read(t, "CompressionInfo.db"), fixtureVersion(t, s))
				if perr != nil {
					t.Fatal(perr)
				}
				r, err = NewReader(bytes.NewReader(short), int64(len(short)), info)
			} else {
				crc, perr := ParseCRC(s.Read(t, "CRC.db"))
				if perr != nil {
					t.Fatal(perr)
				}
				r, err = NewUncompressedReader(bytes.NewReader(short), int64(len(short)), crc)
			}
			if err == nil {
				err = r.ForEachChunk(nil)
			}
			if err == nil {
				t.Errorf("%s cut by %d bytes: no error", s.Name, cut)
			}
		}
	}
}

// TestReaderClaimsFileLongerThanData: a reader told the file is longer than the bytes behind
// it fails with the read error instead of inventing data.
func TestReaderClaimsFileLongerThanData(t *testing.T) {
	_, info, data := multiChunkFixture(t)
	r, err := NewReader(bytes.NewReader(data[:len(data)-100]), int64(len(data)), info)
	if err != nil {
		t.Fatal(err)
	}
	var ce *ChunkError
	if err := r.ForEachChunk(nil); !errors.As(err, &ce) || ce.Chunk != 8 {
		t.Fatalf("%v, want a ChunkError for chunk 8", err)
	}
}

// chunkFile builds a one-chunk Data.db around body, with a correct CRC.
func chunkFile(body []byte, dataLength int64) (*Info, []byte) {
	file := binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.ChecksumIEEE(body))
	return &Info{Compressor: LZ4, ChunkLength: 16384, MaxCompressedLength: 1 << 20, DataLength: dataLength, Offsets: []int64{0}}, file
}

func TestChunkDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		body []byte
		n    int64
		is   error
	}{
		{"lz4 header below the span", []byte{3, 0, 0, 0, 0x30, 'a', 'b', 'c'}, 4, ErrLength},
		{"lz4 block short of the span", []byte{5, 0, 0, 0, 0x40, 'a', 'b', 'c', 'd'}, 5, ErrLength},
		{"lz4 garbage", []byte{10, 0, 0, 0, 0xff, 0xff, 0xff}, 10, ErrDecompress},
		{"no lz4 header", []byte{1, 2}, 10, ErrDecompress},
	}
	for _, c := range cases {
		info, file := chunkFile(c.body, c.n)
		r, err := NewReader(bytes.NewReader(file), int64(len(file)), info)
		if err != nil {
			t.Fatal(err)
		}
		var ce *ChunkError
		if _, err := r.ReadChunk(0, nil); !errors.Is(err, c.is) || !errors.As(err, &ce) || ce.Chunk != 0 {
			t.Errorf("%s: %v, want %v in a ChunkError", c.name, err, c.is)
		}
	}
	// The last chunk of a split child may hold more than the file addresses: it decodes and is
	// cut at dataLength.
	info, file := chunkFile([]byte{5, 0, 0, 0, 0x50, 'a', 'b', 'c', 'd', 'e'}, 4)
	r, _ := NewReader(bytes.NewReader(file), int64(len(file)), info)
	if got, err := r.ReadChunk(0, nil); err != nil || string(got) != "abcd" {
		t.Errorf("cut last chunk: %q, %v", got, err)
	}
	// A raw chunk (length >= maxCompressedLength) is the span, the padded threshold, or for a
	// cut last chunk anything up to a full chunk; never more.
	info, file = chunkFile(make([]byte, 12), 10)
	info.MaxCompressedLength = 11
	r, _ = NewReader(bytes.NewReader(file), int64(len(file)), info)
	if got, err := r.ReadChunk(0, nil); err != nil || len(got) != 10 {
		t.Errorf("cut raw last chunk of 12 bytes for 10: %d bytes, %v", len(got), err)
	}
	info, file = chunkFile(make([]byte, 16385), 10)
	info.MaxCompressedLength = 11
	r, _ = NewReader(bytes.NewReader(file), int64(len(file)), info)
	if _, err := r.ReadChunk(0, nil); !errors.Is(err, ErrLength) {
		t.Errorf("raw last chunk longer than a chunk: %v", err)
	}
	info, file = chunkFile(make([]byte, 12), 10)
	info.MaxCompressedLength = 12
	r, _ = NewReader(bytes.NewReader(file), int64(len(file)), info)
	if got, err := r.ReadChunk(0, nil); err != nil || len(got) != 10 {
		t.Errorf("raw chunk padded to the threshold: %d bytes, %v", len(got), err)
	}
	// Out-of-range chunk numbers and offsets are errors.
	if _, err := r.ReadChunk(1, nil); !errors.Is(err, ErrLength) {
		t.Errorf("ReadChunk(1): %v", err)
	}
	if _, err := r.ReadAt(make([]byte, 1), -1); err == nil {
		t.Error("ReadAt(-1) succeeded")
	}
	if s := r.NewScanner(0, 2); s.Next() || s.Err() == nil {
		t.Error("scanner past the last chunk")
	}
}

func TestUncompressedReaderCRCCount(t *testing.T) {
	data := make([]byte, 100)
	crcOf := func(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
	ok := []*CRCInfo{
		{ChunkLength: 64, CRCs: []uint32{crcOf(data[:64]), crcOf(data[64:])}},
		{ChunkLength: 64, CRCs: []uint32{crcOf(data[:64]), crcOf(data[64:]), 0}}, // empty trailing slice
		nil,
	}
	for _, c := range ok {
		r, err := NewUncompressedReader(bytes.NewReader(data), 100, c)
		if err != nil {
			t.Fatal(err)
		}
		checkContents(t, r, data)
	}
	if _, err := NewUncompressedReader(bytes.NewReader(data), 100, &CRCInfo{ChunkLength: 64, CRCs: []uint32{0}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("too few CRCs: %v", err)
	}
	bad := &CRCInfo{ChunkLength: 64, CRCs: []uint32{crcOf(data[:64]), crcOf(data[64:]), 1}}
	r, err := NewUncompressedReader(bytes.NewReader(data), 100, bad)
	if err != nil {
		t.Fatal(err)
	}
	var ce *ChunkError
	if err := r.ForEachChunk(nil); !errors.Is(err, ErrChecksum) || !errors.As(err, &ce) || ce.Chunk != 2 || ce.Offset != 100 {
		t.Errorf("non-zero CRC for the empty slice: %v", err)
	}
}

func TestScannerRange(t *testing.T) {
	s, info, _ := multiChunkFixture(t)
	r, _ := openFixture(t, s)
	for _, rg := range [][2]int{{0, 0}, {3, 7}, {8, 10}, {9, 10}, {0, info.ChunkCount()}} {
		sc := r.NewScanner(rg[0], rg[1])
		want := rg[0]
		for sc.Next() {
			if sc.Chunk() != want || sc.Offset() != int64(want)*16384 {
				t.Fatalf("%v: chunk %d at %d, want %d", rg, sc.Chunk(), sc.Offset(), want)
			}
			got, err := r.ReadChunk(want, nil)
			if err != nil || !bytes.Equal(got, sc.Bytes()) {
				t.Fatalf("%v: chunk %d differs from ReadChunk (%v)", rg, want, err)
			}
			want++
		}
		if sc.Err() != nil || want != rg[1] {
			t.Fatalf("%v: stopped before %d: %v", rg, want, sc.Err())
		}
	}
	for _, rg := range [][2]int{{-1, 2}, {2, 1}, {0, 11}} {
		if sc := r.NewScanner(rg[0], rg[1]); sc.Next() || !errors.Is(sc.Err(), ErrLength) {
			t.Errorf("NewScanner(%d, %d): %v", rg[0], rg[1], sc.Err())
		}
	}
}

func TestReaderSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	s, _, _ := multiChunkFixture(t)
	r, _ := openFixture(t, s)
	p := make([]byte, 100)
	dst := make([]byte, 0, 16384)
	r.ReadAt(p, 0)
	i := 0
	if a := testing.AllocsPerRun(50, func() {
		i = (i + 1) % 9
		r.ReadAt(p, int64(i)*16384+50) // a different chunk each time: decode, no cache hit
	}); a != 0 {
		t.Errorf("ReadAt allocates %v times", a)
	}
	if a := testing.AllocsPerRun(50, func() { dst, _ = r.ReadChunk(3, dst[:0]) }); a != 0 {
		t.Errorf("ReadChunk allocates %v times", a)
	}
}

func TestChunkLongerThanCodecBound(t *testing.T) {
	// Offsets 1 GiB apart in a "file" that claims to be that long: an error, not an allocation.
	info := &Info{Compressor: LZ4, ChunkLength: 16, MaxCompressedLength: math.MaxInt32, DataLength: 32, Offsets: []int64{0, 1 << 30}}
	r, err := NewReader(bytes.NewReader(nil), 1<<30+40, info)
	if err != nil {
		t.Fatal(err)
	}
	var ce *ChunkError
	if _, err := r.ReadChunk(0, nil); !errors.Is(err, ErrLength) || !errors.As(err, &ce) || ce.Chunk != 0 {
		t.Errorf("ReadChunk: %v", err)
	}
	if err := r.ForEachChunk(nil); !errors.Is(err, ErrLength) {
		t.Errorf("ForEachChunk: %v", err)
	}
}

// An incompressible 4 KiB chunk that Cassandra's snappy-java stored compressed takes up to the
// reference bound, 32 + n + n/6 bytes: more than klauspost's MaxEncodedLen. Found by the interop
// suite on a CQLSSTableWriter fixture; here a valid Snappy block of 60-byte literals stands in.
func TestSnappyChunkUpToReferenceBound(t *testing.T) {
	const n = 4096
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i * 7919 >> 3)
	}
	block := binary.AppendUvarint(nil, n)
	for i := 0; i < n; i += 60 {
		lit := src[i:min(i+60, n)]
		block = append(append(block, byte(len(lit)-1)<<2), lit...)
	}
	if len(block) <= 4101 || len(block) > 32+n+n/6 {
		t.Fatalf("test block is %d bytes, want between klauspost's bound and the reference bound", len(block))
	}
	file := binary.BigEndian.AppendUint32(append([]byte(nil), block...), crc32.ChecksumIEEE(block))
	info := &Info{Compressor: Snappy, ChunkLength: n, MaxCompressedLength: math.MaxInt32, DataLength: n, Offsets: []int64{0}}
	r, err := NewReader(bytes.NewReader(file), int64(len(file)), info)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadChunk(0, nil)
	if err != nil {
		t.Fatalf("ReadChunk: %v", err)
	}
	if !bytes.Equal(got, src) {
		t.Error("chunk decoded to different bytes")
	}
}

// The last chunk of a zero-copy split child holds a whole parent chunk of which the child
// addresses only a prefix: every codec decodes it and cuts it at dataLength. (Snappy did not:
// its declared length was never consulted; found by the interop suite on a copy child.)
func TestCutLastChunkEveryCodec(t *testing.T) {
	src := genData(rand.New(rand.NewPCG(3, 3)), 4096)
	for _, c := range allCodecs {
		codec, err := CodecFor(c.class, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		body, err := codec.Compress(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		file := binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.ChecksumIEEE(body))
		info := &Info{Compressor: c.class, Options: c.opts, ChunkLength: 4096, MaxCompressedLength: math.MaxInt32, DataLength: 1000, Offsets: []int64{0}}
		r, err := NewReader(bytes.NewReader(file), int64(len(file)), info)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.ReadChunk(0, nil); err != nil || !bytes.Equal(got, src[:1000]) {
			t.Errorf("%s %v: cut last chunk: %d bytes, %v", c.class, c.opts, len(got), err)
		}
	}
}
