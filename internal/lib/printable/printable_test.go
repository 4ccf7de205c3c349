package printable

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
)

func TestStringEscapesWhatATerminalWouldActOn(t *testing.T) {
	for in, want := range map[string]string{
		"node1":                   "node1",
		"ks.t é 日本":               "ks.t é 日本",
		"\x1b[2J\x1b]0;owned\x07": `\x1b[2J\x1b]0;owned\a`,
		"a\nb\rc\td":              `a\nb\rc\td`,
		"del\x7f":                 `del\x7f`,
		"csi\u009b31m":            `csi\u009b31m`,
		"bad\xffutf8":             `bad\xffutf8`,
		"":                        "",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("\x1b[31mred")
	f.Add("plain")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range String(s) {
			if unicode.IsControl(r) {
				t.Fatalf("String(%q) keeps control %U", s, r)
			}
		}
	})
}

func TestJSONWriterEscapesDELAndC1(t *testing.T) {
	var b strings.Builder
	line := "{\"peer\":\"x\u009b2J\x7f é\"}\n"
	if _, err := (JSONWriter{&b}).Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	if want := `{"peer":"x\u009b2J\u007f é"}` + "\n"; b.String() != want {
		t.Fatalf("wrote %q, want %q", b.String(), want)
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(b.String()), &v); err != nil || v["peer"] != "x\u009b2J\x7f é" {
		t.Fatalf("not the same JSON: %v %q", err, v)
	}
}
