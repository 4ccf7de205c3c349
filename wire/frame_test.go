package wire

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
)

// allocated returns the bytes f allocates on the heap, averaged over runs.
func allocated(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	f() // warm up: first calls may allocate package state
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

func TestReadFrameHeader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		lim     Limits
		typ     MsgType
		bodyLen int
		n       int
		err     error
	}{
		{name: "empty", in: nil, err: io.EOF},
		{name: "type only", in: uv(5), err: io.EOF},
		{name: "type cut", in: []byte{0x80}, err: io.EOF},
		{name: "length cut", in: []byte{5, 0x80, 0x80}, err: io.EOF},
		{name: "header only", in: []byte{5, 0}, typ: MsgManifest, bodyLen: 0, n: 2},
		{name: "body need not be present", in: append(uv(6), uv(300)...), typ: MsgData, bodyLen: 300, n: 3},
		{name: "unknown type", in: append(uv(1<<40), 1), typ: 1 << 40, bodyLen: 1, n: 7},
		{name: "type overflows", in: bytes.Repeat([]byte{0xff}, 11), err: ErrMalformed},
		{name: "length overflows", in: append([]byte{1}, bytes.Repeat([]byte{0xff}, 11)...), err: ErrMalformed},
		{name: "at the limit", in: append(uv(1), uv(98)...), lim: Limits{MaxFrame: 100}, typ: MsgHello, bodyLen: 98, n: 2},
		{name: "over the limit", in: append(uv(1), uv(99)...), lim: Limits{MaxFrame: 100}, err: ErrFrameTooLarge},
		{name: "header over the limit", in: append(uv(1), uv(0)...), lim: Limits{MaxFrame: 1}, err: ErrFrameTooLarge},
		{name: "max length", in: append(uv(1), uv(math.MaxUint64)...), err: ErrFrameTooLarge},
		{name: "default limit", in: append(uv(1), uv(64<<20-5)...), typ: MsgHello, bodyLen: 64<<20 - 5, n: 5},
		{name: "over default limit", in: append(uv(1), uv(64<<20-4)...), err: ErrFrameTooLarge},
	} {
		typ, bodyLen, n, err := ReadFrameHeader(tc.in, tc.lim)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || n != 0 {
				t.Errorf("%s: n=%d err=%v, want %v", tc.name, n, err, tc.err)
			}
			continue
		}
		if err != nil || typ != tc.typ || bodyLen != tc.bodyLen || n != tc.n {
			t.Errorf("%s: got %v, %d, %d, %v; want %v, %d, %d", tc.name, typ, bodyLen, n, err, tc.typ, tc.bodyLen, tc.n)
		}
	}
}

func TestHugeFrameClaimAllocatesNothingBig(t *testing.T) {
	// 20 bytes claiming a 1 GiB Manifest body.
	claim := append(append(uv(uint64(MsgManifest)), uv(1<<30)...), make([]byte, 15)...)[:20]
	var err error
	// TotalAlloc is process-wide: the race runtime and the test framework allocate a little
	// beside us, so the bound is "nothing near the claim", not zero.
	if got := allocated(20, func() { _, _, err = ParseMessage(claim, Limits{}) }); got > 64<<10 {
		t.Errorf("rejecting the frame allocated %d bytes", got)
	}
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v, want ErrFrameTooLarge", err)
	}
	// With a limit that admits it, the frame is merely incomplete.
	big := Limits{MaxFrame: 2 << 30}
	if got := allocated(20, func() { _, _, err = ParseMessage(claim, big) }); got > 64<<10 {
		t.Errorf("waiting for the body allocated %d bytes", got)
	}
	if err != io.EOF {
		t.Fatalf("err = %v, want io.EOF", err)
	}
	var d Data
	claim[0] = byte(MsgData)
	if _, err := ParseData(claim, Limits{}, &d); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("ParseData err = %v, want ErrFrameTooLarge", err)
	}
}

func TestListLimitsAreCheckedBeforeAllocating(t *testing.T) {
	// 100000 empty Run elements: 200 KB of frame that would decode into 3.2 MB of Runs.
	fs := make([]fld, 100000)
	for i := range fs {
		fs[i] = fld{manifestRuns, nil}
	}
	b := frame(MsgManifest, body(fs...))
	var err error
	lim := Limits{MaxRuns: 1000}
	if got := allocated(5, func() { _, _, err = ParseMessage(b, lim) }); got > 4096 {
		t.Errorf("rejecting the list allocated %d bytes", got)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Runs" || !errors.Is(err, ErrLimitExceeded) {
		t.Fatalf("err = %v, want Runs: ErrLimitExceeded", err)
	}
}

func TestLimits(t *testing.T) {
	lim := Limits{MaxRanges: 2, MaxSSTables: 2, MaxRuns: 2, MaxComponents: 2, MaxFeatures: 2, MaxStringLen: 4}
	four, five := "abcd", "abcde"
	for _, tc := range []struct {
		field   string
		atLimit Message
		over    Message
	}{
		{"Features", &Hello{Features: []string{"a", "b"}}, &Hello{Features: []string{"a", "b", "c"}}},
		{"Node", &Hello{Node: four}, &Hello{Node: five}},
		{"Ranges", &StreamRequest{Ranges: make([]TokenRange, 2)}, &StreamRequest{Ranges: make([]TokenRange, 3)}},
		{"Ranges[1].Right", &StreamRequest{Ranges: []TokenRange{{}, {Right: []byte(four)}}},
			&StreamRequest{Ranges: []TokenRange{{}, {Right: []byte(five)}}}},
		{"Resume", &StreamRequest{Resume: make([]ResumePoint, 2)}, &StreamRequest{Resume: make([]ResumePoint, 3)}},
		{"Table", &StreamRequest{Table: four}, &StreamRequest{Table: five}},
		{"SSTables", &Prepare{SSTables: make([]PlannedSSTable, 2)}, &Prepare{SSTables: make([]PlannedSSTable, 3)}},
		{"SSTables[0].Reason", &Prepare{SSTables: []PlannedSSTable{{Reason: four}}}, &Prepare{SSTables: []PlannedSSTable{{Reason: five}}}},
		{"Runs", &Manifest{Runs: make([]Run, 2)}, &Manifest{Runs: make([]Run, 3)}},
		{"Components", &Manifest{Components: make([]ComponentSpec, 2)}, &Manifest{Components: make([]ComponentSpec, 3)}},
		{"Components[0].Name", &Manifest{Components: []ComponentSpec{{Name: four}}}, &Manifest{Components: []ComponentSpec{{Name: five}}}},
		{"SSTableID", &Data{SSTableID: four}, &Data{SSTableID: five}},
		{"Reason", &Failure{Reason: four}, &Failure{Reason: five}},
	} {
		if _, _, err := ParseMessage(tc.atLimit.Append(nil), lim); err != nil {
			t.Errorf("%s at the limit: %v", tc.field, err)
		}
		_, _, err := ParseMessage(tc.over.Append(nil), lim)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, ErrLimitExceeded) {
			t.Errorf("%s over the limit: err = %v", tc.field, err)
		}
	}
	// Opaque blobs are bounded by the frame alone.
	m := &Manifest{Compression: []byte("more than four"), Statistics: []byte("also more than four")}
	if _, _, err := ParseMessage(m.Append(nil), lim); err != nil {
		t.Errorf("blobs: %v", err)
	}
	d := &Data{Payload: []byte("a payload longer than MaxStringLen")}
	if _, _, err := ParseMessage(d.Append(nil), lim); err != nil {
		t.Errorf("payload: %v", err)
	}
}

func TestMalformedBodies(t *testing.T) {
	valid := func(t MsgType, edit func([]fld) []fld) []byte {
		for _, s := range samples() {
			if s.m.Type() == t && !strings.HasSuffix(s.name, "/zero") {
				return rewrite(s.m.Append(nil), edit)
			}
		}
		panic("no sample")
	}
	set := func(tag uint64, val []byte) func([]fld) []fld {
		return func(fs []fld) []fld {
			for i := range fs {
				if fs[i].tag == tag {
					fs[i].val = val
				}
			}
			return fs
		}
	}
	for _, tc := range []struct {
		name  string
		in    []byte
		field string
	}{
		{"SessionID of 15 bytes", valid(MsgStreamRequest, set(streamRequestSessionID, make([]byte, 15))), "SessionID"},
		{"SessionID of 17 bytes", valid(MsgPrepare, set(prepareSessionID, make([]byte, 17))), "SessionID"},
		{"SessionID empty", valid(MsgComplete, set(completeSessionID, nil)), "SessionID"},
		{"Token of 31 bytes", valid(MsgTCPDataPlane, set(tcpDataPlaneToken, make([]byte, 31))), "Token"},
		{"uint empty", valid(MsgKeepalive, set(keepaliveNanos, nil)), "Nanos"},
		{"uint with a trailing byte", valid(MsgKeepalive, set(keepaliveNanos, []byte{1, 0})), "Nanos"},
		{"uint cut", valid(MsgKeepalive, set(keepaliveNanos, []byte{0x80})), "Nanos"},
		{"uint overflows 64 bits", valid(MsgKeepalive, set(keepaliveNanos, bytes.Repeat([]byte{0xff}, 10))), "Nanos"},
		{"uint32 field over 2^32-1", valid(MsgHello, set(helloMaxVersion, uv(1<<32))), "MaxVersion"},
		{"uint8 field over 255", valid(MsgStreamRequest, set(streamRequestOperation, uv(256))), "Operation"},
		{"Data.Stream over 255", valid(MsgData, set(dataStream, uv(256))), "Stream"},
		{"Code over 2^32-1", valid(MsgFailure, set(failureCode, uv(1<<32))), "Code"},
		{"element field malformed", valid(MsgManifest, func(fs []fld) []fld {
			for i := range fs {
				if fs[i].tag == manifestRuns {
					fs[i].val = body(fld{runChunkCount, nil})
				}
			}
			return fs
		}), "Runs[0].ChunkCount"},
		{"element field twice", valid(MsgManifest, func(fs []fld) []fld {
			for i := range fs {
				if fs[i].tag == manifestRuns {
					fs[i].val = append(fs[i].val, field(runFirstChunk, uv(7))...)
					break
				}
			}
			return fs
		}), "Runs[0].FirstChunk"},
		{"element framing broken", valid(MsgPrepare, func(fs []fld) []fld {
			for i := range fs {
				if fs[i].tag == prepareSSTables {
					fs[i].val = []byte{1, 50, 'x'}
					break
				}
			}
			return fs
		}), "SSTables[0]"},
		{"field overruns body", frame(MsgKeepalive, []byte{1, 5, 1}), ""},
		{"field length overflows", frame(MsgKeepalive, append([]byte{1}, bytes.Repeat([]byte{0xff}, 10)...)), ""},
		{"field length huge", frame(MsgKeepalive, append([]byte{1}, uv(1<<62)...)), ""},
		{"tag cut at body end", frame(MsgKeepalive, append(field(1, uv(3)), 0x80)), ""},
		{"length missing at body end", frame(MsgKeepalive, append(field(1, uv(3)), 7)), ""},
	} {
		_, _, err := ParseMessage(tc.in, Limits{})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want %q: ErrMalformed", tc.name, err, tc.field)
		}
	}
}

func TestUnknownMessageCanBeSkipped(t *testing.T) {
	unknown := frame(MsgType(4000), body(fld{1, []byte("from the future")}))
	stream := append(append([]byte(nil), unknown...), (&Keepalive{Nanos: 9}).Append(nil)...)

	_, n, err := ParseMessage(stream, Limits{})
	var ue *UnknownMessageError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnknownMessage) || n != 0 {
		t.Fatalf("n=%d err=%v, want *UnknownMessageError", n, err)
	}
	if ue.Type != 4000 || ue.FrameLength != len(unknown) {
		t.Fatalf("got %+v, want type 4000 and length %d", ue, len(unknown))
	}
	if want := "wire: MsgType(4000) (20-byte frame): unknown message type"; err.Error() != want {
		t.Errorf("error text %q, want %q", err, want)
	}
	m, _, err := ParseMessage(stream[ue.FrameLength:], Limits{})
	if err != nil || m.(*Keepalive).Nanos != 9 {
		t.Fatalf("frame after the skipped one: %v, %v", m, err)
	}
	// Type 0 is not a message either, and an incomplete unknown frame is still io.EOF.
	if _, _, err := ParseMessage(frame(0, nil), Limits{}); !errors.As(err, &ue) {
		t.Errorf("type 0: %v", err)
	}
	if _, _, err := ParseMessage(unknown[:len(unknown)-1], Limits{}); err != io.EOF {
		t.Errorf("incomplete unknown frame: %v", err)
	}
}

func TestFieldErrorText(t *testing.T) {
	_, _, err := ParseMessage(frame(MsgHelloAck, body(fld{helloAckNode, []byte("n")})), Limits{})
	if want := "wire: HelloAck.Version: missing required field"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	_, _, err = ParseMessage(frame(MsgKeepalive, []byte{1, 5, 1}), Limits{})
	if want := "wire: Keepalive: malformed: field 1 at body offset 0 overruns the body"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
