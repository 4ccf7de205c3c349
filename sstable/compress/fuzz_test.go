package compress

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/version"
)

// fuzzVersions maps a fuzzed byte to a layout: with or without maxCompressedLength.
var fuzzVersions = []version.Version{vMD, vOA}

func FuzzParseInfo(f *testing.F) {
	for _, s := range fixtures.All(f) {
		if s.Has("CompressionInfo.db") {
			v := fixtureVersion(f, s)
			f.Add(s.Read(f, "CompressionInfo.db"), boolByte(v.HasMaxCompressedLength()))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, vb byte) {
		v := fuzzVersions[vb&1]
		info, err := ParseInfo(b, v)
		if err != nil {
			return
		}
		again, err := ParseInfo(info.Append(nil, v), v)
		if err != nil {
			t.Fatalf("re-parse of Append: %v", err)
		}
		if !reflect.DeepEqual(info, again) {
			t.Fatalf("round trip changed %+v into %+v", info, again)
		}
	})
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func FuzzParseCRC(f *testing.F) {
	for _, s := range fixtures.All(f) {
		if s.Has("CRC.db") {
			f.Add(s.Read(f, "CRC.db"))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCRC(b)
		if err != nil {
			return
		}
		if got := c.Append(nil); !bytes.Equal(got, b) {
			t.Fatalf("Append %x, parsed %x", got, b)
		}
	})
}

func FuzzParseDigest(f *testing.F) {
	for _, s := range fixtures.All(f) {
		f.Add(s.Read(f, "Digest.crc32"))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDigest(b)
		if err != nil {
			return
		}
		if again, err := ParseDigest(AppendDigest(nil, d)); err != nil || again != d {
			t.Fatalf("%q: %d re-parsed as %d, %v", b, d, again, err)
		}
	})
}

// FuzzReader feeds arbitrary Data.db bytes behind arbitrary (but parseable) CompressionInfo.db:
// no input may panic, and whatever the scanner accepts, ReadAt and ReadChunk return alike.
func FuzzReader(f *testing.F) {
	data := mixedData(3000)
	for _, c := range allCodecs[:8] {
		for _, ratio := range []float64{0, 1.5} {
			file, res := writeAll(f, WriterOptions{Version: vOA, Compressor: c.class, Options: c.opts, ChunkLength: 512, MinCompressRatio: ratio}, data, 3)
			f.Add(res.Info.Append(nil, vOA), file)
		}
	}
	f.Fuzz(fuzzReader)
}

func fuzzReader(t *testing.T, infoBytes, file []byte) {
	info, err := ParseInfo(infoBytes, vOA)
	if err != nil || info.ChunkLength > 4096 {
		return
	}
	r, err := NewReader(bytes.NewReader(file), int64(len(file)), info)
	if err != nil {
		return
	}
	var scanned []byte
	scanErr := r.ForEachChunk(func(_ int, b []byte) error { scanned = append(scanned, b...); return nil })
	var chunked []byte
	var chunkErr error
	for i := range r.ChunkCount() {
		if chunked, chunkErr = r.ReadChunk(i, chunked); chunkErr != nil {
			break
		}
	}
	if (scanErr == nil) != (chunkErr == nil) {
		t.Fatalf("scan error %v, ReadChunk error %v", scanErr, chunkErr)
	}
	if scanErr != nil {
		return
	}
	if !bytes.Equal(scanned, chunked) || int64(len(scanned)) != r.DataLength() {
		t.Fatalf("scan %d bytes, ReadChunk %d, DataLength %d", len(scanned), len(chunked), r.DataLength())
	}
	all := make([]byte, r.DataLength())
	if n, err := r.ReadAt(all, 0); n != len(all) || err != nil || !bytes.Equal(all, scanned) {
		t.Fatalf("ReadAt: %d, %v", n, err)
	}
}
