// Package printable makes strings that came from peers (node names, table names, failure
// reasons) safe to show on a terminal or in a log: control characters — C0, DEL and C1,
// which include the escape sequences terminals act on — and invalid UTF-8 are replaced by Go
// escapes (\x1b, \u009b), everything else is kept as it is.
package printable

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// String returns s with its control characters and invalid bytes escaped.
func String(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case isControl(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u009b'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			if c >= 0x80 {
				return utf8.ValidString(s[i:]) && !hasC1(s[i:])
			}
			return false
		}
	}
	return true
}

func hasC1(s string) bool {
	for _, r := range s {
		if isControl(r) {
			return true
		}
	}
	return false
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// Value formats a log or table value with String.
func Value(v any) string {
	switch x := v.(type) {
	case string:
		return String(x)
	case nil:
		return ""
	}
	return String(fmt.Sprintf("%v", v))
}

// JSONWriter passes JSON log lines to W with DEL and the C1 controls escaped as \u007f ..
// \u009f (the JSON encoder escapes C0 already). Those bytes only occur inside JSON strings,
// so the lines stay valid JSON with the same values.
type JSONWriter struct{ W io.Writer }

func (w JSONWriter) Write(p []byte) (int, error) {
	if !bytes.ContainsFunc(p, func(r rune) bool { return r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
		return w.W.Write(p)
	}
	out := make([]byte, 0, len(p)+16)
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		if r == 0x7f || (r >= 0x80 && r < 0xa0 && n == 2) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, p[i:i+n]...)
		}
		i += n
	}
	if _, err := w.W.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
