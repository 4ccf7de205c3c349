package peerrpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// FuzzReadRequest feeds arbitrary bytes to what a server reads from a peer call's stream:
// the length-prefixed frame, the envelope and a strict body decode. Nothing may panic, a
// frame beyond MaxRequest must be refused from its prefix alone, and what decodes must
// re-encode to an envelope that decodes the same.
func FuzzReadRequest(f *testing.F) {
	for _, s := range []string{
		`{"method":"fetch","body":{"source":"n2","keyspace":"ks","table":"t","ranges":"(0,1]"}}`,
		`{"method":"load"}`, `{"method":"LOAD"}`, `{"method":""}`, `{"method":"a","body":[1,2]}`, `null`, `{`,
	} {
		f.Add(string(binary.BigEndian.AppendUint32(nil, uint32(len(s)))) + s)
	}
	f.Add("\xff\xff\xff\xff")
	f.Fuzz(func(t *testing.T, in string) {
		b, err := readFrame(bytes.NewReader([]byte(in)), MaxRequest)
		if len(in) >= 4 && binary.BigEndian.Uint32([]byte(in)) > MaxRequest && !errors.Is(err, ErrFrame) {
			t.Fatalf("oversized frame not refused: %v", err)
		}
		if err != nil {
			if !errors.Is(err, ErrFrame) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		req, err := DecodeRequest(b)
		if err != nil {
			return
		}
		if checkMethod(req.Method) != nil {
			t.Fatalf("accepted method %q", req.Method)
		}
		var v map[string]any
		_ = DecodeBody(req.Body, &v)
		again, err := appendFrame(nil, req)
		if err != nil {
			t.Fatal(err)
		}
		req2, err := DecodeRequest(again[4:])
		if err != nil || req2.Method != req.Method {
			t.Fatalf("re-encoded %q: %v", again, err)
		}
	})
}
