package wire

// Keepalive keeps an idle control stream alive and lets the receiver measure round trips:
// Nanos is the sender's monotonic clock reading, echoed back unchanged.
type Keepalive struct {
	Nanos uint64
}

// TCPDataPlane offers a plain-TCP connection for bulk data: the receiver dials Addr and
// presents Token, which authorises exactly one connection for this session.
type TCPDataPlane struct {
	Token [32]byte
	Addr  string
}

const (
	keepaliveNanos = 1

	tcpDataPlaneToken = 1
	tcpDataPlaneAddr  = 2
)

var keepaliveSchema = schema{
	name:   "Keepalive",
	fields: []string{keepaliveNanos: "Nanos"},
}

var tcpDataPlaneSchema = schema{
	name:   "TCPDataPlane",
	fields: []string{tcpDataPlaneToken: "Token", tcpDataPlaneAddr: "Addr"},
}

func (m *Keepalive) Type() MsgType          { return MsgKeepalive }
func (m *Keepalive) Length() int            { return frameLength(m) }
func (m *Keepalive) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *Keepalive) encode(w *writer) { w.uint(keepaliveNanos, m.Nanos) }

func (m *Keepalive) decode(d *decoder) {
	for d.next() {
		if d.tag == keepaliveNanos {
			m.Nanos = d.u64()
		}
	}
}

func (m *TCPDataPlane) Type() MsgType          { return MsgTCPDataPlane }
func (m *TCPDataPlane) Length() int            { return frameLength(m) }
func (m *TCPDataPlane) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *TCPDataPlane) encode(w *writer) {
	w.bytes(tcpDataPlaneToken, m.Token[:])
	w.string(tcpDataPlaneAddr, m.Addr)
}

func (m *TCPDataPlane) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case tcpDataPlaneToken:
			d.fixed(m.Token[:])
		case tcpDataPlaneAddr:
			d.string(&m.Addr)
		}
	}
}
