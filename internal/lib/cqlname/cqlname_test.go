package cqlname

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, ok := range []string{"ks", "K_1", "system_auth", strings.Repeat("a", 48), "_"} {
		if err := Check("keyspace", ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("a", 49), "../../../../tmp/x", "a/b", "a.b", "a-b", "a b",
		"ks\x00", "ks\n", "ké", "\x1b[31m"} {
		if err := Check("table", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Check(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add("ks")
	f.Add("../x")
	f.Fuzz(func(t *testing.T, s string) {
		if Check("keyspace", s) != nil {
			return
		}
		// Whatever passes is safe as one path element.
		if strings.ContainsAny(s, "/\\.\x00") || s == "" || len(s) > MaxLength {
			t.Fatalf("accepted %q", s)
		}
	})
}
