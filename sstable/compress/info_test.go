package compress

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/version"
)

var (
	vMD = version.Version{Format: version.Big, Name: "md"}
	vNB = version.Version{Format: version.Big, Name: "nb"}
	vOA = version.Version{Format: version.Big, Name: "oa"}
	vDA = version.Version{Format: version.BTI, Name: "da"}
)

func TestInfoMaxCompressedLengthOnlyFromNA(t *testing.T) {
	info := &Info{Compressor: LZ4, ChunkLength: 65536, MaxCompressedLength: math.MaxInt32, DataLength: 10, Offsets: []int64{0}}
	md, nb := info.Append(nil, vMD), info.Append(nil, vNB)
	if len(nb)-len(md) != 4 {
		t.Fatalf("nb encoding is %d bytes, md %d: want 4 more for maxCompressedLength", len(nb), len(md))
	}
	got, err := ParseInfo(md, vMD)
	if err != nil || got.MaxCompressedLength != math.MaxInt32 {
		t.Fatalf("md: %+v, %v; want MaxCompressedLength = MaxInt32", got, err)
	}
	// The same bytes under the other version's layout do not parse.
	if _, err := ParseInfo(md, vDA); err == nil {
		t.Error("md bytes parsed as da")
	}
}

func TestParseInfoRejects(t *testing.T) {
	base := Info{Compressor: LZ4, ChunkLength: 16, MaxCompressedLength: math.MaxInt32, DataLength: 40, Offsets: []int64{0, 10, 20}}
	cases := []struct {
		name   string
		mutate func(*Info)
		is     error
	}{
		{"chunk length not a power of two", func(i *Info) { i.ChunkLength = 24 }, ErrInvalid},
		{"zero chunk length", func(i *Info) { i.ChunkLength = 0 }, ErrInvalid},
		{"negative chunk length", func(i *Info) { i.ChunkLength = -16 }, ErrInvalid},
		{"zero max compressed length", func(i *Info) { i.MaxCompressedLength = 0 }, ErrInvalid},
		{"negative data length", func(i *Info) { i.DataLength = -1 }, ErrInvalid},
		{"too few chunks", func(i *Info) { i.Offsets = i.Offsets[:2] }, ErrInvalid},
		{"two chunks too many", func(i *Info) { i.Offsets = append(i.Offsets, 30, 40) }, ErrInvalid},
		{"offsets decrease", func(i *Info) { i.Offsets[2] = 5 }, ErrInvalid},
		{"chunk shorter than its CRC", func(i *Info) { i.Offsets[2] = 13 }, ErrInvalid},
		{"negative first offset", func(i *Info) { i.Offsets[0] = -4 }, ErrInvalid},
	}
	for _, c := range cases {
		info := base
		info.Offsets = append([]int64(nil), base.Offsets...)
		c.mutate(&info)
		_, err := ParseInfo(info.Append(nil, vOA), vOA)
		var oe *encoding.OffsetError
		if !errors.Is(err, c.is) || !errors.As(err, &oe) {
			t.Errorf("%s: %v, want %v with an offset", c.name, err, c.is)
		}
	}
	// The trailing empty chunk is one more than needed: legal.
	info := base
	info.Offsets = append([]int64(nil), 0, 10, 20, 30)
	if _, err := ParseInfo(info.Append(nil, vOA), vOA); err != nil {
		t.Errorf("trailing empty chunk: %v", err)
	}
	// Every strict prefix is truncated; trailing bytes are rejected.
	good := base.Append(nil, vOA)
	for n := range len(good) {
		if _, err := ParseInfo(good[:n], vOA); err == nil {
			t.Fatalf("prefix of %d bytes parsed", n)
		}
	}
	if _, err := ParseInfo(append(good, 0), vOA); !errors.Is(err, ErrInvalid) {
		t.Errorf("trailing byte: %v", err)
	}
	// A hostile count cannot make the parser allocate.
	hostile := encoding.AppendUTF(nil, LZ4)
	hostile = encoding.AppendI32(hostile, 0x7fffffff)
	if _, err := ParseInfo(hostile, vOA); !errors.Is(err, encoding.ErrTruncated) {
		t.Errorf("hostile option count: %v", err)
	}
}

func TestInfoChunkGeometry(t *testing.T) {
	// oa-13-big's shape: 146190 bytes in 16 KiB chunks, 9 needed plus a trailing empty one.
	info := &Info{ChunkLength: 16384, DataLength: 146190, Offsets: []int64{0, 100, 200, 300, 400, 500, 600, 700, 800, 900}}
	for _, c := range []struct {
		pos  int64
		want int
	}{{0, 0}, {16383, 0}, {16384, 1}, {146189, 8}, {146190, -1}, {-1, -1}} {
		if got := info.ChunkFor(c.pos); got != c.want {
			t.Errorf("ChunkFor(%d) = %d, want %d", c.pos, got, c.want)
		}
	}
	for _, c := range []struct {
		i           int
		start, n    int64
		off, onDisk int64
	}{
		{0, 0, 16384, 0, 96},
		{8, 131072, 15118, 800, 96},
		{9, 147456, 0, 900, 1000 - 900 - 4}, // the last entry ends at the file length
	} {
		if s, n := info.UncompressedSpan(c.i); s != c.start || n != c.n {
			t.Errorf("UncompressedSpan(%d) = %d, %d; want %d, %d", c.i, s, n, c.start, c.n)
		}
		if o, n := info.ChunkSpan(c.i, 1000); o != c.off || n != c.onDisk {
			t.Errorf("ChunkSpan(%d) = %d, %d; want %d, %d", c.i, o, n, c.off, c.onDisk)
		}
	}
	if info.ChunkCount() != 10 {
		t.Errorf("ChunkCount %d", info.ChunkCount())
	}
}

func TestParseCRC(t *testing.T) {
	c := &CRCInfo{ChunkLength: 65536, CRCs: []uint32{0x044ed7bb, 0}}
	b := c.Append(nil)
	got, err := ParseCRC(b)
	if err != nil || got.ChunkLength != 65536 || len(got.CRCs) != 2 || got.CRCs[0] != 0x044ed7bb {
		t.Fatalf("%+v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, {0, 0}, {0, 0, 0, 0}, {0xff, 0xff, 0xff, 0xff}, append(b, 1)} {
		if _, err := ParseCRC(bad); err == nil {
			t.Errorf("ParseCRC(%x) succeeded", bad)
		}
	}
}

func TestParseDigest(t *testing.T) {
	good := map[string]uint32{"1862825159": 1862825159, "0": 0, "4294967295": 4294967295, "72275899\n": 72275899}
	for s, want := range good {
		if got, err := ParseDigest([]byte(s)); err != nil || got != want {
			t.Errorf("ParseDigest(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "\n", "-1", "+1", "4294967296", "12 ", "0x10", "１"} {
		if _, err := ParseDigest([]byte(s)); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseDigest(%q): %v, want ErrInvalid", s, err)
		}
	}
	if got := string(AppendDigest([]byte("x"), 4294967295)); got != "x4294967295" {
		t.Errorf("AppendDigest: %q", got)
	}
}

// Encode writes exactly Append's bytes, whatever the offset count (none, fewer than one
// buffer, several buffers, a buffer's worth exactly), for versions with and without
// maxCompressedLength.
func TestInfoEncodeIsAppend(t *testing.T) {
	for _, n := range []int{0, 1, 500, 4<<10/8 - 2, 4 << 10, 33000} {
		info := &Info{Compressor: LZ4, Options: []Option{{"k", "v"}}, ChunkLength: 16384, MaxCompressedLength: 15000, DataLength: int64(n) * 16384}
		for i := 0; i < n; i++ {
			info.Offsets = append(info.Offsets, int64(i)*9000+7)
		}
		for _, v := range []version.Version{vMD, vOA} {
			var w bytes.Buffer
			if err := info.Encode(&w, v); err != nil {
				t.Fatal(err)
			}
			if want := info.Append(nil, v); !bytes.Equal(w.Bytes(), want) {
				t.Fatalf("%d offsets, %s: Encode wrote %d bytes, Append %d", n, v.Name, w.Len(), len(want))
			}
		}
	}
}
