package fsxtest

import (
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"300M": 300 << 20, "8m": 8 << 20, "1G": 1 << 30, "64K": 64 << 10, "4096": 4096} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "M", "-1M", "0", "1T", "1.5G", "99999999999G"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}

func TestParseFiemap(t *testing.T) {
	out := []byte(`/mnt/dst:
 EXT: FILE-OFFSET      BLOCK-RANGE      TOTAL FLAGS
   0: [0..2047]:       192..2239         2048 0x2000
   1: [2048..4095]:    hole              2048
   2: [4096..4103]:    9000..9007           8 0x1
   3: [4104..4111]:    9008..9015           8 0x2001
`)
	got, err := parseFiemap(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2048+8) * 512; got != want {
		t.Fatalf("shared %d, want %d", got, want)
	}
	if _, err := parseFiemap([]byte("   0: [0..7]:   1..8   8 0xZZ\n")); err == nil {
		t.Fatal("bad flags accepted")
	}
}
