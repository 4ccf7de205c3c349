package wire

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// fuzzLimits are small so that the fuzzer reaches every limit check.
var fuzzLimits = Limits{MaxFrame: 1 << 20, MaxRanges: 8, MaxSSTables: 8, MaxRuns: 8, MaxComponents: 8, MaxFeatures: 8, MaxStringLen: 256}

func FuzzParseMessage(f *testing.F) {
	for _, s := range samples() {
		if strings.HasSuffix(s.name, "/max") || s.name == "Data/64KiB" {
			continue // beyond fuzzLimits, and slow to mutate
		}
		b := s.m.Append(nil)
		f.Add(b)
		f.Add(rewrite(b, func(fs []fld) []fld { return append([]fld{{99, []byte("unknown")}}, fs...) }))
	}
	f.Add(frame(MsgType(4000), nil))
	f.Add(frame(MsgKeepalive, []byte{1, 5, 1}))
	f.Add(append(uv(uint64(MsgManifest)), uv(1<<30)...))

	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := ParseMessage(b, fuzzLimits)
		var d Data
		dn, derr := ParseData(b, fuzzLimits, &d)
		if err != nil {
			if m != nil || n != 0 {
				t.Fatalf("error %v with message %v and n %d", err, m, n)
			}
			if derr == nil {
				t.Fatalf("ParseData accepted what ParseMessage rejected: %v", err)
			}
			if err == io.EOF {
				return
			}
			var fe *FieldError
			var ue *UnknownMessageError
			if !errors.As(err, &fe) && !errors.As(err, &ue) && !errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		if _, _, err := ParseMessage(b[:n-1], fuzzLimits); err != io.EOF {
			t.Fatalf("strict prefix of a parsed frame: %v, want io.EOF", err)
		}
		if md, ok := m.(*Data); ok {
			if derr != nil || dn != n || !reflect.DeepEqual(md, &d) {
				t.Fatalf("ParseData disagrees: n %d/%d, err %v", dn, n, derr)
			}
		} else if !errors.Is(derr, ErrUnexpectedMessage) {
			t.Fatalf("ParseData on %v: %v", m.Type(), derr)
		}
		re := m.Append(nil)
		if len(re) != m.Length() {
			t.Fatalf("Length() = %d, Append wrote %d", m.Length(), len(re))
		}
		// The re-encoding drops unknown fields and uses shortest varints, so it is never
		// longer than the input and passes the same limits.
		if len(re) > n {
			t.Fatalf("re-encoding grew from %d to %d bytes", n, len(re))
		}
		m2, n2, err := ParseMessage(re, fuzzLimits)
		if err != nil || n2 != len(re) || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encoding does not parse back: n %d/%d err %v\n%+v\n%+v", n2, len(re), err, m, m2)
		}
	})
}
