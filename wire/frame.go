package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

// ALPN is the TLS application protocol sluice nodes negotiate on their QUIC connections.
// It names the protocol family; the message-set version is negotiated in-band by Hello.
const ALPN = "sluice/1"

// Protocol versions. A peer offers MinVersion..MaxVersion in its Hello and Negotiate picks
// the highest version both offer. Version 0 is never valid.
const (
	Version1 uint32 = 1

	MinVersion = Version1
	MaxVersion = Version1
)

// MsgType identifies a message on the wire. Values are append-only: a value, once
// assigned, keeps its meaning forever.
type MsgType uint64

// Message types.
const (
	MsgHello         MsgType = 1
	MsgHelloAck      MsgType = 2
	MsgStreamRequest MsgType = 3
	MsgPrepare       MsgType = 4
	MsgManifest      MsgType = 5
	MsgData          MsgType = 6
	MsgReceived      MsgType = 7
	MsgInstalled     MsgType = 8
	MsgComplete      MsgType = 9
	MsgFailure       MsgType = 10
	MsgKeepalive     MsgType = 11
	MsgTCPDataPlane  MsgType = 12
)

// registry maps each defined MsgType to its schema and a constructor.
var registry = [...]struct {
	schema *schema
	new    func() Message
}{
	MsgHello:         {&helloSchema, func() Message { return new(Hello) }},
	MsgHelloAck:      {&helloAckSchema, func() Message { return new(HelloAck) }},
	MsgStreamRequest: {&streamRequestSchema, func() Message { return new(StreamRequest) }},
	MsgPrepare:       {&prepareSchema, func() Message { return new(Prepare) }},
	MsgManifest:      {&manifestSchema, func() Message { return new(Manifest) }},
	MsgData:          {&dataSchema, func() Message { return new(Data) }},
	MsgReceived:      {&receivedSchema, func() Message { return new(Received) }},
	MsgInstalled:     {&installedSchema, func() Message { return new(Installed) }},
	MsgComplete:      {&completeSchema, func() Message { return new(Complete) }},
	MsgFailure:       {&failureSchema, func() Message { return new(Failure) }},
	MsgKeepalive:     {&keepaliveSchema, func() Message { return new(Keepalive) }},
	MsgTCPDataPlane:  {&tcpDataPlaneSchema, func() Message { return new(TCPDataPlane) }},
}

func (t MsgType) known() bool { return t < MsgType(len(registry)) && registry[t].schema != nil }

func (t MsgType) String() string {
	if t.known() {
		return registry[t].schema.name
	}
	return fmt.Sprintf("MsgType(%d)", uint64(t))
}

// Message is one protocol message. The set is closed: only this package's types
// implement it. Parsed messages are returned as pointers (*Hello, *Data, ...).
type Message interface {
	Type() MsgType
	// Length returns the length of the message's whole frame, header included.
	Length() int
	// Append appends the message's whole frame to b.
	Append(b []byte) []byte

	encode(w *writer)
	decode(d *decoder)
}

// Limits bounds what a decoder accepts from a peer. A zero (or negative) field means its
// default, so the zero Limits is the sane default. Every limit is checked before memory is
// allocated for the thing it limits.
type Limits struct {
	// MaxFrame bounds a whole frame, header and body. Default 64 MiB: a Manifest carries a
	// CompressionInfo.db of 8 bytes per chunk, which this admits for ~128 GiB of Data.db
	// at 16 KiB chunks.
	MaxFrame int
	// MaxRanges bounds StreamRequest.Ranges. Default 65536.
	MaxRanges int
	// MaxSSTables bounds Prepare.SSTables and StreamRequest.Resume. Default 131072.
	MaxSSTables int
	// MaxRuns bounds Manifest.Runs. Default 1048576.
	MaxRuns int
	// MaxComponents bounds Manifest.Components. Default 1024.
	MaxComponents int
	// MaxFeatures bounds Hello.Features. Default 256.
	MaxFeatures int
	// MaxStringLen bounds every string field and every token (TokenRange.Left/Right), in
	// bytes. Default 65535, Cassandra's largest partition key.
	MaxStringLen int
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxFrame, 64<<20)
	def(&l.MaxRanges, 1<<16)
	def(&l.MaxSSTables, 1<<17)
	def(&l.MaxRuns, 1<<20)
	def(&l.MaxComponents, 1024)
	def(&l.MaxFeatures, 256)
	def(&l.MaxStringLen, 65535)
	return l
}

// ReadFrameHeader decodes the frame header at the start of b: the message type, the body
// length and the header's own length n, so the whole frame is n+bodyLen bytes. It returns
// io.EOF when b ends inside the header, and ErrFrameTooLarge (before the body is read or
// allocated) when the frame would exceed lim.MaxFrame. It accepts unknown types.
func ReadFrameHeader(b []byte, lim Limits) (t MsgType, bodyLen, n int, err error) {
	typ, tn := binary.Uvarint(b)
	if tn == 0 {
		return 0, 0, 0, io.EOF
	}
	if tn < 0 {
		return 0, 0, 0, fmt.Errorf("wire: frame type: %w: uvarint overflows 64 bits", ErrMalformed)
	}
	length, ln := binary.Uvarint(b[tn:])
	if ln == 0 {
		return 0, 0, 0, io.EOF
	}
	if ln < 0 {
		return 0, 0, 0, fmt.Errorf("wire: %v frame length: %w: uvarint overflows 64 bits", MsgType(typ), ErrMalformed)
	}
	n = tn + ln
	limit := lim.withDefaults().MaxFrame
	if n > limit || length > uint64(limit-n) {
		return 0, 0, 0, fmt.Errorf("wire: %v frame with a %d-byte body exceeds the %d-byte limit: %w",
			MsgType(typ), length, limit, ErrFrameTooLarge)
	}
	return MsgType(typ), int(length), n, nil
}

// ParseMessage decodes the frame at the start of b and returns the message and the
// frame's length. It returns io.EOF when b holds only a prefix of the frame (read more and
// retry), an *UnknownMessageError for a complete frame of an unknown type, and otherwise
// an error wrapping ErrFrameTooLarge, ErrMalformed, ErrLimitExceeded or ErrMissingField,
// mostly as a *FieldError. Unknown fields are skipped. The message does not alias b
// except for Data.Payload.
func ParseMessage(b []byte, lim Limits) (Message, int, error) {
	lim = lim.withDefaults()
	t, bodyLen, hn, err := ReadFrameHeader(b, lim)
	if err != nil {
		return nil, 0, err
	}
	n := hn + bodyLen
	if len(b) < n {
		return nil, 0, io.EOF
	}
	if !t.known() {
		return nil, 0, &UnknownMessageError{Type: t, FrameLength: n}
	}
	m := registry[t].new()
	d := decoder{msg: t, schema: registry[t].schema, lim: lim, body: b[hn:n]}
	m.decode(&d)
	if err := d.finish(); err != nil {
		return nil, 0, err
	}
	return m, n, nil
}

// AppendMessage appends m's whole frame to b. Encoding cannot fail: every value of every
// message field has an encoding. It is what each message's Append method does.
func AppendMessage(b []byte, m Message) []byte {
	w := writer{sizing: true}
	m.encode(&w)
	body := w.n
	t := uint64(m.Type())
	b = slices.Grow(b, uvarintLen(t)+uvarintLen(uint64(body))+body)
	b = binary.AppendUvarint(b, t)
	b = binary.AppendUvarint(b, uint64(body))
	w = writer{b: b}
	m.encode(&w)
	return w.b
}

// frameLength returns the length of m's whole frame.
func frameLength(m Message) int {
	w := writer{sizing: true}
	m.encode(&w)
	return uvarintLen(uint64(m.Type())) + uvarintLen(uint64(w.n)) + w.n
}
