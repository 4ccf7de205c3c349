package wire

import "fmt"

// Code classifies a Failure. Values are stable and append-only; decoders accept codes
// they do not name, so a newer peer's code still ends the session.
type Code uint32

// Failure codes.
const (
	CodeProtocol     Code = 1  // the peer broke the protocol: malformed or unexpected message
	CodeVersion      Code = 2  // no common protocol version
	CodeUnauthorized Code = 3  // the peer's identity may not do this
	CodeNotFound     Code = 4  // keyspace, table or sstable does not exist
	CodeChecksum     Code = 5  // received bytes failed verification
	CodeNoSpace      Code = 6  // the receiver lacks disk space
	CodeShuttingDown Code = 7  // the node is stopping
	CodeTimeout      Code = 8  // a deadline passed
	CodeRefused      Code = 9  // the request is valid but declined (busy, unsupported op)
	CodeInternal     Code = 10 // a bug or local I/O error
	CodePeerGone     Code = 11 // a third node the session depended on left
)

var codeNames = [...]string{
	CodeProtocol:     "protocol",
	CodeVersion:      "version",
	CodeUnauthorized: "unauthorized",
	CodeNotFound:     "not_found",
	CodeChecksum:     "checksum",
	CodeNoSpace:      "no_space",
	CodeShuttingDown: "shutting_down",
	CodeTimeout:      "timeout",
	CodeRefused:      "refused",
	CodeInternal:     "internal",
	CodePeerGone:     "peer_gone",
}

func (c Code) String() string {
	if uint64(c) < uint64(len(codeNames)) && codeNames[c] != "" {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint32(c))
}

// Failure ends a session, or abandons one sstable when SSTableID is set. It is also an
// error, so a session can return the peer's Failure as it came.
type Failure struct {
	Code      Code
	SSTableID string
	Reason    string
}

const (
	failureCode      = 1
	failureSSTableID = 2
	failureReason    = 3
)

var failureSchema = schema{
	name: "Failure",
	fields: []string{
		failureCode:      "Code",
		failureSSTableID: "SSTableID",
		failureReason:    "Reason",
	},
}

func (m *Failure) Type() MsgType          { return MsgFailure }
func (m *Failure) Length() int            { return frameLength(m) }
func (m *Failure) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *Failure) Error() string {
	if m.SSTableID == "" {
		return fmt.Sprintf("peer failure (%v): %s", m.Code, m.Reason)
	}
	return fmt.Sprintf("peer failure (%v) on sstable %s: %s", m.Code, m.SSTableID, m.Reason)
}

func (m *Failure) encode(w *writer) {
	w.uint(failureCode, uint64(m.Code))
	w.string(failureSSTableID, m.SSTableID)
	w.string(failureReason, m.Reason)
}

func (m *Failure) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case failureCode:
			m.Code = Code(d.u32())
		case failureSSTableID:
			d.string(&m.SSTableID)
		case failureReason:
			d.string(&m.Reason)
		}
	}
}
