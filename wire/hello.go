package wire

import "fmt"

// Hello opens a session's control stream; each side sends one. It offers the protocol
// versions MinVersion..MaxVersion and names the sending node. Features lists optional
// capabilities by name; a peer ignores names it does not know.
type Hello struct {
	MinVersion uint32
	MaxVersion uint32
	Node       string
	Features   []string
}

const (
	helloMinVersion = 1
	helloMaxVersion = 2
	helloNode       = 3
	helloFeatures   = 4
)

var helloSchema = schema{
	name: "Hello",
	fields: []string{
		helloMinVersion: "MinVersion",
		helloMaxVersion: "MaxVersion",
		helloNode:       "Node",
		helloFeatures:   "Features",
	},
	repeated: 1 << helloFeatures,
}

func (m *Hello) Type() MsgType          { return MsgHello }
func (m *Hello) Length() int            { return frameLength(m) }
func (m *Hello) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *Hello) encode(w *writer) {
	w.uint(helloMinVersion, uint64(m.MinVersion))
	w.uint(helloMaxVersion, uint64(m.MaxVersion))
	w.string(helloNode, m.Node)
	for _, f := range m.Features {
		w.string(helloFeatures, f)
	}
}

func (m *Hello) decode(d *decoder) {
	if n := d.count(helloFeatures, d.lim.MaxFeatures); n > 0 {
		m.Features = make([]string, 0, n)
	}
	for d.next() {
		switch d.tag {
		case helloMinVersion:
			m.MinVersion = d.u32()
		case helloMaxVersion:
			m.MaxVersion = d.u32()
		case helloNode:
			d.string(&m.Node)
		case helloFeatures:
			var f string
			d.string(&f)
			m.Features = append(m.Features, f)
		}
	}
}

// HelloAck answers the initiator's Hello with the version Negotiate chose; every later
// message on the session is of that version.
type HelloAck struct {
	Version uint32
	Node    string
}

const (
	helloAckVersion = 1
	helloAckNode    = 2
)

var helloAckSchema = schema{
	name: "HelloAck",
	fields: []string{
		helloAckVersion: "Version",
		helloAckNode:    "Node",
	},
}

func (m *HelloAck) Type() MsgType          { return MsgHelloAck }
func (m *HelloAck) Length() int            { return frameLength(m) }
func (m *HelloAck) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *HelloAck) encode(w *writer) {
	w.uint(helloAckVersion, uint64(m.Version))
	w.string(helloAckNode, m.Node)
}

func (m *HelloAck) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case helloAckVersion:
			m.Version = d.u32()
		case helloAckNode:
			d.string(&m.Node)
		}
	}
}

// Negotiate returns the highest protocol version offered by both local and remote. It
// fails with an error wrapping ErrNoCommonVersion when the ranges do not overlap or either
// range is empty (MinVersion 0 or MinVersion > MaxVersion); the error names both nodes
// and both ranges so an operator can see which side to upgrade.
func Negotiate(local, remote Hello) (uint32, error) {
	if err := checkOffer("local", &local); err != nil {
		return 0, err
	}
	if err := checkOffer("remote", &remote); err != nil {
		return 0, err
	}
	lo := max(local.MinVersion, remote.MinVersion)
	hi := min(local.MaxVersion, remote.MaxVersion)
	if lo > hi {
		return 0, fmt.Errorf("wire: local node %q speaks versions %d..%d, remote node %q speaks %d..%d: %w",
			local.Node, local.MinVersion, local.MaxVersion, remote.Node, remote.MinVersion, remote.MaxVersion,
			ErrNoCommonVersion)
	}
	return hi, nil
}

func checkOffer(side string, h *Hello) error {
	if h.MinVersion == 0 || h.MinVersion > h.MaxVersion {
		return fmt.Errorf("wire: %s node %q offers the empty version range %d..%d: %w",
			side, h.Node, h.MinVersion, h.MaxVersion, ErrNoCommonVersion)
	}
	return nil
}
