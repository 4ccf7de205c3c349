package wire

import (
	"encoding/hex"
	"fmt"
)

// SessionID identifies one streaming session across both nodes and all its streams.
type SessionID [16]byte

func (id SessionID) String() string { return hex.EncodeToString(id[:]) }

// Op is the operation a session serves. Decoders accept any value so that a newer peer's
// operation reaches the session layer, which refuses it (CodeRefused).
type Op uint8

// Operations. Values are append-only.
const (
	OpFetch        Op = 1
	OpBootstrap    Op = 2
	OpDecommission Op = 3
	OpMove         Op = 4
	OpRepair       Op = 5
	OpCleanup      Op = 6
)

var opNames = [...]string{
	OpFetch:        "fetch",
	OpBootstrap:    "bootstrap",
	OpDecommission: "decommission",
	OpMove:         "move",
	OpRepair:       "repair",
	OpCleanup:      "cleanup",
}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// TokenRange is the token range (Left, Right] in the partitioner's byte form, opaque here:
// Murmur3 tokens are 8 big-endian bytes of the int64, ByteOrdered tokens are the key
// bytes. Empty bytes are the partitioner's minimum token.
type TokenRange struct {
	Left  []byte
	Right []byte
}

// ResumePoint tells the sender that the receiver already holds and verified the first
// VerifiedChunks chunks of an sstable from an interrupted session.
type ResumePoint struct {
	SSTableID      string
	VerifiedChunks uint64
}

// StreamRequest asks the peer to send the parts of Keyspace.Table that cover Ranges.
// Source, when set, names sstables the sender registered under that id (a sidecar's load)
// instead of the table's live ones; it is encoded only when set.
type StreamRequest struct {
	SessionID SessionID
	Operation Op
	Keyspace  string
	Table     string
	Ranges    []TokenRange
	Resume    []ResumePoint
	Source    string
}

const (
	streamRequestSessionID = 1
	streamRequestOperation = 2
	streamRequestKeyspace  = 3
	streamRequestTable     = 4
	streamRequestRanges    = 5
	streamRequestResume    = 6
	streamRequestSource    = 7

	tokenRangeLeft  = 1
	tokenRangeRight = 2

	resumePointSSTableID      = 1
	resumePointVerifiedChunks = 2
)

var streamRequestSchema = schema{
	name: "StreamRequest",
	fields: []string{
		streamRequestSessionID: "SessionID",
		streamRequestOperation: "Operation",
		streamRequestKeyspace:  "Keyspace",
		streamRequestTable:     "Table",
		streamRequestRanges:    "Ranges",
		streamRequestResume:    "Resume",
		streamRequestSource:    "Source",
	},
	repeated: 1<<streamRequestRanges | 1<<streamRequestResume,
	// Source is absent for the live table: a request without it is what it was before the
	// field existed.
	optional: 1 << streamRequestSource,
}

var tokenRangeSchema = schema{
	name:   "TokenRange",
	fields: []string{tokenRangeLeft: "Left", tokenRangeRight: "Right"},
}

var resumePointSchema = schema{
	name:   "ResumePoint",
	fields: []string{resumePointSSTableID: "SSTableID", resumePointVerifiedChunks: "VerifiedChunks"},
}

func (m *StreamRequest) Type() MsgType          { return MsgStreamRequest }
func (m *StreamRequest) Length() int            { return frameLength(m) }
func (m *StreamRequest) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *StreamRequest) encode(w *writer) {
	w.bytes(streamRequestSessionID, m.SessionID[:])
	w.uint(streamRequestOperation, uint64(m.Operation))
	w.string(streamRequestKeyspace, m.Keyspace)
	w.string(streamRequestTable, m.Table)
	for i := range m.Ranges {
		w.group(streamRequestRanges, &m.Ranges[i])
	}
	for i := range m.Resume {
		w.group(streamRequestResume, &m.Resume[i])
	}
	if m.Source != "" {
		w.string(streamRequestSource, m.Source)
	}
}

func (m *StreamRequest) decode(d *decoder) {
	if n := d.count(streamRequestRanges, d.lim.MaxRanges); n > 0 {
		m.Ranges = make([]TokenRange, 0, n)
	}
	if n := d.count(streamRequestResume, d.lim.MaxSSTables); n > 0 {
		m.Resume = make([]ResumePoint, 0, n)
	}
	for d.next() {
		switch d.tag {
		case streamRequestSessionID:
			d.fixed(m.SessionID[:])
		case streamRequestOperation:
			m.Operation = Op(d.u8())
		case streamRequestKeyspace:
			d.string(&m.Keyspace)
		case streamRequestTable:
			d.string(&m.Table)
		case streamRequestRanges:
			var r TokenRange
			e := d.element(&tokenRangeSchema, len(m.Ranges))
			r.decode(&e)
			if d.join(&e) {
				m.Ranges = append(m.Ranges, r)
			}
		case streamRequestResume:
			var r ResumePoint
			e := d.element(&resumePointSchema, len(m.Resume))
			r.decode(&e)
			if d.join(&e) {
				m.Resume = append(m.Resume, r)
			}
		case streamRequestSource:
			d.string(&m.Source)
		}
	}
}

func (r *TokenRange) encode(w *writer) {
	w.bytes(tokenRangeLeft, r.Left)
	w.bytes(tokenRangeRight, r.Right)
}

func (r *TokenRange) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case tokenRangeLeft:
			r.Left = d.bytes(d.lim.MaxStringLen)
		case tokenRangeRight:
			r.Right = d.bytes(d.lim.MaxStringLen)
		}
	}
}

func (r *ResumePoint) encode(w *writer) {
	w.string(resumePointSSTableID, r.SSTableID)
	w.uint(resumePointVerifiedChunks, r.VerifiedChunks)
}

func (r *ResumePoint) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case resumePointSSTableID:
			d.string(&r.SSTableID)
		case resumePointVerifiedChunks:
			r.VerifiedChunks = d.u64()
		}
	}
}
