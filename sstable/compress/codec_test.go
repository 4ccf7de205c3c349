package compress

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

var allCodecs = []struct {
	class string
	opts  []Option
}{
	{LZ4, nil},
	{"org.apache.cassandra.io.compress.LZ4Compressor", []Option{{"lz4_compressor_type", "high"}}},
	{LZ4, []Option{{"lz4_compressor_type", "high"}, {"lz4_high_compressor_level", "17"}}},
	{Snappy, nil},
	{Deflate, nil},
	{"org.apache.cassandra.io.compress.DeflateCompressor", []Option{{"compression_level", "1"}}},
	{Zstd, nil},
	{Zstd, []Option{{"compression_level", "-5"}}},
	{Zstd, []Option{{"compression_level", "19"}}},
	{Noop, nil},
}

func codecInputs() map[string][]byte {
	rng := rand.New(rand.NewPCG(7, 7))
	random := make([]byte, 20000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	return map[string][]byte{
		"empty":  {},
		"byte":   {42},
		"zeros":  make([]byte, 16384),
		"words":  genData(rng, 16384),
		"random": random,
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		codec, err := CodecFor(c.class, c.opts)
		if err != nil {
			t.Fatalf("%s %v: %v", c.class, c.opts, err)
		}
		if codec.Name() != SimpleName(c.class) {
			t.Errorf("%s: Name %q", c.class, codec.Name())
		}
		for name, in := range codecInputs() {
			prefix := []byte("keep")
			comp, err := codec.Compress(bytes.Clone(prefix), in)
			if err != nil {
				t.Fatalf("%s %v %s: %v", c.class, c.opts, name, err)
			}
			if !bytes.HasPrefix(comp, prefix) || len(comp)-len(prefix) > codec.Bound(len(in)) {
				t.Fatalf("%s %s: %d bytes, bound %d, prefix lost: %v", c.class, name, len(comp)-len(prefix),
					codec.Bound(len(in)), !bytes.HasPrefix(comp, prefix))
			}
			comp = comp[len(prefix):]
			out, err := codec.Decompress(bytes.Clone(prefix), comp, len(in))
			if err != nil || !bytes.Equal(out[len(prefix):], in) || !bytes.HasPrefix(out, prefix) {
				t.Fatalf("%s %v %s: round trip failed: %v", c.class, c.opts, name, err)
			}
			// Claiming another length fails, without panicking.
			for _, n := range []int{len(in) + 1, len(in) - 1} {
				if n < 0 {
					continue
				}
				if _, err := codec.Decompress(nil, comp, n); !errors.Is(err, ErrLength) && !errors.Is(err, ErrDecompress) {
					t.Errorf("%s %s: Decompress with n=%d (of %d): %v", c.class, name, n, len(in), err)
				}
			}
		}
	}
}

// TestCodecFraming pins the on-disk framing of each compressor (FORMAT §2.2).
func TestCodecFraming(t *testing.T) {
	in := bytes.Repeat([]byte("cassandra "), 100)
	enc := func(class string) []byte {
		c, err := CodecFor(class, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Compress(nil, in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if b := enc(LZ4); !bytes.Equal(b[:4], []byte{0xe8, 0x03, 0, 0}) {
		t.Errorf("LZ4 header %x, want little-endian 1000", b[:4])
	}
	if b := enc(Snappy); !bytes.Equal(b[:2], []byte{0xe8, 0x07}) {
		t.Errorf("Snappy header %x, want uvarint 1000", b[:2])
	}
	if b := enc(Deflate); b[0]&0x0f != 8 || (int(b[0])<<8|int(b[1]))%31 != 0 {
		t.Errorf("Deflate header %x is not a zlib header", b[:2])
	}
	b := enc(Zstd)
	if !bytes.Equal(b[:4], []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		t.Fatalf("Zstd magic %x", b[:4])
	}
	// Frame header descriptor: content size present (bits 6-7 or single segment) and the
	// content checksum flag, as zstd-jni writes with ENABLE_CHECKSUM_FLAG.
	if fhd := b[4]; fhd&0x04 == 0 || (fhd>>6 == 0 && fhd&0x20 == 0) {
		t.Errorf("Zstd frame header descriptor %08b lacks checksum or content size", fhd)
	}
	if b := enc(Noop); !bytes.Equal(b, in) {
		t.Error("Noop changed its input")
	}
	// Java's Deflater turns empty input into zero bytes, and Inflater zero bytes into nothing.
	if b := enc2(t, Deflate, nil); len(b) != 0 {
		t.Errorf("Deflate of nothing is %x, want no bytes", b)
	}
	// lz4-java: the empty chunk of oa-13-big is a zero length and a lone zero token.
	if b := enc2(t, LZ4, nil); !bytes.Equal(b, []byte{0, 0, 0, 0, 0}) {
		t.Errorf("LZ4 of nothing is %x, want 0000000000", b)
	}
}

func enc2(t *testing.T, class string, in []byte) []byte {
	c, err := CodecFor(class, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Compress(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCodecForRejects(t *testing.T) {
	unsupported := []string{
		"ZstdDictionaryCompressor",
		"org.apache.cassandra.io.compress.ZstdDictionaryCompressor",
		"LZ4",
		"com.example.MyCompressor",
		"",
	}
	for _, name := range unsupported {
		_, err := CodecFor(name, nil)
		var ce *CompressorError
		if !errors.As(err, &ce) || !errors.Is(err, ErrUnsupported) || ce.Name != name {
			t.Errorf("CodecFor(%q): %v, want a *CompressorError", name, err)
		}
	}
	badOptions := []struct {
		class string
		opts  []Option
	}{
		{LZ4, []Option{{"lz4_compressor_type", "medium"}}},
		{LZ4, []Option{{"lz4_compressor_type", "high"}, {"lz4_high_compressor_level", "18"}}},
		{Zstd, []Option{{"compression_level", "23"}}},
		{Zstd, []Option{{"compression_level", "three"}}},
		{Deflate, []Option{{"compression_level", "10"}}},
	}
	for _, c := range badOptions {
		if _, err := CodecFor(c.class, c.opts); !errors.Is(err, ErrInvalid) {
			t.Errorf("CodecFor(%s, %v): %v, want ErrInvalid", c.class, c.opts, err)
		}
	}
	// Options a compressor does not know are ignored, as older Cassandra versions stored more.
	if _, err := CodecFor(Snappy, []Option{{"crc_check_chance", "1.0"}}); err != nil {
		t.Errorf("unknown option: %v", err)
	}
}

func TestCodecGarbageNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range allCodecs {
		codec, err := CodecFor(c.class, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		for range 200 {
			src := make([]byte, rng.IntN(64))
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			n := rng.IntN(100)
			out, err := codec.Decompress(nil, src, n)
			if err == nil && len(out) != n {
				t.Fatalf("%s: garbage decompressed to %d bytes, want %d or an error", c.class, len(out), n)
			}
		}
	}
}

func TestCodecSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	in := codecInputs()["words"]
	for _, c := range allCodecs {
		codec, err := CodecFor(c.class, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		comp := make([]byte, 0, codec.Bound(len(in)))
		out := make([]byte, 0, len(in))
		// Warm up internal state (encoders, decoders, tables).
		comp, _ = codec.Compress(comp[:0], in)
		out, _ = codec.Decompress(out[:0], comp, len(in))
		if a := testing.AllocsPerRun(20, func() { comp, _ = codec.Compress(comp[:0], in) }); a != 0 {
			t.Errorf("%s %v: Compress allocates %v times", c.class, c.opts, a)
		}
		if a := testing.AllocsPerRun(20, func() { out, _ = codec.Decompress(out[:0], comp, len(in)) }); a != 0 {
			t.Errorf("%s %v: Decompress allocates %v times", c.class, c.opts, a)
		}
	}
}
