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
	// Transport is the data plane: TransportQUIC (the default; "" means it), TransportTLS,
	// which moves each sstable's bytes over one TLS 1.3 connection on TCP, mutually
	// authenticated with the same certificates as the QUIC connection (the recommended fast
	// path), or TransportTCP, which moves them over a plain, unencrypted TCP connection
	// with sendfile and splice (trusted networks only; see the package documentation). The
	// QUIC control stream runs the session in every case. A session uses a TCP data plane
	// only when both ends are configured for the same one; otherwise its data goes over QUIC.
	Transport string
	// TCPCongestion names the TCP congestion control of the data connections (tls, tcp),
	// set with setsockopt(TCP_CONGESTION): "bbr", "cubic", ... as the kernel offers them
	// (/proc/sys/net/ipv4/tcp_available_congestion_control). Empty: the kernel's default.
	TCPCongestion string
	// TCPAddr is where a Server with Transport tls or tcp listens for data connections, host:port.
	// Default: the host of its QUIC address with port 0 (any free port). The bound address
	// is sent to receivers; an unspecified host (0.0.0.0, ::) there means the host the
	// receiver dialed for the control connection.
	TCPAddr string
	// SliceBounds limits the one multi-run child a sender makes of each parent (runs per
	// child, dead-bytes ratio); past them it sends one child per run and says why in the
	// plan. The zero value means the defaults (slice.DefaultMaxRuns, DefaultMaxDeadRatio).
	SliceBounds slice.Bounds
	// CommitBatch bounds how many sstables a Fetch, having received each whole, commits
	// together with one shared sync (fsx.CommitAll) while the next ones stream; a batch also
	// goes at 64 MiB received, before an sstable of 64 MiB or more, and when nothing more is
	// to arrive. Default 64; 1 commits each sstable alone (still while the next streams).
	CommitBatch int
	// FillAfterReceive makes a receiver take a compressed partial as the sender laid it out
	// (whole parent chunks, other partitions between runs), then fill a copy of it: every
	// byte written twice. By default it fills the partial as its runs arrive (every byte
	// written once, wire.FeatureFillInPlace), which needs each run to end exactly where its
	// last partition does; a parent with bytes no partition owns (written by sluice before
	// filler partitions) fails that check by name, and this is the way to take it anyway.
	FillAfterReceive bool
	// VerifyStrict verifies every entire sstable received against Cassandra's sequential
	// rules too (sstable.VerifyOptions.Strict: the first partition at position 0, no byte
	// outside a partition), before it is published, instead of the index-driven checks alone,
	// and runs the same strict verification on every partial filled as it arrived, on the
	// commit's goroutine while the next sstables stream; Fetched.StrictVerified says so. A
	// Cassandra sidecar sets it: Cassandra imports what it receives, and its importer (or a
	// replace's move) then need not read the sstable a second time. A sluice node
	// leaves it off: an entire copy of a legacy sstable with dead bytes (written by sluice
	// before filler partitions) is still a good sstable to sluice's index-driven readers.
	VerifyStrict bool

	// recordsOnly makes a receiver's Hello leave out wire.FeatureIndexBig and
	// wire.FeatureIndexPositions, as a receiver that rebuilds only from records would (tests).
	recordsOnly bool
	// storage reads the sender's component files and writes the receiver's (objio.go):
	// fileStorage, or a faulty one in tests.
	storage storage
}

// The data planes of Config.Transport.
const (
	TransportQUIC = "quic"
	TransportTCP  = "tcp"
	TransportTLS  = "tls"
)

// tcpData says whether the transport moves bulk data over a TCP connection (tls, tcp).
func (c Config) tcpData() bool { return c.Transport == TransportTCP || c.Transport == TransportTLS }

// featureTCPData and featureTLSData are the Hello features by which a receiver offers to
// take bulk data over a plain TCP connection or a TLS one (wire.TCPDataPlane). A sender
// offers its data plane only to a receiver that asked for that very one, so a receiver
// that asked for TLS never dials plaintext.
const (
	featureTCPData = "tcp-data"
	featureTLSData = "tls-data"
)

// dataFeature is the Hello feature of the transport's TCP data plane, or "".
func (c Config) dataFeature() string {
	switch c.Transport {
	case TransportTCP:
		return featureTCPData
	case TransportTLS:
		return featureTLSData
	}
	return ""
}

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
	if c.CommitBatch <= 0 {
		c.CommitBatch = defaultCommitBatch
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
	if c.storage == nil {
		c.storage = fileStorage{}
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
	case c.Transport != TransportQUIC && c.Transport != TransportTCP && c.Transport != TransportTLS:
		return fmt.Errorf("stream: Config.Transport %q: want %s, %s or %s", c.Transport, TransportQUIC, TransportTLS, TransportTCP)
	case c.TCPCongestion != "" && !c.tcpData():
		return fmt.Errorf("stream: Config.TCPCongestion %q needs Transport tls or tcp, not %s", c.TCPCongestion, c.Transport)
	}
	return nil
}

func (c Config) hello() wire.Hello {
	h := wire.Hello{MinVersion: wire.MinVersion, MaxVersion: wire.MaxVersion, Node: c.Node}
	if !c.recordsOnly {
		h.Features = append(h.Features, wire.FeatureIndexBig, wire.FeatureIndexPositions)
	}
	if f := c.dataFeature(); f != "" {
		h.Features = append(h.Features, f)
	}
	if !c.FillAfterReceive {
		h.Features = append(h.Features, wire.FeatureFillInPlace)
	}
	return h
}
