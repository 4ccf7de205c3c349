package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// ParseDataHeader decodes exactly what ParseData decodes from the same frame, reports every
// prefix of the header as io.EOF, and refuses other messages.
func TestParseDataHeader(t *testing.T) {
	d := Data{SSTableID: "nb-1-big@3+40", Stream: StreamComponent, Component: 2, Offset: 1 << 33}
	payload := bytes.Repeat([]byte{7}, 1000)
	frame := append(AppendDataHeader(nil, &d, len(payload)), payload...)
	hl := DataHeaderLength(&d, len(payload))
	scratch := make([]byte, DataHeaderScratch)
	var got Data
	hn, n, err := ParseDataHeader(frame[:hl+10], scratch, Limits{}, &got)
	if err != nil || hn != hl || n != int64(len(payload)) {
		t.Fatalf("ParseDataHeader: %d %d %v; want %d %d", hn, n, err, hl, len(payload))
	}
	if got.SSTableID != d.SSTableID || got.Stream != d.Stream || got.Component != d.Component || got.Offset != d.Offset || len(got.Payload) != 0 {
		t.Errorf("decoded %+v, want %+v", got, d)
	}
	for k := 0; k < hl; k++ {
		if _, _, err := ParseDataHeader(frame[:k], scratch, Limits{}, &got); !errors.Is(err, io.EOF) {
			t.Errorf("header prefix of %d bytes: %v, want io.EOF", k, err)
		}
	}
	other := AppendMessage(nil, &Keepalive{Nanos: 1})
	if _, _, err := ParseDataHeader(other, scratch, Limits{}, &got); !errors.Is(err, ErrUnexpectedMessage) {
		t.Errorf("a Keepalive frame: %v", err)
	}
	// A header whose fields before the payload outgrow MaxDataHeader is refused, not buffered.
	long := Data{SSTableID: string(bytes.Repeat([]byte{'x'}, MaxDataHeader)), Stream: StreamRuns}
	big := AppendDataHeader(nil, &long, 10)
	if _, _, err := ParseDataHeader(big, scratch, Limits{MaxStringLen: 4 * MaxDataHeader}, &got); !errors.Is(err, ErrMalformed) {
		t.Errorf("an oversized header: %v", err)
	}
}

// ParseDataHeader never panics, never claims more header than it was given, and agrees with
// ParseData on every complete frame it accepts.
func FuzzParseDataHeader(f *testing.F) {
	for _, d := range []Data{
		{SSTableID: "a", Stream: StreamRuns, Offset: 0},
		{SSTableID: "nb-1-big@3+40", Stream: StreamComponent, Component: 2, Offset: 1 << 40},
	} {
		for _, n := range []int{0, 1, 300} {
			f.Add(append(AppendDataHeader(nil, &d, n), make([]byte, n)...))
		}
	}
	f.Add(AppendMessage(nil, &Keepalive{Nanos: 300}))
	scratch := make([]byte, DataHeaderScratch)
	lim := Limits{MaxFrame: 1 << 20, MaxStringLen: 256}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Data
		hn, n, err := ParseDataHeader(b, scratch, lim, &d)
		if err != nil {
			return
		}
		if hn > len(b) || n < 0 {
			t.Fatalf("header %d of %d bytes, payload %d", hn, len(b), n)
		}
		if int64(len(b)) >= int64(hn)+n {
			var want Data
			if _, err := ParseData(b, lim, &want); err != nil {
				t.Fatalf("ParseDataHeader accepted a frame ParseData refuses: %v", err)
			}
			if want.SSTableID != d.SSTableID || want.Stream != d.Stream || want.Component != d.Component ||
				want.Offset != d.Offset || int64(len(want.Payload)) != n {
				t.Fatalf("ParseDataHeader %+v (%d), ParseData %+v", d, n, want)
			}
		}
	})
}
