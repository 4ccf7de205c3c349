package wire

import (
	"errors"
	"fmt"
)

// ErrFrameTooLarge reports a frame header whose length exceeds Limits.MaxFrame. It is
// returned from the header alone, before anything is allocated for the body.
var ErrFrameTooLarge = errors.New("frame too large")

// ErrUnknownMessage reports a frame type this version does not define. The error returned
// is an *UnknownMessageError, which carries the frame length so the caller can skip it.
var ErrUnknownMessage = errors.New("unknown message type")

// ErrUnexpectedMessage reports a well-formed frame of another type where ParseData
// expected a Data frame.
var ErrUnexpectedMessage = errors.New("unexpected message type")

// ErrMissingField reports a message or list element without one of its required fields.
var ErrMissingField = errors.New("missing required field")

// ErrMalformed reports bytes no encoder of this protocol produces: a field overrunning its
// body, a varint overflowing 64 bits, an integer field that is not exactly one uvarint, a
// value out of range for its Go type, a fixed-size field of the wrong size, or a field
// that may occur once occurring twice.
var ErrMalformed = errors.New("malformed")

// ErrLimitExceeded reports a string, token or list longer than the decoder's Limits allow.
var ErrLimitExceeded = errors.New("limit exceeded")

// ErrNoCommonVersion reports that two Hello messages share no protocol version.
var ErrNoCommonVersion = errors.New("no common protocol version")

// UnknownMessageError reports a complete frame of a type this version does not define.
// Frame types are append-only, so a newer peer may send one; a caller that can ignore it
// skips FrameLength bytes and parses on.
type UnknownMessageError struct {
	Type        MsgType
	FrameLength int // header and body
}

func (e *UnknownMessageError) Error() string {
	return fmt.Sprintf("wire: %v (%d-byte frame): %v", e.Type, e.FrameLength, ErrUnknownMessage)
}

func (e *UnknownMessageError) Unwrap() error { return ErrUnknownMessage }

// FieldError locates a decoding failure inside a message body. Field is the Go name of
// the field ("Digest"), prefixed by its list element for fields of list elements
// ("Runs[3].Length"); it is only the element ("Runs[3]"), or empty, when the failure is in
// the field framing itself rather than in one field's value.
type FieldError struct {
	Message MsgType
	Field   string
	Err     error
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("wire: %v: %v", e.Message, e.Err)
	}
	return fmt.Sprintf("wire: %v.%s: %v", e.Message, e.Field, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }
