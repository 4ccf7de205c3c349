package wire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// DataStream says which byte sequence of an sstable a Data frame carries.
type DataStream uint8

// Data streams. Values are append-only.
const (
	// StreamRuns: the child Data.db, built from Manifest.Runs.
	StreamRuns DataStream = 0
	// StreamIndex: the index slice the receiver rebuilds the other components from.
	StreamIndex DataStream = 1
	// StreamComponent: the component Manifest.Components[Data.Component].
	StreamComponent DataStream = 2
)

var dataStreamNames = [...]string{StreamRuns: "runs", StreamIndex: "index", StreamComponent: "component"}

func (s DataStream) String() string {
	if int(s) < len(dataStreamNames) {
		return dataStreamNames[s]
	}
	return fmt.Sprintf("DataStream(%d)", uint8(s))
}

// Data carries Payload at byte Offset of one stream of one sstable. Component is the
// index into Manifest.Components when Stream is StreamComponent and 0 otherwise.
//
// On parse, Payload aliases the input buffer: it is valid only until the caller reuses
// that buffer, and must be copied to be kept. Its capacity is clipped to its length.
type Data struct {
	SSTableID string
	Stream    DataStream
	Component uint32
	Offset    uint64
	Payload   []byte
}

const (
	dataSSTableID = 1
	dataStream    = 2
	dataComponent = 3
	dataOffset    = 4
	dataPayload   = 5 // always last, so the header can be written before the payload
)

var dataSchema = schema{
	name: "Data",
	fields: []string{
		dataSSTableID: "SSTableID",
		dataStream:    "Stream",
		dataComponent: "Component",
		dataOffset:    "Offset",
		dataPayload:   "Payload",
	},
}

func (m *Data) Type() MsgType          { return MsgData }
func (m *Data) Length() int            { return frameLength(m) }
func (m *Data) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *Data) encodeHeader(w *writer) {
	w.string(dataSSTableID, m.SSTableID)
	w.uint(dataStream, uint64(m.Stream))
	w.uint(dataComponent, uint64(m.Component))
	w.uint(dataOffset, m.Offset)
}

func (m *Data) encode(w *writer) {
	m.encodeHeader(w)
	w.bytes(dataPayload, m.Payload)
}

func (m *Data) decode(d *decoder) {
	// Keep the ID so that ParseData into a reused Data does not allocate it again.
	*m = Data{SSTableID: m.SSTableID}
	for d.next() {
		switch d.tag {
		case dataSSTableID:
			d.string(&m.SSTableID)
		case dataStream:
			m.Stream = DataStream(d.u8())
		case dataComponent:
			m.Component = d.u32()
		case dataOffset:
			m.Offset = d.u64()
		case dataPayload:
			m.Payload = d.alias()
		}
	}
}

func dataBodyLength(d *Data, payloadLen int) int {
	if payloadLen < 0 {
		panic("wire: negative Data payload length")
	}
	w := writer{sizing: true}
	d.encodeHeader(&w)
	return w.n + uvarintLen(dataPayload) + uvarintLen(uint64(payloadLen)) + payloadLen
}

// DataHeaderLength returns the length of what AppendDataHeader appends for d and a
// payload of payloadLen bytes: the whole frame minus the payload.
func DataHeaderLength(d *Data, payloadLen int) int {
	body := dataBodyLength(d, payloadLen)
	return uvarintLen(uint64(MsgData)) + uvarintLen(uint64(body)) + body - payloadLen
}

// AppendDataHeader appends the frame of a Data message up to, not including, its payload
// of payloadLen bytes; d.Payload is ignored. Writing exactly payloadLen bytes after it
// completes the frame, so a sender can send the payload straight from the file (sendfile,
// splice) without copying it through a buffer. It does not allocate when b has room.
func AppendDataHeader(b []byte, d *Data, payloadLen int) []byte {
	body := dataBodyLength(d, payloadLen)
	b = binary.AppendUvarint(b, uint64(MsgData))
	b = binary.AppendUvarint(b, uint64(body))
	w := writer{b: b}
	d.encodeHeader(&w)
	w.b = binary.AppendUvarint(w.b, dataPayload)
	return binary.AppendUvarint(w.b, uint64(payloadLen))
}

// ParseData decodes the Data frame at the start of b into *d and returns the frame's
// length; it is ParseMessage for the data-stream hot path. It does not allocate when
// d.SSTableID already equals the frame's (as for every frame after an sstable's first)
// and d.Payload aliases b as ParseMessage's would. A complete frame of another type
// fails with an error wrapping ErrUnexpectedMessage, and io.EOF reports a partial frame.
// On error *d is unspecified.
func ParseData(b []byte, lim Limits, d *Data) (int, error) {
	lim = lim.withDefaults()
	t, bodyLen, hn, err := ReadFrameHeader(b, lim)
	if err != nil {
		return 0, err
	}
	n := hn + bodyLen
	if len(b) < n {
		return 0, io.EOF
	}
	if t != MsgData {
		return 0, fmt.Errorf("wire: %v frame where Data was expected: %w", t, ErrUnexpectedMessage)
	}
	dec := decoder{msg: MsgData, schema: &dataSchema, lim: lim, body: b[hn:n]}
	d.decode(&dec)
	if err := dec.finish(); err != nil {
		return 0, err
	}
	return n, nil
}
