package peerrpc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ALPN is the TLS application protocol of peer calls.
const ALPN = "sluice-peer/1"

// Size bounds, checked from the length prefix before anything is allocated.
const (
	MaxRequest  = 64 << 10 // the largest request is a few hundred bytes
	MaxResponse = 64 << 20 // repair trees of a deep range
	maxMethod   = 32
)

// ErrFrame reports a malformed or oversized frame or envelope.
var ErrFrame = errors.New("peerrpc: bad frame")

// Request is a call's envelope.
type Request struct {
	Method string          `json:"method"`
	Body   json.RawMessage `json:"body,omitempty"`
}

// Response is an answer's envelope: Body on success, else Error with Code.
type Response struct {
	Error string          `json:"error,omitempty"`
	Code  Code            `json:"code,omitempty"`
	Body  json.RawMessage `json:"body,omitempty"`
}

// Code classifies a refused or failed call.
type Code string

const (
	CodeBadRequest   Code = "bad_request"  // malformed or invalid arguments; retrying will not help
	CodeUnknown      Code = "unknown"      // no such method
	CodeConflict     Code = "conflict"     // the node's state does not allow it now
	CodeUnauthorized Code = "unauthorized" // the caller may not do this
	CodeFailed       Code = "failed"       // the operation ran and failed
	CodeBusy         Code = "busy"         // a budget of concurrent work is exhausted; retry later
)

// IsBusy reports whether err is a call refused with CodeBusy, which a later retry may pass.
func IsBusy(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeBusy
}

// readFrame reads one length-prefixed frame of at most max bytes.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > uint32(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrame, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// appendFrame appends v's JSON with its length prefix.
func appendFrame(b []byte, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...), nil
}

// DecodeRequest parses a request envelope: a method of 1 to 32 characters [a-z_] and, when
// present, a JSON body (decoded by the method's handler).
func DecodeRequest(b []byte) (Request, error) {
	var req Request
	if err := json.Unmarshal(b, &req); err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrFrame, err)
	}
	if err := checkMethod(req.Method); err != nil {
		return Request{}, err
	}
	return req, nil
}

func checkMethod(m string) error {
	if m == "" || len(m) > maxMethod {
		return fmt.Errorf("%w: method of %d characters", ErrFrame, len(m))
	}
	for _, c := range []byte(m) {
		if (c < 'a' || c > 'z') && c != '_' {
			return fmt.Errorf("%w: method %q: want [a-z_]", ErrFrame, m)
		}
	}
	return nil
}

// DecodeBody decodes a request or response body strictly: one JSON object, no unknown
// fields, nothing after it.
func DecodeBody(b []byte, v any) error {
	if len(b) == 0 {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}
