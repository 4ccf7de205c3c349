package stream

import (
	"fmt"
	"time"

	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/wire"
)

// Config tunes sessions on both sides. The zero value means every default.
type Config struct {
	// Node is this node's name, sent in Hello. Default "sluice".
	Node string
	// IdleTimeout fails a session whose peer sent nothing (not even a QUIC PING) for this
	// long: quic.Config.MaxIdleTimeout. Default 30s.
	IdleTimeout time.Duration
	// KeepAlive is the QUIC PING period that keeps a quiet but live session open
	// (quic.Config.KeepAlivePeriod). Default IdleTimeout/3.
	KeepAlive time.Duration
	// HandshakeTimeout bounds the QUIC handshake and the Hello exchange. Default 10s.
	HandshakeTimeout time.Duration
	// MaxSessions bounds a Server's concurrent sessions; more are refused. Default 8.
	MaxSessions int
	// MaxSessionsPerPeer bounds the sessions one peer certificate (by name) holds on a
	// Server at once, below MaxSessions so that other peers still get in. Default
	// MaxSessions/4, at least 1.
	MaxSessionsPerPeer int
	// Authorize, when set, decides per session whether the verified peer may stream the
	// requested table (roles: a client certificate only where the node allows it).
	Authorize Authorizer
	// Protocols serve connections that negotiate another ALPN name than wire.ALPN on a
	// Server's socket, by that name; only node certificates reach them.
	Protocols map[string]ProtocolHandler
	// FrameSize is the payload of one Data frame. Default 1 MiB.
	FrameSize int
	// MaxIndexSlice bounds the index slice and the BTI rows slice a receiver holds in
	// memory for one sstable. Default 256 MiB.
	MaxIndexSlice int64
	// MaxSSTableBytes bounds the bytes a receiver accepts for one sstable. Default 4 TiB.
	MaxSSTableBytes int64
	// Limits bounds decoded wire messages.
	Limits wire.Limits
	// Inbound, for Fetch, is the node-wide inbound throughput limiter (Server.Inbound);
	// nil is unlimited.
	Inbound *Limiter
	// Observer, when set, is told each sstable's and session's outcome (for metrics).
	Observer Observer
	// Transport is the data plane: TransportQUIC (the default; "" means it) or
	// TransportTCP, which moves each sstable's bytes over a plain, unencrypted TCP
	// connection with sendfile and splice while the QUIC control stream still runs the
	// session. A session uses TCP only when both ends are configured for it; use it only on
	// a trusted network (see the package documentation).
	Transport string
	// TCPAddr is where a Server with Transport tcp listens for data connections, host:port.
	// Default: the host of its QUIC address with port 0 (any free port). The bound address
	// is sent to receivers; an unspecified host (0.0.0.0, ::) there means the host the
	// receiver dialed for the control connection.
	TCPAddr string
	// SliceBounds limits the one multi-run child a sender makes of each parent (runs per
	// child, dead-bytes ratio); past them it sends one child per run and says why in the
	// plan. The zero value means the defaults (slice.DefaultMaxRuns, DefaultMaxDeadRatio).
	SliceBounds slice.Bounds
}

// The data planes of Config.Transport.
const (
	TransportQUIC = "quic"
	TransportTCP  = "tcp"
)

// featureTCPData is the Hello feature by which a receiver offers to take bulk data over a
// TCP connection (wire.TCPDataPlane).
const featureTCPData = "tcp-data"

// Observer receives outcomes as they happen. Calls come from session goroutines, must be
// safe for concurrent use and must not block.
type Observer interface {
	// SSTable reports one sstable sent (acknowledged installed by the receiver) or received
	// (installed here): its kind (entire, partial, rows) and bytes; err is non-nil on failure.
	SSTable(dir Direction, kind string, bytes int64, err error)
	// Session reports a finished session; err is nil when it completed.
	Session(dir Direction, err error)
}

func (c Config) observeSSTable(dir Direction, kind string, bytes int64, err error) {
	if c.Observer != nil {
		c.Observer.SSTable(dir, kind, bytes, err)
	}
}

func (c Config) observeSession(dir Direction, err error) {
	if c.Observer != nil {
		c.Observer.Session(dir, err)
	}
}

func (c Config) withDefaults() Config {
	if c.Node == "" {
		c.Node = "sluice"
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 30 * time.Second
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = c.IdleTimeout / 3
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = 8
	}
	if c.MaxSessionsPerPeer == 0 {
		c.MaxSessionsPerPeer = perPeerDefault(c.MaxSessions)
	}
	if c.FrameSize == 0 {
		c.FrameSize = 1 << 20
	}
	if c.MaxIndexSlice == 0 {
		c.MaxIndexSlice = 256 << 20
	}
	if c.MaxSSTableBytes == 0 {
		c.MaxSSTableBytes = 4 << 40
	}
	if c.Transport == "" {
		c.Transport = TransportQUIC
	}
	return c
}

// validate names the first bad field.
func (c Config) validate() error {
	switch {
	case c.IdleTimeout < 0:
		return fmt.Errorf("stream: Config.IdleTimeout %v is negative", c.IdleTimeout)
	case c.KeepAlive < 0 || c.KeepAlive >= c.IdleTimeout:
		return fmt.Errorf("stream: Config.KeepAlive %v must be in [0, IdleTimeout %v)", c.KeepAlive, c.IdleTimeout)
	case c.HandshakeTimeout < 0:
		return fmt.Errorf("stream: Config.HandshakeTimeout %v is negative", c.HandshakeTimeout)
	case c.MaxSessions < 0:
		return fmt.Errorf("stream: Config.MaxSessions %d is negative", c.MaxSessions)
	case c.MaxSessionsPerPeer < 0:
		return fmt.Errorf("stream: Config.MaxSessionsPerPeer %d is negative", c.MaxSessionsPerPeer)
	case c.FrameSize < 1<<10 || c.FrameSize > 16<<20:
		return fmt.Errorf("stream: Config.FrameSize %d outside [1 KiB, 16 MiB]", c.FrameSize)
	case c.MaxIndexSlice < 0:
		return fmt.Errorf("stream: Config.MaxIndexSlice %d is negative", c.MaxIndexSlice)
	case c.MaxSSTableBytes < 0:
		return fmt.Errorf("stream: Config.MaxSSTableBytes %d is negative", c.MaxSSTableBytes)
	case c.Transport != TransportQUIC && c.Transport != TransportTCP:
		return fmt.Errorf("stream: Config.Transport %q: want %s or %s", c.Transport, TransportQUIC, TransportTCP)
	}
	return nil
}

func (c Config) hello() wire.Hello {
	h := wire.Hello{MinVersion: wire.MinVersion, MaxVersion: wire.MaxVersion, Node: c.Node}
	if c.Transport == TransportTCP {
		h.Features = []string{featureTCPData}
	}
	return h
}
