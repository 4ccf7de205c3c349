package wire

import "fmt"

// Kind says how an sstable travels. Decoders accept any value; see Op.
type Kind uint8

// Kinds. Values are append-only.
const (
	// KindEntire: every component is sent unchanged.
	KindEntire Kind = 1
	// KindPartial: the Data.db chunk runs covering the ranges are sent and the receiver
	// rebuilds the other components from the index slice.
	KindPartial Kind = 2
	// KindRows: rows are re-serialised into a new sstable (no chunk boundary fits).
	KindRows Kind = 3
)

var kindNames = [...]string{KindEntire: "entire", KindPartial: "partial", KindRows: "rows"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// PlannedSSTable is one sstable the sender will send, with how and why, and its size.
type PlannedSSTable struct {
	ID         string
	Kind       Kind
	Reason     string
	Bytes      uint64
	Partitions uint64
}

// Prepare announces everything the sender will send in the session, decided before any
// data moves, so the receiver can check space and refuse early.
type Prepare struct {
	SessionID SessionID
	SSTables  []PlannedSSTable
}

const (
	prepareSessionID = 1
	prepareSSTables  = 2

	plannedID         = 1
	plannedKind       = 2
	plannedReason     = 3
	plannedBytes      = 4
	plannedPartitions = 5
)

var prepareSchema = schema{
	name:     "Prepare",
	fields:   []string{prepareSessionID: "SessionID", prepareSSTables: "SSTables"},
	repeated: 1 << prepareSSTables,
}

var plannedSchema = schema{
	name: "PlannedSSTable",
	fields: []string{
		plannedID:         "ID",
		plannedKind:       "Kind",
		plannedReason:     "Reason",
		plannedBytes:      "Bytes",
		plannedPartitions: "Partitions",
	},
}

func (m *Prepare) Type() MsgType          { return MsgPrepare }
func (m *Prepare) Length() int            { return frameLength(m) }
func (m *Prepare) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *Prepare) encode(w *writer) {
	w.bytes(prepareSessionID, m.SessionID[:])
	for i := range m.SSTables {
		w.group(prepareSSTables, &m.SSTables[i])
	}
}

func (m *Prepare) decode(d *decoder) {
	if n := d.count(prepareSSTables, d.lim.MaxSSTables); n > 0 {
		m.SSTables = make([]PlannedSSTable, 0, n)
	}
	for d.next() {
		switch d.tag {
		case prepareSessionID:
			d.fixed(m.SessionID[:])
		case prepareSSTables:
			var p PlannedSSTable
			e := d.element(&plannedSchema, len(m.SSTables))
			p.decode(&e)
			if d.join(&e) {
				m.SSTables = append(m.SSTables, p)
			}
		}
	}
}

func (p *PlannedSSTable) encode(w *writer) {
	w.string(plannedID, p.ID)
	w.uint(plannedKind, uint64(p.Kind))
	w.string(plannedReason, p.Reason)
	w.uint(plannedBytes, p.Bytes)
	w.uint(plannedPartitions, p.Partitions)
}

func (p *PlannedSSTable) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case plannedID:
			d.string(&p.ID)
		case plannedKind:
			p.Kind = Kind(d.u8())
		case plannedReason:
			d.string(&p.Reason)
		case plannedBytes:
			p.Bytes = d.u64()
		case plannedPartitions:
			p.Partitions = d.u64()
		}
	}
}
