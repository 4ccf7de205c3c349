package node

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/stream"
)

// StreamServer is what the node needs of the stream layer's server. Implementations must be
// safe for concurrent use: the admin API calls Sessions and SetThroughput while Serve runs.
type StreamServer interface {
	// Serve serves sessions until ctx is done, then stops (closing its socket) and returns
	// nil or ctx's error, or returns another error when it fails. The node calls it once.
	Serve(ctx context.Context) error
	// Addr is the address the server is bound to; it is valid from construction on, so a
	// configured port 0 reports the port chosen.
	Addr() net.Addr
	// Sessions returns a snapshot of the current and recently finished sessions. The node
	// does not retain or modify it.
	Sessions() []stream.SessionStatus
	// SetThroughput changes the node-wide rate limits in bytes per second, 0 = unlimited.
	SetThroughput(outBytesPerSec, inBytesPerSec int64)
}

// StreamConfig is the part of the configuration the stream server uses, with defaults
// applied, plus the collectors it feeds and the node's hooks into it.
type StreamConfig struct {
	Name      string    // node name; the certificate is TLSDir/Name.crt and Name.key
	Addr      string    // host:port to bind
	TLSDir    string    // holds ca.crt, Name.crt, Name.key
	Transport Transport // TransportQUIC, TransportTLS or TransportTCP
	// TCPCongestion is the data connections' TCP congestion control ("" = kernel default).
	TCPCongestion string
	// FillAfterReceive: see Config.FillAfterReceive.
	FillAfterReceive bool
	Throughput       Throughput
	Timeouts         Timeouts
	Memory           Memory
	Metrics          *Metrics
	// Authorize decides per session what a peer certificate may fetch (roles).
	Authorize stream.Authorizer
	// Protocols are the node's other protocols on the stream socket (peer operations).
	Protocols map[string]stream.ProtocolHandler
}

// NewStreamServerFunc constructs the stream server. It should bind cfg.Addr (so a taken port
// fails the start) but serve nothing until Serve. cat is the node's Catalog; log carries the
// node's fields.
type NewStreamServerFunc func(cfg StreamConfig, cat stream.Catalog, log zerolog.Logger) (StreamServer, error)

// Options configures New.
type Options struct {
	Config Config
	Logger zerolog.Logger
	// NewStreamServer builds the stream server. Nil runs the node without streaming: the
	// admin API still serves status, metrics and an empty session list, which is enough to
	// inspect data directories; the node logs a warning.
	NewStreamServer NewStreamServerFunc
	// ShutdownTimeout bounds the clean shutdown of the admin and stream servers after ctx
	// is cancelled; default 10s.
	ShutdownTimeout time.Duration
	// TuneGossip, when set, adjusts the gossip configuration before it is used (tests pass
	// gossip.Config.ForTests for fast failure detection).
	TuneGossip func(gossip.Config) gossip.Config
}

const defaultShutdownTimeout = 10 * time.Second

// Node is the sluice daemon: data directories, the catalog over them, the admin HTTP API, the
// metrics registry and the stream server. New prepares it without side effects; Run does the
// work. The methods other than Run may be called concurrently.
type Node struct {
	cfg             Config
	log             zerolog.Logger
	newStream       NewStreamServerFunc
	shutdownTimeout time.Duration
	catalog         *catalog.Catalog
	metrics         *Metrics
	ran             atomic.Bool
	ready           chan struct{}

	// Set by Run before ready is closed, read-only after.
	started        time.Time
	adminAddr      net.Addr
	adminTokenFile string
	stream         StreamServer

	mu         sync.Mutex // orders throughput changes
	throughput Throughput

	tuneGossip  func(gossip.Config) gossip.Config
	id          *tlsx.Identity          // this node's certificate, loaded by Run (nil without streaming)
	peerClient  *peerrpc.Client         // calls other members' peer operations
	peerSrv     *peerrpc.Server         // answers theirs
	peerFetches chan struct{}           // slots of the fetches members ask of this node
	runCtx      context.Context         // Run's context, for operations; set before ready
	cluster     atomic.Pointer[cluster] // nil until membership has joined, or standalone
	peers       peerRegistry
	local       *ops.Local   // the data directories, for the operations and fetches
	tracker     *ops.Tracker // runs the operations, one at a time
	sessions    sessionLog   // this node's own fetch sessions
	sidecar     *sidecar     // the cassandra section's (cassandra.go); nil without one
}

// New validates the configuration (a *ConfigError names the bad field) and returns a node
// ready to Run. It touches neither the file system nor the network.
func New(opts Options) (*Node, error) {
	cfg := opts.Config.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	timeout := opts.ShutdownTimeout
	if timeout <= 0 {
		timeout = defaultShutdownTimeout
	}
	log := opts.Logger.With().Str("node", cfg.Name).Logger()
	n := &Node{
		cfg:             cfg,
		log:             log,
		newStream:       opts.NewStreamServer,
		shutdownTimeout: timeout,
		catalog:         catalog.New(cfg.DataDirs, log),
		metrics:         NewMetrics(),
		ready:           make(chan struct{}),
		throughput:      cfg.Throughput,
		tuneGossip:      opts.TuneGossip,
	}
	n.local = ops.NewLocal(cfg.DataDirs, n.catalog)
	n.tracker = ops.NewTracker(log)
	n.peerFetches = make(chan struct{}, maxPeerFetches)
	n.sidecar = newSidecar(cfg, log)
	n.peerSrv = &peerrpc.Server{Handler: n.peerCall, Log: log.With().Str("component", "peer").Logger()}
	return n, nil
}

// Config is the node's configuration with defaults applied.
func (n *Node) Config() Config { return n.cfg }

// Catalog is the node's catalog, the stream.Catalog handed to the stream server.
func (n *Node) Catalog() *catalog.Catalog { return n.catalog }

// Metrics are the node's collectors, also handed to the stream server in StreamConfig.
func (n *Node) Metrics() *Metrics { return n.metrics }

// Ready is closed once Run has prepared the data directories and bound both servers.
func (n *Node) Ready() <-chan struct{} { return n.ready }

func (n *Node) isReady() bool {
	select {
	case <-n.ready:
		return true
	default:
		return false
	}
}

// AdminAddr is the bound admin address, nil before Ready.
func (n *Node) AdminAddr() net.Addr {
	if !n.isReady() {
		return nil
	}
	return n.adminAddr
}

// AdminTokenFile is the file holding the admin API's token, "" before Ready.
func (n *Node) AdminTokenFile() string {
	if !n.isReady() {
		return ""
	}
	return n.adminTokenFile
}

// StreamAddr is the bound stream address, nil before Ready or when the node runs without a
// stream server.
func (n *Node) StreamAddr() net.Addr {
	if !n.isReady() || n.stream == nil {
		return nil
	}
	return n.stream.Addr()
}

// Run prepares the data directories (creating missing ones, removing leftovers of interrupted
// installs and stream snapshots of a previous run), binds the admin API and the stream
// server, and runs the node's services (services) as a group until ctx is cancelled or one of
// them fails. Then it stops them all, waiting at most Options.ShutdownTimeout, and returns nil
// when they stopped cleanly; a failure is returned after the same shutdown. Run may be called
// once.
func (n *Node) Run(ctx context.Context) error {
	if !n.ran.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	if err := n.prepareDirs(); err != nil {
		return err
	}
	if !isLoopback(n.cfg.AdminAddr) {
		n.log.Warn().Str("addr", n.cfg.AdminAddr).Msg("admin API is not on loopback: its token is its only protection, and it travels in clear text")
	}
	ln, err := net.Listen("tcp", n.cfg.AdminAddr)
	if err != nil {
		return fmt.Errorf("admin_addr: %w", err)
	}
	tokenFile := n.cfg.AdminTokenFile
	if tokenFile == "" {
		if tokenFile, err = DefaultAdminTokenFile(ln.Addr().String()); err != nil {
			ln.Close()
			return err
		}
	}
	token, err := adminapi.LoadOrCreateToken(tokenFile)
	if err != nil {
		ln.Close()
		return err
	}
	n.adminTokenFile = tokenFile
	// n.mu is held from reading the limits until ready is closed, so a SetThroughput either
	// lands before the stream server is built (and is in its config) or after (and reaches it).
	n.mu.Lock()
	if n.newStream == nil {
		n.log.Warn().Msg("no stream server: running without streaming")
	} else {
		ss, err := n.newStream(n.streamConfig(), n.catalog, n.log)
		if err != nil {
			n.mu.Unlock()
			ln.Close()
			return fmt.Errorf("stream server: %w", err)
		}
		n.stream = ss
		// The real stream server loaded the same identity; a stand-in (tests) may have none,
		// and then the node neither calls nor proves peers.
		if n.id, err = tlsx.Load(n.cfg.TLSDir, n.cfg.Name); err != nil {
			n.log.Warn().Err(err).Msg("no node certificate: peer operations disabled")
		} else {
			n.peerClient = &peerrpc.Client{ID: n.id, HandshakeTimeout: n.cfg.Timeouts.Handshake,
				IdleTimeout: n.cfg.Timeouts.Idle, KeepAlive: n.cfg.Timeouts.Keepalive}
		}
	}
	n.adminAddr = ln.Addr()
	n.started = time.Now()
	n.metrics.setThroughput(n.throughput)

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	n.runCtx = ctx
	n.tracker.Begin(ctx)
	services := n.services(ln, token)
	close(n.ready)
	n.mu.Unlock()
	ev := n.log.Info().Str("admin_addr", n.adminAddr.String()).Str("transport", string(n.cfg.Transport)).
		Strs("data_dirs", n.cfg.DataDirs)
	if n.stream != nil {
		ev = ev.Str("stream_addr", n.stream.Addr().String())
	}
	ev.Msg("node running")

	err = runGroup(ctx, stop, n.shutdownTimeout, n.log, services...)
	if err == nil {
		n.log.Info().Msg("node stopped")
	}
	return err
}

// services are what Run runs until the node stops: the admin API, the stream server (with
// the peer protocol on its socket), the cluster operations, and, as configured, membership
// and the Cassandra ring refresher.
func (n *Node) services(ln net.Listener, token string) []service {
	srv := &http.Server{
		Handler:           adminapi.NewServer(adminBackend{n}, token, ln.Addr(), n.cfg.AdminAddr),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          stdlog.New(n.log.With().Str("component", "admin").Logger(), "", 0),
	}
	out := []service{
		{"admin server", func(ctx context.Context) error { return n.serveAdmin(ctx, srv, ln) }},
		// Operations run under the node's context; stopping waits for them to return.
		{"operations", func(ctx context.Context) error {
			<-ctx.Done()
			return n.tracker.Wait(context.Background())
		}},
	}
	if n.stream != nil {
		out = append(out, service{"stream server", n.stream.Serve})
	}
	if n.cfg.Membership() {
		out = append(out, service{"membership", n.runCluster})
	}
	if n.sidecar != nil {
		// The Cassandra sidecar (cassandra.go): the ring refresher.
		out = append(out, service{"cassandra ring refresher", func(ctx context.Context) error {
			n.sidecar.run(ctx)
			return nil
		}})
	}
	return out
}

// serveAdmin serves the admin API on ln until ctx ends, then shuts it down, waiting at most
// the shutdown timeout for requests in flight.
func (n *Node) serveAdmin(ctx context.Context, srv *http.Server, ln net.Listener) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), n.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		<-served
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (n *Node) streamConfig() StreamConfig {
	return StreamConfig{
		Name:             n.cfg.Name,
		Addr:             n.cfg.StreamAddr,
		TLSDir:           n.cfg.TLSDir,
		Transport:        n.cfg.Transport,
		TCPCongestion:    n.cfg.TCPCongestion,
		FillAfterReceive: n.cfg.FillAfterReceive,
		Throughput:       n.throughput,
		Timeouts:         n.cfg.Timeouts,
		Memory:           n.cfg.Memory,
		Metrics:          n.metrics,
		Authorize:        n.authorizeStream,
		Protocols:        map[string]stream.ProtocolHandler{peerrpc.ALPN: n.servePeer},
	}
}

// prepareDirs creates the data directories and, in every table directory, removes the
// leftovers of interrupted installs (fsx.CleanLeftovers, which must run before any install
// starts) and the stream snapshots of a previous run.
func (n *Node) prepareDirs() error {
	for _, d := range n.cfg.DataDirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("data_dirs: %w", err)
		}
	}
	dirs, err := n.catalog.TableDirs()
	if err != nil {
		return fmt.Errorf("data_dirs: %w", err)
	}
	for _, td := range dirs {
		removed, err := fsx.CleanLeftovers(td.Path)
		for _, name := range removed {
			n.log.Info().Str("dir", td.Path).Str("file", name).Msg("removed leftover of an interrupted install")
		}
		if err != nil {
			return fmt.Errorf("cleaning %s: %w", td.Path, err)
		}
		stale, err := catalog.RemoveStaleHolds(td.Path)
		for _, p := range stale {
			n.log.Info().Str("dir", p).Msg("removed stream snapshot of a previous run")
		}
		if err != nil {
			return fmt.Errorf("cleaning %s: %w", td.Path, err)
		}
	}
	n.log.Info().Strs("data_dirs", n.cfg.DataDirs).Int("tables", len(dirs)).Msg("data directories ready")
	return nil
}

// Status reports the node and the tables in its data directories.
func (n *Node) Status() (Status, error) {
	tables, err := n.tables()
	if err != nil {
		return Status{}, err
	}
	s := Status{
		Name:       n.cfg.Name,
		StreamAddr: n.cfg.StreamAddr,
		AdminAddr:  n.cfg.AdminAddr,
		Transport:  string(n.cfg.Transport),
		DataDirs:   n.cfg.DataDirs,
		Throughput: n.Throughput(),
		Tables:     tables,
	}
	if n.isReady() {
		s.AdminAddr = n.adminAddr.String()
		s.Started = n.started
		s.UptimeSeconds = time.Since(n.started).Seconds()
		if n.stream != nil {
			s.Streaming = true
			s.StreamAddr = n.stream.Addr().String()
		}
	}
	if c := n.cluster.Load(); c != nil {
		var own int64
		for _, t := range tables {
			own += t.Bytes
		}
		v := c.view(func(m gossip.Member) int64 {
			if m.Name == n.cfg.Name {
				return own
			}
			return -1
		})
		s.Ring = &v
	}
	return s, nil
}

// runCluster runs membership until ctx ends: it joins, announces, starts an interrupted or
// requested bootstrap, and watches events. A decommissioned node's gossip is already shut
// down; the node keeps serving its admin API (state LEFT) until it is stopped.
func (n *Node) runCluster(ctx context.Context) error {
	c, err := n.startCluster(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	n.cluster.Store(c)
	watched := make(chan struct{})
	go func() { c.watch(); close(watched) }()
	if c.state() == ring.Joining {
		if _, err := n.tracker.Start(OpBootstrap, "", c.operations().Bootstrap); err != nil {
			n.log.Error().Err(err).Msg("bootstrap not started")
		}
	}
	if c.replacing.Load() {
		if _, err := n.StartReplace(); err != nil {
			n.log.Error().Err(err).Msg("replace not started")
		}
	}
	<-ctx.Done()
	err = c.g.Shutdown() // idempotent: a decommission may have shut it down already
	<-watched
	return err
}

// GossipAddr is the address gossip listens on, "" before the node has joined or without
// membership.
func (n *Node) GossipAddr() string {
	if c := n.cluster.Load(); c != nil {
		return c.g.Addr()
	}
	return ""
}

// RingView is this node's view of the cluster, with every reachable member's load when
// withLoad is set; ErrNoMembership without membership.
func (n *Node) RingView(ctx context.Context, withLoad bool) (RingView, error) {
	c, err := n.requireCluster()
	if err != nil {
		return RingView{}, err
	}
	own, err := n.Load()
	if err != nil {
		return RingView{}, err
	}
	return c.view(func(m gossip.Member) int64 {
		switch {
		case m.Name == n.cfg.Name:
			return own
		case !withLoad || m.Liveness != gossip.StateAlive || m.Identity != gossip.IdentityProven:
			return -1
		}
		lctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		var l LoadResponse
		if err := c.call(lctx, m, peerLoad, nil, &l); err != nil {
			return -1
		}
		return l.LoadBytes
	}), nil
}

// loadTimeout bounds the question of one peer's load.
const loadTimeout = 2 * time.Second

// Load is the bytes of this node's live sstables.
func (n *Node) Load() (int64, error) {
	tables, err := n.tables()
	if err != nil {
		return 0, err
	}
	var b int64
	for _, t := range tables {
		b += t.Bytes
	}
	return b, nil
}

// Sessions returns the stream server's sessions and the fetch sessions of this node's own
// operations; none before Ready or without a server.
func (n *Node) Sessions() []stream.SessionStatus {
	var s []stream.SessionStatus
	if n.isReady() && n.stream != nil {
		s = n.stream.Sessions()
	}
	s = append(s, n.sessions.list()...)
	if s == nil {
		s = []stream.SessionStatus{}
	}
	return s
}

// Throughput returns the current rate limits.
func (n *Node) Throughput() Throughput {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.throughput
}

// SetThroughput changes the rate limits: the stream server's (once Ready) and the gauges.
// Negative rates are a *ConfigError.
func (n *Node) SetThroughput(t Throughput) error {
	switch {
	case t.OutboundBytesPerSecond < 0:
		return configErrorf("outbound_bytes_per_second", "negative (%d); 0 means unlimited", t.OutboundBytesPerSecond)
	case t.InboundBytesPerSecond < 0:
		return configErrorf("inbound_bytes_per_second", "negative (%d); 0 means unlimited", t.InboundBytesPerSecond)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.throughput = t
	if n.isReady() && n.stream != nil {
		n.stream.SetThroughput(t.OutboundBytesPerSecond, t.InboundBytesPerSecond)
	}
	n.metrics.setThroughput(t)
	n.log.Info().Int64("outbound_bytes_per_second", t.OutboundBytesPerSecond).
		Int64("inbound_bytes_per_second", t.InboundBytesPerSecond).Msg("stream throughput set")
	return nil
}
