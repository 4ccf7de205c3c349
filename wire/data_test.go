package wire

import (
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"testing"
	"unsafe"
)

func TestAppendDataHeaderThenPayloadIsTheFrame(t *testing.T) {
	for _, s := range samples() {
		d, ok := s.m.(*Data)
		if !ok {
			continue
		}
		want := d.Append(nil)
		hdr := AppendDataHeader(nil, d, len(d.Payload))
		if len(hdr) != DataHeaderLength(d, len(d.Payload)) {
			t.Errorf("%s: DataHeaderLength = %d, header is %d bytes", s.name, DataHeaderLength(d, len(d.Payload)), len(hdr))
		}
		if got := append(hdr, d.Payload...); !bytes.Equal(got, want) {
			t.Errorf("%s: header+payload differs from Append", s.name)
		}
		// The header does not read d.Payload: only its length is given.
		noPayload := *d
		noPayload.Payload = nil
		if got := AppendDataHeader(nil, &noPayload, len(d.Payload)); !bytes.Equal(got, hdr) {
			t.Errorf("%s: header depends on d.Payload", s.name)
		}
	}
}

func TestParseDataAgreesWithParseMessage(t *testing.T) {
	for _, s := range samples() {
		b := s.m.Append(nil)
		var d Data
		n, err := ParseData(b, Limits{}, &d)
		if _, isData := s.m.(*Data); !isData {
			if !errors.Is(err, ErrUnexpectedMessage) || n != 0 {
				t.Errorf("%s: ParseData n=%d err=%v, want ErrUnexpectedMessage", s.name, n, err)
			}
			continue
		}
		if err != nil || n != len(b) || !reflect.DeepEqual(&d, s.m) {
			t.Errorf("%s: ParseData n=%d err=%v equal=%v", s.name, n, err, reflect.DeepEqual(&d, s.m))
		}
		for i := range len(b) {
			if _, err := ParseData(b[:i], Limits{}, &d); err != io.EOF {
				t.Fatalf("%s: prefix %d: %v, want io.EOF", s.name, i, err)
			}
		}
	}
}

func TestDataPayloadAliasesInput(t *testing.T) {
	in := (&Data{SSTableID: "x", Payload: []byte("payload")}).Append(nil)
	in = append(in, "next frame"...)
	m, n, err := ParseMessage(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p := m.(*Data).Payload
	if unsafe.SliceData(p) != &in[n-len(p)] {
		t.Fatal("Payload does not alias the input")
	}
	if cap(p) != len(p) {
		t.Fatalf("cap(Payload) = %d, want %d so appends cannot clobber the next frame", cap(p), len(p))
	}
	_ = append(p, '!')
	if string(in[n:]) != "next frame" {
		t.Fatal("appending to Payload overwrote the input")
	}
}

func TestParseDataReusesTheStruct(t *testing.T) {
	var d Data
	first := (&Data{SSTableID: "nb-1-big", Stream: StreamComponent, Component: 3, Offset: 10, Payload: []byte("abc")}).Append(nil)
	if _, err := ParseData(first, Limits{}, &d); err != nil {
		t.Fatal(err)
	}
	id := unsafe.StringData(d.SSTableID)
	second := (&Data{SSTableID: "nb-1-big", Stream: StreamRuns, Offset: 13}).Append(nil)
	if _, err := ParseData(second, Limits{}, &d); err != nil {
		t.Fatal(err)
	}
	want := Data{SSTableID: "nb-1-big", Stream: StreamRuns, Offset: 13}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("got %+v, want %+v", d, want)
	}
	if unsafe.StringData(d.SSTableID) != id {
		t.Error("an equal SSTableID was allocated again")
	}
	third := (&Data{SSTableID: "nb-2-big"}).Append(nil)
	if _, err := ParseData(third, Limits{}, &d); err != nil || d.SSTableID != "nb-2-big" {
		t.Fatalf("new sstable: %q, %v", d.SSTableID, err)
	}
}

func TestDataHotPathDoesNotAllocate(t *testing.T) {
	src := &Data{SSTableID: "nb-42-big", Stream: StreamRuns, Offset: math.MaxUint32}
	buf := make([]byte, 0, DataHeaderLength(src, len(payload64k))+len(payload64k))
	var dst Data
	allocs := testing.AllocsPerRun(100, func() {
		b := AppendDataHeader(buf[:0], src, len(payload64k))
		b = append(b, payload64k...)
		if _, err := ParseData(b, Limits{}, &dst); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per frame, want 0", allocs)
	}
}

func TestAppendDataHeaderRejectsNegativeLength(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	AppendDataHeader(nil, &Data{}, -1)
}

// BenchmarkDataFrame encodes a Data frame header for a 64 KiB payload, appends the payload
// and decodes the frame, as a sender and receiver do per frame.
func BenchmarkDataFrame(b *testing.B) {
	src := &Data{SSTableID: "nb-42-big", Stream: StreamRuns, Offset: 1 << 33}
	buf := make([]byte, 0, DataHeaderLength(src, len(payload64k))+len(payload64k))
	var dst Data
	b.ReportAllocs()
	b.SetBytes(int64(len(payload64k)))
	for b.Loop() {
		f := AppendDataHeader(buf[:0], src, len(payload64k))
		f = append(f, payload64k...)
		if _, err := ParseData(f, Limits{}, &dst); err != nil {
			b.Fatal(err)
		}
		src.Offset += uint64(len(payload64k))
	}
}

// BenchmarkDataFrameHeaderOnly is the codec's own cost: the payload is not copied.
func BenchmarkDataFrameHeaderOnly(b *testing.B) {
	src := &Data{SSTableID: "nb-42-big", Stream: StreamRuns, Offset: 1 << 33}
	f := src.Append(nil)
	f = append(f[:0], AppendDataHeader(nil, src, len(payload64k))...)
	f = append(f, payload64k...)
	hdr := make([]byte, 0, 64)
	var dst Data
	b.ReportAllocs()
	for b.Loop() {
		hdr = AppendDataHeader(hdr[:0], src, len(payload64k))
		if _, err := ParseData(f, Limits{}, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseMessageData(b *testing.B) {
	f := (&Data{SSTableID: "nb-42-big", Stream: StreamRuns, Offset: 1 << 33, Payload: payload64k}).Append(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseMessage(f, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkManifestRoundTrip(b *testing.B) {
	m := &Manifest{SSTableID: "nb-1-big", Version: "nb", Format: "big", Kind: KindPartial,
		Compression: make([]byte, 8<<10), Runs: make([]Run, 256), Components: make([]ComponentSpec, 8)}
	buf := m.Append(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = m.Append(buf[:0])
		if _, _, err := ParseMessage(buf, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
