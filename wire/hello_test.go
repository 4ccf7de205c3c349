package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestNegotiate(t *testing.T) {
	h := func(lo, hi uint32) Hello { return Hello{MinVersion: lo, MaxVersion: hi, Node: "n"} }
	for _, tc := range []struct {
		name          string
		local, remote Hello
		want          uint32
		errText       string
	}{
		{"same single version", h(1, 1), h(1, 1), 1, ""},
		{"highest common", h(1, 5), h(2, 3), 3, ""},
		{"overlap at the top of local", h(1, 3), h(3, 9), 3, ""},
		{"remote older", h(2, 4), h(1, 2), 2, ""},
		{"disjoint, remote newer", h(1, 2), h(3, 4), 0, `local node "n" speaks versions 1..2, remote node "n" speaks 3..4`},
		{"disjoint, remote older", h(3, 4), h(1, 2), 0, "speaks versions 3..4"},
		{"remote range inverted", h(1, 3), h(3, 2), 0, `remote node "n" offers the empty version range 3..2`},
		{"remote version 0", h(1, 3), h(0, 0), 0, "remote node"},
		{"local range empty", h(0, 0), h(1, 1), 0, "local node"},
	} {
		got, err := Negotiate(tc.local, tc.remote)
		if tc.errText == "" {
			if err != nil || got != tc.want {
				t.Errorf("%s: got %d, %v; want %d", tc.name, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, ErrNoCommonVersion) || !strings.Contains(err.Error(), tc.errText) || got != 0 {
			t.Errorf("%s: got %d, %v; want ErrNoCommonVersion mentioning %q", tc.name, got, err, tc.errText)
		}
	}
}

func TestNegotiateIsSymmetric(t *testing.T) {
	for lo1 := uint32(0); lo1 < 5; lo1++ {
		for hi1 := uint32(0); hi1 < 5; hi1++ {
			for lo2 := uint32(0); lo2 < 5; lo2++ {
				for hi2 := uint32(0); hi2 < 5; hi2++ {
					a := Hello{MinVersion: lo1, MaxVersion: hi1}
					b := Hello{MinVersion: lo2, MaxVersion: hi2}
					v1, err1 := Negotiate(a, b)
					v2, err2 := Negotiate(b, a)
					if v1 != v2 || (err1 == nil) != (err2 == nil) {
						t.Fatalf("%d..%d vs %d..%d: %d,%v vs %d,%v", lo1, hi1, lo2, hi2, v1, err1, v2, err2)
					}
					if err1 == nil && (v1 < max(lo1, lo2) || v1 > min(hi1, hi2) || v1 == 0) {
						t.Fatalf("%d..%d vs %d..%d: chose %d", lo1, hi1, lo2, hi2, v1)
					}
				}
			}
		}
	}
}

func TestThisVersionNegotiatesWithItself(t *testing.T) {
	local := Hello{MinVersion: MinVersion, MaxVersion: MaxVersion, Node: "a"}
	if v, err := Negotiate(local, local); err != nil || v != Version1 {
		t.Fatalf("got %d, %v", v, err)
	}
}
