package wire

// Received reports that the receiver holds and has verified the first VerifiedChunks
// chunks (Bytes bytes) of an sstable; a later session may resume from there.
type Received struct {
	SSTableID      string
	VerifiedChunks uint64
	Bytes          uint64
}

// Installed reports that the receiver installed an sstable. Names the receiver chose
// locally are never sent back; the sender learns only that it is done and how many
// partitions it holds.
type Installed struct {
	SSTableID  string
	Partitions uint64
}

// Complete ends a session successfully, with totals either side can check against its own.
type Complete struct {
	SessionID  SessionID
	SSTables   uint64
	Bytes      uint64
	Partitions uint64
}

const (
	receivedSSTableID      = 1
	receivedVerifiedChunks = 2
	receivedBytes          = 3

	installedSSTableID  = 1
	installedPartitions = 2

	completeSessionID  = 1
	completeSSTables   = 2
	completeBytes      = 3
	completePartitions = 4
)

var receivedSchema = schema{
	name: "Received",
	fields: []string{
		receivedSSTableID:      "SSTableID",
		receivedVerifiedChunks: "VerifiedChunks",
		receivedBytes:          "Bytes",
	},
}

var installedSchema = schema{
	name:   "Installed",
	fields: []string{installedSSTableID: "SSTableID", installedPartitions: "Partitions"},
}

var completeSchema = schema{
	name: "Complete",
	fields: []string{
		completeSessionID:  "SessionID",
		completeSSTables:   "SSTables",
		completeBytes:      "Bytes",
		completePartitions: "Partitions",
	},
}

func (m *Received) Type() MsgType          { return MsgReceived }
func (m *Received) Length() int            { return frameLength(m) }
func (m *Received) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *Received) encode(w *writer) {
	w.string(receivedSSTableID, m.SSTableID)
	w.uint(receivedVerifiedChunks, m.VerifiedChunks)
	w.uint(receivedBytes, m.Bytes)
}

func (m *Received) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case receivedSSTableID:
			d.string(&m.SSTableID)
		case receivedVerifiedChunks:
			m.VerifiedChunks = d.u64()
		case receivedBytes:
			m.Bytes = d.u64()
		}
	}
}

func (m *Installed) Type() MsgType          { return MsgInstalled }
func (m *Installed) Length() int            { return frameLength(m) }
func (m *Installed) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *Installed) encode(w *writer) {
	w.string(installedSSTableID, m.SSTableID)
	w.uint(installedPartitions, m.Partitions)
}

func (m *Installed) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case installedSSTableID:
			d.string(&m.SSTableID)
		case installedPartitions:
			m.Partitions = d.u64()
		}
	}
}

func (m *Complete) Type() MsgType          { return MsgComplete }
func (m *Complete) Length() int            { return frameLength(m) }
func (m *Complete) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *Complete) encode(w *writer) {
	w.bytes(completeSessionID, m.SessionID[:])
	w.uint(completeSSTables, m.SSTables)
	w.uint(completeBytes, m.Bytes)
	w.uint(completePartitions, m.Partitions)
}

func (m *Complete) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case completeSessionID:
			d.fixed(m.SessionID[:])
		case completeSSTables:
			m.SSTables = d.u64()
		case completeBytes:
			m.Bytes = d.u64()
		case completePartitions:
			m.Partitions = d.u64()
		}
	}
}
