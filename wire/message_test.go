package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestEveryMessageHasSamples(t *testing.T) {
	seen := map[MsgType]bool{}
	for _, s := range samples() {
		seen[s.m.Type()] = true
	}
	for typ := MsgType(1); typ.known(); typ++ {
		if !seen[typ] {
			t.Errorf("no sample of %v", typ)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, s := range samples() {
		t.Run(s.name, func(t *testing.T) {
			b := s.m.Append(nil)
			if len(b) != s.m.Length() {
				t.Fatalf("Length() = %d, Append wrote %d bytes", s.m.Length(), len(b))
			}
			prefix := []byte("keep")
			if got := s.m.Append(prefix); !bytes.Equal(got[:4], prefix) || !bytes.Equal(got[4:], b) {
				t.Fatal("Append(prefix) did not append after the prefix")
			}
			if got := AppendMessage(nil, s.m); !bytes.Equal(got, b) {
				t.Fatal("AppendMessage differs from Append")
			}
			m, n, err := ParseMessage(b, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(b) {
				t.Fatalf("consumed %d of %d bytes", n, len(b))
			}
			if !reflect.DeepEqual(m, s.m) {
				t.Fatalf("round trip changed the message:\n got %+.200v\nwant %+.200v", m, s.m)
			}
			typ, bodyLen, hn, err := ReadFrameHeader(b, Limits{})
			if err != nil || typ != s.m.Type() || hn+bodyLen != len(b) {
				t.Fatalf("ReadFrameHeader = %v, %d, %d, %v", typ, bodyLen, hn, err)
			}
		})
	}
}

func TestParseConsumesOneFrame(t *testing.T) {
	var b []byte
	all := samples()
	for _, s := range all {
		b = s.m.Append(b)
	}
	for i, s := range all {
		m, n, err := ParseMessage(b, Limits{})
		if err != nil {
			t.Fatalf("frame %d (%s): %v", i, s.name, err)
		}
		if !reflect.DeepEqual(m, s.m) {
			t.Fatalf("frame %d (%s) differs", i, s.name)
		}
		b = b[n:]
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes left over", len(b))
	}
}

func TestEveryStrictPrefixIsEOF(t *testing.T) {
	for _, s := range samples() {
		b := s.m.Append(nil)
		for i := range len(b) {
			if _, n, err := ParseMessage(b[:i], Limits{}); err != io.EOF || n != 0 {
				t.Fatalf("%s: prefix of %d/%d bytes: n=%d err=%v, want io.EOF", s.name, i, len(b), n, err)
			}
		}
	}
}

// The bytes of a few messages are pinned so that an accidental change of tag, order or
// integer encoding cannot pass the round-trip tests unnoticed.
func TestGoldenEncodings(t *testing.T) {
	for _, tc := range []struct {
		m   Message
		hex string
	}{
		{&Keepalive{Nanos: 300}, "0b04" + "0102ac02"},
		{&Hello{MinVersion: 1, MaxVersion: 1, Node: "n", Features: []string{"f"}},
			"010c" + "010101" + "020101" + "03016e" + "040166"},
		{&Failure{Code: CodeChecksum, Reason: "bad"},
			"0a0a" + "010105" + "0200" + "0303626164"},
		{&Data{SSTableID: "a", Stream: StreamIndex, Offset: 5, Payload: []byte("xy")},
			"0610" + "010161" + "020101" + "030100" + "040105" + "05027879"},
		{&Prepare{SSTables: []PlannedSSTable{{ID: "s", Kind: KindPartial, Bytes: 300, Partitions: 1}}},
			"0423" + "0110" + strings.Repeat("00", 16) +
				"020f" + "010173" + "020102" + "0300" + "0402ac02" + "050101"},
	} {
		if got := hex.EncodeToString(tc.m.Append(nil)); got != tc.hex {
			t.Errorf("%v encodes as\n%s, want\n%s", tc.m.Type(), got, tc.hex)
		}
	}
}

func TestMissingRequiredField(t *testing.T) {
	for _, s := range samples() {
		b := s.m.Append(nil)
		typ, fs := splitFrame(b)
		sc := registry[typ].schema
		for _, f := range fs {
			if sc.isRepeated(f.tag) || sc.optional&(1<<f.tag) != 0 {
				continue
			}
			name := sc.fieldName(f.tag)
			without := rewrite(b, func(fs []fld) []fld {
				var out []fld
				for _, g := range fs {
					if g.tag != f.tag {
						out = append(out, g)
					}
				}
				return out
			})
			_, _, err := ParseMessage(without, Limits{})
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Message != typ || fe.Field != name || !errors.Is(err, ErrMissingField) {
				t.Errorf("%s without %s: err = %v", s.name, name, err)
			}
		}
	}
}

func TestMissingElementField(t *testing.T) {
	m := &Manifest{Runs: []Run{{}, {FirstChunk: 1, ChunkCount: 2, FileOffset: 3, Length: 4}}}
	b := rewrite(m.Append(nil), func(fs []fld) []fld {
		runs := 0
		for i, f := range fs {
			if f.tag == manifestRuns {
				if runs == 1 {
					fs[i].val = body(split(f.val)[:3]...) // drop Length
				}
				runs++
			}
		}
		return fs
	})
	_, _, err := ParseMessage(b, Limits{})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Runs[1].Length" || !errors.Is(err, ErrMissingField) {
		t.Fatalf("err = %v", err)
	}
	if want := "wire: Manifest.Runs[1].Length: missing required field"; err.Error() != want {
		t.Fatalf("error text %q, want %q", err, want)
	}
}

func TestDuplicateFieldIsMalformed(t *testing.T) {
	for _, s := range samples() {
		b := s.m.Append(nil)
		typ, fs := splitFrame(b)
		sc := registry[typ].schema
		for _, f := range fs {
			if sc.isRepeated(f.tag) {
				continue
			}
			twice := rewrite(b, func(fs []fld) []fld { return append(fs, f) })
			_, _, err := ParseMessage(twice, Limits{})
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != sc.fieldName(f.tag) || !errors.Is(err, ErrMalformed) {
				t.Errorf("%s with %s twice: err = %v", s.name, sc.fieldName(f.tag), err)
			}
		}
	}
}

func TestUnknownFieldsAreSkipped(t *testing.T) {
	junk := []fld{{0, []byte("zero tag")}, {63, nil}, {64, []byte{1}}, {1 << 40, bytes.Repeat([]byte{0xee}, 300)}}
	interleave := func(fs []fld) []fld {
		out := append([]fld(nil), junk...)
		for _, f := range fs {
			out = append(out, f, junk[1])
		}
		return append(out, junk...)
	}
	for _, s := range samples() {
		b := rewrite(s.m.Append(nil), func(fs []fld) []fld {
			// Unknown fields inside list elements are skipped too. (Hello's only list,
			// Features, holds strings, not elements.)
			typ := s.m.Type()
			for i, f := range fs {
				if registry[typ].schema.isRepeated(f.tag) && typ != MsgHello {
					fs[i].val = body(interleave(split(f.val))...)
				}
			}
			return interleave(fs)
		})
		m, n, err := ParseMessage(b, Limits{})
		if err != nil || n != len(b) || !reflect.DeepEqual(m, s.m) {
			t.Errorf("%s with unknown fields: n=%d/%d err=%v equal=%v", s.name, n, len(b), err, reflect.DeepEqual(m, s.m))
		}
	}
}

func TestFieldsInAnyOrder(t *testing.T) {
	for _, s := range samples() {
		b := rewrite(s.m.Append(nil), func(fs []fld) []fld {
			// Reverse the scalar fields but keep list elements in their order.
			typ := s.m.Type()
			var scalars, lists []fld
			for _, f := range fs {
				if registry[typ].schema.isRepeated(f.tag) {
					lists = append(lists, f)
				} else {
					scalars = append([]fld{f}, scalars...)
				}
			}
			return append(lists, scalars...)
		})
		m, _, err := ParseMessage(b, Limits{})
		if err != nil || !reflect.DeepEqual(m, s.m) {
			t.Errorf("%s reordered: err=%v", s.name, err)
		}
	}
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{MsgHello.String(), "Hello"},
		{MsgTCPDataPlane.String(), "TCPDataPlane"},
		{MsgType(0).String(), "MsgType(0)"},
		{MsgType(99).String(), "MsgType(99)"},
		{OpFetch.String(), "fetch"},
		{OpCleanup.String(), "cleanup"},
		{Op(0).String(), "Op(0)"},
		{Op(7).String(), "Op(7)"},
		{KindEntire.String(), "entire"},
		{KindRows.String(), "rows"},
		{Kind(9).String(), "Kind(9)"},
		{StreamRuns.String(), "runs"},
		{StreamComponent.String(), "component"},
		{DataStream(3).String(), "DataStream(3)"},
		{CodeProtocol.String(), "protocol"},
		{CodeNotFound.String(), "not_found"},
		{CodePeerGone.String(), "peer_gone"},
		{Code(0).String(), "Code(0)"},
		{Code(12).String(), "Code(12)"},
		{sid.String(), "0123456789abcdeffedcba9876543210"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// The numeric values are part of the protocol; this test is the table in doc.go.
func TestNumbersAreStable(t *testing.T) {
	types := []MsgType{MsgHello, MsgHelloAck, MsgStreamRequest, MsgPrepare, MsgManifest, MsgData,
		MsgReceived, MsgInstalled, MsgComplete, MsgFailure, MsgKeepalive, MsgTCPDataPlane}
	for i, typ := range types {
		if typ != MsgType(i+1) {
			t.Errorf("%v = %d, want %d", typ, typ, i+1)
		}
	}
	codes := []Code{CodeProtocol, CodeVersion, CodeUnauthorized, CodeNotFound, CodeChecksum, CodeNoSpace,
		CodeShuttingDown, CodeTimeout, CodeRefused, CodeInternal, CodePeerGone}
	for i, c := range codes {
		if c != Code(i+1) {
			t.Errorf("%v = %d, want %d", c, c, i+1)
		}
	}
	ops := []Op{OpFetch, OpBootstrap, OpDecommission, OpMove, OpRepair, OpCleanup}
	for i, o := range ops {
		if o != Op(i+1) {
			t.Errorf("%v = %d, want %d", o, o, i+1)
		}
	}
	if KindEntire != 1 || KindPartial != 2 || KindRows != 3 || StreamRuns != 0 || StreamIndex != 1 || StreamComponent != 2 {
		t.Error("Kind or DataStream values changed")
	}
}

func TestFailureIsAnError(t *testing.T) {
	var err error = &Failure{Code: CodeNoSpace, SSTableID: "nb-3-big", Reason: "need 10 GiB"}
	if got, want := err.Error(), "peer failure (no_space) on sstable nb-3-big: need 10 GiB"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var f *Failure
	if !errors.As(err, &f) || f.Code != CodeNoSpace {
		t.Error("errors.As does not find the Failure")
	}
	if got, want := (&Failure{Code: CodeShuttingDown, Reason: "drain"}).Error(), "peer failure (shutting_down): drain"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
