package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// A chunk's LZ4 record grows to any length the content's matches allow, one byte at a time,
// and every grown record decodes to the same chunk and carries its own CRC.
func TestGrowRecordHitsEveryLength(t *testing.T) {
	codec, err := CodecFor(LZ4, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []string{"filler-like", "text", "half random"} {
		chunk := make([]byte, 16<<10)
		for i := range chunk {
			switch shape {
			case "filler-like":
				if i%700 > 680 {
					chunk[i] = byte('a' + rng.IntN(26))
				}
			case "text":
				chunk[i] = byte('a' + rng.IntN(6))
			default:
				if i < len(chunk)/2 {
					chunk[i] = byte(rng.Uint32())
				} else {
					chunk[i] = byte(i / 64)
				}
			}
		}
		rec, err := AppendRecord(nil, codec, chunk, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		grown, tried := 0, 0
		for by := 0; by <= 4096; by += 1 + by/512 {
			tried++
			out, err := GrowRecord(codec, chunk, rec, by, 1<<30)
			if errors.Is(err, ErrNoExactLength) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(rec)+by {
				t.Fatalf("%s: grown by %d: %d bytes, want %d", shape, by, len(out), len(rec)+by)
			}
			body := out[:len(out)-CRCLength]
			if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(out[len(body):]) {
				t.Fatalf("%s: grown by %d: CRC does not match", shape, by)
			}
			got, err := codec.Decompress(nil, out[:len(out)-CRCLength], len(chunk))
			if err != nil || !bytes.Equal(got, chunk) {
				t.Fatalf("%s: grown by %d: %v", shape, by, err)
			}
			grown++
		}
		t.Logf("%s: %d-byte record grows to %d of %d lengths tried in 0..4096", shape, len(rec), grown, tried)
		if grown != tried {
			t.Errorf("%s: grew to only %d of %d lengths", shape, grown, tried)
		}
	}
}

// A record never grows to the raw threshold, where readers would take its body for raw bytes.
func TestGrowRecordStopsBelowTheRawThreshold(t *testing.T) {
	codec, _ := CodecFor(LZ4, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	chunk := make([]byte, 4096)
	for i := range chunk {
		chunk[i] = byte('a' + rng.IntN(6))
	}
	rec, err := AppendRecord(nil, codec, chunk, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	body := len(rec) - CRCLength
	if _, err := GrowRecord(codec, chunk, rec, 10, body+11); err != nil {
		t.Errorf("to one byte below the threshold: %v", err)
	}
	if _, err := GrowRecord(codec, chunk, rec, 10, body+10); !errors.Is(err, ErrNoExactLength) {
		t.Errorf("to the threshold: %v, want ErrNoExactLength", err)
	}
}
