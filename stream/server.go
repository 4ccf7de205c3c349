package stream

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/version"
	"github.com/sluicedb/sluice/wire"
)

// Server serves sstables to fetching peers over QUIC with mutual TLS: one session per
// connection, at most Config.MaxSessions at once. It only reads sstables (through the
// Catalog); it never writes a file.
type Server struct {
	cfg Config
	cat Catalog
	tls *tls.Config
	log zerolog.Logger
	out *Limiter
	in  *Limiter
	sem chan struct{}

	mu       sync.Mutex
	sessions map[string]*tracker
	perPeer  map[string]int // sessions held, by peer certificate name
	// active are the sessions whose request is read, by peer certificate name, with their
	// request's key (supersede).
	active map[string]map[*sendSession]string
	conns  map[*quic.Conn]struct{}
	addr   net.Addr
	plane  *tcpPlane // Transport tls or tcp
	ready  chan struct{}
}

// NewServer returns a server over cat. tlsConf must require and verify client
// certificates (the cluster CA); its NextProtos default to wire.ALPN.
func NewServer(cfg Config, cat Catalog, tlsConf *tls.Config, log zerolog.Logger) *Server {
	cfg = cfg.withDefaults()
	return &Server{cfg: cfg, cat: cat, tls: tlsConf, log: log, out: NewLimiter(0), in: NewLimiter(0),
		sem: make(chan struct{}, cfg.MaxSessions), sessions: map[string]*tracker{}, perPeer: map[string]int{}, active: map[string]map[*sendSession]string{}, conns: map[*quic.Conn]struct{}{},
		ready: make(chan struct{})}
}

// SetThroughput sets the node-wide outbound (this server's sends) and inbound (Fetches
// given Inbound()) limits in bytes per second; 0 is unlimited. It takes effect at once.
func (s *Server) SetThroughput(out, in int64) {
	s.out.SetRate(out)
	s.in.SetRate(in)
}

// Inbound is the node-wide inbound limiter, for Config.Inbound of Fetch.
func (s *Server) Inbound() *Limiter { return s.in }

// Sessions returns a snapshot of the sessions being served and recently finished.
func (s *Server) Sessions() []SessionStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionStatus, 0, len(s.sessions))
	for _, t := range s.sessions {
		out = append(out, t.snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// TCPAddr waits until Serve is listening and returns the address of its TCP data
// listener, or nil when Config.Transport is quic.
func (s *Server) TCPAddr(ctx context.Context) (net.Addr, error) {
	select {
	case <-s.ready:
		if s.plane == nil {
			return nil, nil
		}
		return s.plane.ln.Addr(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Addr waits until Serve is listening and returns its address.
func (s *Server) Addr(ctx context.Context) (net.Addr, error) {
	select {
	case <-s.ready:
		return s.addr, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// quicConfig is both ends' quic-go configuration. The receive windows bound what quic-go
// holds for a reader that falls behind (the disk, a busy core): each STREAM frame it holds is
// a 1452-byte buffer of its own, allocated once the pool of frames read and returned runs
// dry, so the deepest the queue ever got is what a receiver allocates for it. At 16 MiB that
// was 4-6 MiB per GiB received on a loaded machine; 2 MiB is still a hundred loopback round
// trips at 1 GB/s.
func quicConfig(cfg Config) *quic.Config {
	return &quic.Config{
		HandshakeIdleTimeout:           cfg.HandshakeTimeout,
		MaxIdleTimeout:                 cfg.IdleTimeout,
		KeepAlivePeriod:                cfg.KeepAlive,
		MaxIncomingStreams:             4,
		MaxIncomingUniStreams:          64,
		InitialStreamReceiveWindow:     1 << 20,
		MaxStreamReceiveWindow:         quicStreamWindow,
		InitialConnectionReceiveWindow: 2 << 20,
		MaxConnectionReceiveWindow:     2 * quicStreamWindow,
	}
}

// quicStreamWindow is the most a QUIC stream's receive window grows to.
const quicStreamWindow = 2 << 20

func withALPN(c *tls.Config, protos ...string) *tls.Config {
	c = c.Clone()
	if len(protos) > 0 {
		c.NextProtos = protos
	}
	if len(c.NextProtos) == 0 {
		c.NextProtos = []string{wire.ALPN}
	}
	return c
}

// ListenAndServe listens on the UDP address addr and serves until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	defer pc.Close()
	return s.Serve(ctx, pc)
}

// Serve serves on pc until ctx ends; it then closes every session's connection with code
// shutting_down, so that each peer learns at once (not after its idle timeout), and returns
// ctx's error. The caller owns pc and closes it after Serve returns.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn) error {
	if err := s.cfg.validate(); err != nil {
		return err
	}
	tr := &quic.Transport{Conn: lowAllocUDP(pc)}
	ln, err := tr.Listen(withALPN(s.tls, s.protocols()...), quicConfig(s.cfg))
	if err != nil {
		return err
	}
	if s.cfg.tcpData() {
		var tlsConf *tls.Config
		if s.cfg.Transport == TransportTLS {
			tlsConf = s.tls
		}
		if s.plane, err = listenTCP(s.cfg, tlsConf, ln.Addr(), s.log); err != nil {
			ln.Close()
			tr.Close()
			return err
		}
		go s.plane.serve()
		defer s.plane.close()
	}
	s.addr = ln.Addr()
	close(s.ready)
	var wg sync.WaitGroup
	defer func() {
		// Close every connection with a reason before the transport goes: the CONNECTION_CLOSE
		// frames leave while the socket is still open, and blocked stream writes return.
		s.mu.Lock()
		for c := range s.conns {
			c.CloseWithError(quic.ApplicationErrorCode(wire.CodeShuttingDown), "server shutting down")
		}
		s.mu.Unlock()
		ln.Close()
		tr.Close()
		wg.Wait()
	}()
	for {
		conn, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		s.mu.Lock()
		s.conns[conn] = struct{}{}
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
			}()
			s.handle(ctx, conn)
		}()
	}
}

func (s *Server) handle(ctx context.Context, conn *quic.Conn) {
	peer := conn.RemoteAddr().String()
	id, err := identify(conn)
	if err != nil {
		conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeUnauthorized), "client certificate required: "+err.Error())
		return
	}
	log := s.log.With().Str("peer", peer).Str("peer_name", id.Name).Logger()
	if h, ok := s.cfg.Protocols[conn.ConnectionState().TLS.NegotiatedProtocol]; ok {
		if id.Role != tlsx.RoleNode {
			conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeUnauthorized), "a node certificate is required")
			return
		}
		h(ctx, conn, id)
		return
	}
	release, over, err := s.admit(id.Name)
	if err != nil {
		log.Warn().Err(err).Msg("stream session refused")
		conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeRefused), err.Error())
		return
	}
	defer release()
	ss := &sendSession{srv: s, conn: conn, peer: peer, id: id, log: log, over: over, started: time.Now()}
	err = ss.run(ctx)
	s.cfg.observeSession(Sending, err)
	if err != nil {
		log.Warn().Err(err).Msg("stream session failed")
		if ss.tr != nil {
			ss.tr.update(func(st *SessionStatus) { st.State, st.Error = "failed", err.Error() })
		}
		code := codeOf(err)
		if ctx.Err() != nil {
			code = wire.CodeShuttingDown
		}
		conn.CloseWithError(quic.ApplicationErrorCode(code), truncate(err.Error(), 512))
		return
	}
	if ss.tr != nil {
		ss.tr.update(func(st *SessionStatus) { st.State = "complete" })
	}
	conn.CloseWithError(0, "")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// outgoing is one planned sstable on the sender.
type outgoing struct {
	planned wire.PlannedSSTable
	parent  *sstable.Table
	stats   []byte
	partial *slice.Partial // nil for entire
	// spans: the receiver fills compressed partials in place; the Manifest carries each
	// run's exact span.
	spans bool
}

type sendSession struct {
	srv     *Server
	conn    *quic.Conn
	peer    string
	id      tlsx.PeerIdentity // the verified certificate
	over    bool              // admitted over its peer's limit: it must supersede a session
	started time.Time
	log     zerolog.Logger
	// unregister takes the session out of its peer's active sessions (supersede).
	unregister func()
	ctrl       *quic.Stream
	sm         *Sender
	tr         *tracker
	wbuf       []byte
	buf        []byte
	msgs       chan wire.Message
	rerr       chan error
	tables     []*sstable.Table
	release    func()
	byID       map[string]*outgoing // planned sstables by ID, for outcomes
	ahead      *preparer            // makes the sstables to send ahead of their turn
	offer      *tcpOffer            // the TCP data plane offered to the receiver, or nil
	data       *dataConn            // its connection, once the receiver presented the token
}

const hdrRoom = 512

func (ss *sendSession) send(ms ...wire.Message) error {
	var err error
	// A receiver that stops reading the control stream cannot hold the session forever.
	ss.ctrl.SetWriteDeadline(time.Now().Add(ss.srv.cfg.IdleTimeout))
	ss.wbuf, err = writeMessages(ss.ctrl, ss.wbuf, ms...)
	return err
}

func (ss *sendSession) run(ctx context.Context) error {
	fr, err := ss.handshake(ctx)
	if err != nil {
		return err
	}
	defer ss.ctrl.CancelRead(0)
	defer ss.unregister()
	defer func() {
		for _, t := range ss.tables {
			t.Close()
		}
		if ss.release != nil {
			ss.release()
		}
	}()
	prep, err := ss.prepare(ss.sm.Request())
	if err != nil {
		return err
	}
	// The first sstables' runs and index are read while the data plane is set up and the
	// receiver takes the Prepare.
	ss.ahead = ss.prepareAhead(prep)
	defer ss.ahead.close()
	if ss.srv.plane != nil && ss.sm.PeerOffers(ss.srv.cfg.dataFeature()) {
		// Both ends run the same TCP data plane (tls or tcp): offer it before Prepare; the
		// receiver dials it at once and every sstable's data goes there.
		if ss.offer, err = ss.srv.plane.offer(); err != nil {
			return err
		}
		defer func() {
			ss.srv.plane.withdraw(ss.offer)
			if ss.data != nil {
				ss.data.close()
			}
		}()
		if err := ss.send(&wire.TCPDataPlane{Token: ss.offer.token, Addr: ss.srv.plane.advertised()}); err != nil {
			return err
		}
	}
	if err := ss.send(prep); err != nil {
		return err
	}
	return ss.stream(ctx, fr, prep)
}

// prepareAhead starts making the prepared sstables' manifests and sources in the order they
// are sent, ahead of their turn (readahead.go); the caller closes the preparer.
func (ss *sendSession) prepareAhead(prep *wire.Prepare) *preparer {
	todo := make([]*prepared, len(prep.SSTables))
	for i, p := range prep.SSTables {
		todo[i] = &prepared{o: ss.byID[p.ID], verified: ss.sm.Resumed(p.ID)}
	}
	return prepareAhead(todo, ss.srv.cfg.storage)
}

// handshake accepts the control stream and steps the Sender through Hello and the request,
// within the handshake timeout, and registers the session.
func (ss *sendSession) handshake(ctx context.Context) (*frameReader, error) {
	cfg := ss.srv.cfg
	hctx, cancel := context.WithTimeout(ctx, cfg.HandshakeTimeout)
	ctrl, err := ss.conn.AcceptStream(hctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: no control stream from %s: %w", ErrProtocol, ss.peer, err)
	}
	ss.ctrl = ctrl
	ss.sm = NewSender(cfg.hello())
	fr := newFrameReader(ctrl, capFrame(cfg.Limits, maxRequestFrame))
	ctrl.SetReadDeadline(time.Now().Add(cfg.HandshakeTimeout))
	for ss.sm.Request() == nil {
		m, err := fr.message()
		if err != nil {
			ctrl.CancelRead(0)
			return nil, fmt.Errorf("session with %s: %w", ss.peer, err)
		}
		out, err := ss.sm.Step(m)
		if werr := ss.send(out...); werr != nil && err == nil {
			err = werr
		}
		if err != nil {
			ctrl.CancelRead(0)
			return nil, fmt.Errorf("session with %s: %w", ss.peer, err)
		}
	}
	ctrl.SetReadDeadline(time.Time{})
	unregister, err := ss.srv.supersede(ss, ss.over)
	if err != nil {
		ctrl.CancelRead(0)
		return nil, err
	}
	ss.unregister = unregister
	fr.limit(capFrame(cfg.Limits, maxSessionFrame))
	req := ss.sm.Request()
	ss.tr = newTracker(req.SessionID.String(), ss.peer, Sending, req.Keyspace, req.Table)
	ss.srv.mu.Lock()
	ss.srv.sessions[ss.tr.st.ID] = ss.tr
	ss.srv.mu.Unlock()
	return fr, nil
}

// prepare plans the request (a failure ends the session with a Failure that says why) and
// turns the plan into the Prepare to send.
func (ss *sendSession) prepare(req *wire.StreamRequest) (*wire.Prepare, error) {
	var plan []*outgoing
	err := ss.checkPeer(req)
	if err == nil {
		plan, err = ss.plan(req)
	}
	if err != nil {
		code := codeOf(err)
		ss.send(&wire.Failure{Code: code, Reason: err.Error()})
		return nil, &SessionError{Peer: ss.peer, Code: code, Err: err}
	}
	planned := make([]wire.PlannedSSTable, len(plan))
	ss.byID = map[string]*outgoing{}
	for i, o := range plan {
		planned[i] = o.planned
		ss.byID[o.planned.ID] = o
	}
	prep, err := ss.sm.Prepare(planned)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, p := range prep.SSTables {
		total += int64(p.Bytes)
	}
	ss.tr.update(func(st *SessionStatus) {
		st.State, st.FilesTotal, st.BytesTotal = "streaming", len(prep.SSTables), total
	})
	return prep, nil
}

// stream sends every prepared sstable while one goroutine reads the control stream, then
// waits for the receiver's Complete and closes our side.
func (ss *sendSession) stream(ctx context.Context, fr *frameReader, prep *wire.Prepare) error {
	ss.msgs, ss.rerr = make(chan wire.Message, sessionQueue), make(chan error, 1)
	go func() {
		for {
			m, err := fr.message()
			if err != nil {
				ss.rerr <- err
				return
			}
			select {
			case ss.msgs <- m:
			case <-ss.conn.Context().Done():
				return
			}
		}
	}()
	ss.buf = make([]byte, hdrRoom+ss.srv.cfg.FrameSize)
	for {
		if err := ss.poll(ctx, false); err != nil {
			return err
		}
		if ss.sm.Done() {
			break
		}
		p, ok := ss.ahead.next()
		if !ok {
			break
		}
		if err := ss.sendOne(ctx, p); err != nil {
			return err
		}
	}
	ss.sm.Finished()
	for !ss.sm.Done() {
		if err := ss.poll(ctx, true); err != nil {
			return err
		}
	}
	// Complete received: close our side of the control stream; the receiver closes the
	// connection once it reads that end.
	ss.ctrl.Close()
	select {
	case <-ss.conn.Context().Done():
	case <-ctx.Done():
	case <-time.After(ss.srv.cfg.HandshakeTimeout):
	}
	return nil
}

// poll steps the Sender with the control messages that arrived; block waits for one.
func (ss *sendSession) poll(ctx context.Context, block bool) error {
	for {
		var m wire.Message
		if block {
			idle := time.NewTimer(ss.srv.cfg.IdleTimeout)
			select {
			case <-idle.C:
				// QUIC keepalives hold the connection open; the session itself is idle.
				return fmt.Errorf("%w: %s sent nothing for %v", ErrIdle, ss.peer, ss.srv.cfg.IdleTimeout)
			case m = <-ss.msgs:
			case err := <-ss.rerr:
				return fmt.Errorf("control stream from %s: %w", ss.peer, err)
			case <-ss.conn.Context().Done():
				return fmt.Errorf("peer %s gone: %w", ss.peer, context.Cause(ss.conn.Context()))
			case <-ctx.Done():
				return ctx.Err()
			}
		} else {
			select {
			case m = <-ss.msgs:
			default:
				return nil
			}
		}
		out, err := ss.sm.Step(m)
		if werr := ss.send(out...); werr != nil && err == nil {
			err = werr
		}
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *wire.Installed:
			ss.tr.update(func(st *SessionStatus) { st.FilesDone++ })
			if o := ss.byID[m.SSTableID]; o != nil {
				ss.srv.cfg.observeSSTable(Sending, o.planned.Kind.String(), int64(o.planned.Bytes), nil)
			}
		case *wire.Failure:
			ss.log.Warn().Str("sstable", m.SSTableID).Str("code", m.Code.String()).Str("reason", m.Reason).Msg("receiver failed sstable")
			if o := ss.byID[m.SSTableID]; o != nil {
				ss.srv.cfg.observeSSTable(Sending, o.planned.Kind.String(), 0, m)
			}
		}
		block = false
	}
}

// plan holds the table's sstables, opens them and decides each one (Decide) from one index
// pass (slice.Partials).
func (ss *sendSession) plan(req *wire.StreamRequest) ([]*outgoing, error) {
	hold := ss.srv.cat.Hold
	if req.Source != "" {
		sc, ok := ss.srv.cat.(SourceCatalog)
		if !ok {
			return nil, &wire.Failure{Code: wire.CodeNotFound, Reason: fmt.Sprintf("source %q: this sender serves no sources", req.Source)}
		}
		hold = func(ks, t string) ([]descriptor.Descriptor, func(), error) { return sc.HoldSource(req.Source, ks, t) }
	}
	descs, release, err := hold(req.Keyspace, req.Table)
	if err != nil {
		return nil, &wire.Failure{Code: wire.CodeNotFound, Reason: fmt.Sprintf("%s.%s: %v", req.Keyspace, req.Table, err)}
	}
	// The held files stay readable until release; the open tables keep their own handles
	// (Data.db), and everything else is read during planning or through held paths.
	ss.release = release
	var out []*outgoing
	// kept is what the session's partials hold of their index slices: indexKeep in all, the
	// first sstables' (sent first, their latency the one a receiver waits for).
	var kept int64
	for _, d := range descs {
		t, err := sstable.Open(d.Prefix())
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", d, err)
		}
		ss.tables = append(ss.tables, t)
		ranges, err := DecodeRanges(t.Partitioner, req.Ranges)
		if err != nil {
			return nil, err
		}
		opts := slice.PartialOptions{OnePerParent: true, Bounds: ss.srv.cfg.SliceBounds,
			IndexLater: true} // each index slice is produced as it is sent (manifestFor)
		if t.Version().Format == version.Big && ss.sm.PeerOffers(wire.FeatureIndexBig) {
			// The receiver takes Index.db spans as they are: planned from Summary.db, read
			// verbatim, no entry decoded here.
			opts.Format = slice.IndexBig
		}
		if t.Version().Format == version.BTI && t.Compression != nil && ss.sm.PeerOffers(wire.FeatureIndexPositions) {
			// The receiver reads the keys from the Data.db it receives: planned from the trie,
			// the slice made from it, no chunk decoded here but at the ranges' edges. A slice
			// of at most indexKeep bytes is kept from the plan's pass rather than made again.
			opts.Format, opts.IndexKeep = slice.IndexPositions, indexKeep-kept
		}
		partials, fallback, err := slice.Partials(t, ranges, opts)
		for _, p := range partials {
			kept += int64(len(p.Index))
		}
		if err != nil {
			if errors.Is(err, slice.ErrOverlap) {
				return nil, fmt.Errorf("%w: %w", ErrProtocol, err)
			}
			return nil, fmt.Errorf("planning %s: %w", d, err)
		}
		if len(partials) == 0 {
			continue
		}
		statsBytes, err := os.ReadFile(t.Path(descriptor.Statistics))
		if err != nil {
			return nil, err
		}
		c := Candidate{ID: filepath.Base(d.Prefix()), Refusal: slice.Refusal(t), DataLength: t.DataLength(), Fallback: fallback}
		byChild := map[string]*slice.Partial{}
		for i := range partials {
			p := &partials[i]
			f := ChildFacts{FirstOrdinal: p.Plan.FirstOrdinal, Partitions: p.Plan.Partitions, Lo: p.Plan.Lo, Hi: p.Plan.Hi,
				Runs: len(p.Plan.Runs), Bytes: p.Layout.FileLength + p.IndexLength + int64(len(p.Rows))}
			c.Partitions = p.ParentPartitions
			c.Children = append(c.Children, f)
			byChild[ChildID(c.ID, f)] = p
		}
		for _, comp := range t.Components {
			if fi, err := os.Stat(t.Path(comp)); err == nil {
				c.FileBytes += fi.Size()
			}
		}
		for _, ps := range Decide(c) {
			out = append(out, &outgoing{planned: ps, parent: t, stats: statsBytes, partial: byChild[ps.ID],
				spans: ss.sm.PeerOffers(wire.FeatureFillInPlace)})
		}
	}
	return out, nil
}

// source is one byte sequence of a Data stream: a range of a Readable (a component file,
// objio.go) or bytes in memory. Its frames carry offsets from start (non-zero when a resumed
// Data.db restarts mid-file).
type source struct {
	stream    wire.DataStream
	component uint32
	r         Readable
	off, n    int64
	start     int64
	mem       []byte
	// seq, when set, produces the n bytes in order (an index slice made as it is sent).
	seq io.ReadCloser
	// paced interleaves a read-ahead source with the ones before it no faster than they go:
	// an IndexPositions slice, whose records wait at the receiver until the runs holding
	// their keys are in.
	paced bool
	// frame, when set, is the payload of this source's frames if less than the session's.
	frame int64
	// hinted is how far past off the read-ahead policy asked r for (aheadOf).
	hinted int64
}

// beginOne sends the manifest of an sstable made ahead, accounting for what a resumed
// receiver already holds. When ok is false nothing is left to send: the sstable was failed
// (the Failure went out, err is the send's result) or the manifest could not be sent (err);
// its sources are closed. Otherwise the caller sends the sources and then closes them.
func (ss *sendSession) beginOne(p *prepared) (ok bool, err error) {
	id := p.o.planned.ID
	if p.err != nil {
		code := wire.CodeInternal
		if errors.Is(p.err, compress.ErrChecksum) || errors.Is(p.err, slice.ErrCorrupt) || errors.Is(p.err, slice.ErrUnverifiable) {
			code = wire.CodeChecksum // the parent's bytes disagree with, or lack, their checksum
		}
		return false, ss.send(&wire.Failure{Code: code, SSTableID: id, Reason: p.err.Error()})
	}
	if p.skipped > 0 {
		ss.tr.update(func(st *SessionStatus) { st.BytesTotal -= p.skipped })
	}
	if err := ss.send(p.m); err != nil {
		closeSources(p.srcs)
		return false, err
	}
	return true, nil
}

// resumeSources moves the Data.db source of o past the chunks the receiver already holds
// (Sender.Resumed), at the offset both sides derive from the manifest, and returns the
// bytes skipped.
func resumeSources(o *outgoing, m *wire.Manifest, srcs []source, verified uint64) int64 {
	info := o.parent.Compression
	if o.partial != nil {
		info = o.partial.Info
	}
	off, ok := dataResumeOffset(info, m.ChunkLength, int64(m.DataFileLength), verified)
	if !ok {
		return 0
	}
	// Data.db may come from several sources (the segments of a multi-run child), each
	// starting at its child offset: drop those wholly below off and start the next at it.
	var skipped int64
	for i := range srcs {
		s := &srcs[i]
		isData := s.stream == wire.StreamRuns ||
			(s.stream == wire.StreamComponent && o.planned.Kind == wire.KindEntire && m.Components[s.component].Name == string(descriptor.Data))
		if !isData || s.r == nil || s.start >= off {
			continue
		}
		k := min(off-s.start, s.n)
		s.off, s.n, s.start, s.hinted = s.off+k, s.n-k, s.start+k, 0
		skipped += k
	}
	return skipped
}

// manifestFor makes o's Manifest and the sources of its bytes, reading component files
// through store's Readables.
func manifestFor(o *outgoing, store storage) (*wire.Manifest, []source, error) {
	t := o.parent
	v := t.Version()
	m := &wire.Manifest{SSTableID: o.planned.ID, Version: v.Name, Format: v.Format.String(), Kind: o.planned.Kind,
		Statistics: o.stats, Partitions: o.planned.Partitions}
	if o.planned.Kind == wire.KindPartial || o.planned.Kind == wire.KindRows {
		// A rows child travels exactly as a partial one; the receiver rewrites its rows.
		p := o.partial
		l := &p.Layout
		m.DataLength, m.DataFileLength = uint64(l.DataLength), uint64(l.FileLength)
		m.ChunkLength, m.DeadBytes = uint32(l.ChunkLength), uint64(l.Dead)
		// The digest the receiver must find over the child's Data.db, derived from the parent's
		// stored checksums rather than from the bytes sent; it travels on the authenticated
		// control stream, so a chunk damaged on disk, in transit or by the data plane, even
		// with its inline CRC recomputed, fails the receiver's comparison. A parent chunk that
		// fails its CRC.db check fails this sstable here.
		d, err := slice.LayoutDigest(t, l)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", t.Path(descriptor.Data), err)
		}
		m.Digest = d
		if p.Info != nil {
			m.Compression = p.Info.Append(nil, v)
			if o.spans {
				// Each run from its first partition's start to its last partition's end: the
				// next indexed partition's start, which is that end in a parent without bytes
				// between partitions (Cassandra's, and sluice's filled ones; the receiver
				// proves it by reading each run's last partition).
				for _, r := range p.Plan.Runs {
					m.Spans = append(m.Spans, wire.Span{Lo: uint64(r.Lo), Hi: uint64(r.Hi)})
				}
			}
		}
		// A BTI child's rows slice goes first: the index records point into it, and the
		// receiver rebuilds from them as they arrive once it has it.
		var srcs []source
		if v.Format == version.BTI {
			m.Components = []wire.ComponentSpec{{Name: string(descriptor.Rows), Length: uint64(len(p.Rows))}}
			srcs = append(srcs, source{stream: wire.StreamComponent, component: 0, mem: p.Rows})
		}
		// The segments go in order on the one Data stream, each frame at its child offset.
		for _, s := range l.Segments {
			m.Runs = append(m.Runs, wire.Run{FirstChunk: uint64(s.FirstChunk), ChunkCount: uint64(s.Chunks()),
				FileOffset: uint64(s.DstOff), Length: uint64(s.Length()), ParentOffset: uint64(s.PLo)})
			srcs = append(srcs, source{stream: wire.StreamRuns, r: store.readable(t.DataFile(), false), off: s.SrcOff, n: s.Length(), start: s.DstOff})
		}
		// The index slice is made by a pass over the parent's index while it is sent, in
		// pieces: the sender holds no slice for the session, whatever its partition count.
		m.IndexSliceLength, m.IndexFormat = uint64(p.IndexLength), wire.IndexFormat(p.IndexFormat)
		paced := p.IndexFormat == slice.IndexPositions
		if p.IndexLength == 0 || (p.Index != nil && !paced) {
			srcs = append(srcs, source{stream: wire.StreamIndex, mem: p.Index})
		} else {
			// An IndexPositions slice goes in step with the runs, from memory when the plan
			// kept it (IndexKeep).
			var r io.ReadCloser = io.NopCloser(bytes.NewReader(p.Index))
			if p.Index == nil {
				var err error
				if r, err = slice.IndexReader(t, *p); err != nil {
					return nil, nil, err
				}
			}
			// Made ahead, while the runs are sent: the pass over the parent's index costs per
			// partition, and small partitions would otherwise leave the data plane idle.
			src := source{stream: wire.StreamIndex, n: p.IndexLength, paced: paced}
			piece := min(indexAheadPiece, p.IndexLength)
			if src.paced {
				piece = pacedPiece(p.IndexLength)
				src.frame = piece
			}
			src.seq = newReadAhead(r, int(piece), indexAheadDepth)
			srcs = append(srcs, src)
		}
		return m, srcs, nil
	}
	// Entire: every component file as it is; Statistics and CompressionInfo ride in the
	// Manifest, the receiver writes its own TOC.
	m.DataLength, m.DataFileLength = uint64(t.DataLength()), uint64(t.DataFileLength)
	if t.Compression != nil {
		b, err := os.ReadFile(t.Path(descriptor.CompressionInfo))
		if err != nil {
			return nil, nil, err
		}
		m.Compression, m.ChunkLength = b, uint32(t.Compression.ChunkLength)
	}
	if t.Has(descriptor.Digest) {
		b, err := os.ReadFile(t.Path(descriptor.Digest))
		if err != nil {
			return nil, nil, err
		}
		d, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", t.Path(descriptor.Digest), err)
		}
		m.Digest = uint32(d)
	}
	var srcs []source
	for _, c := range t.Components {
		switch c {
		case descriptor.TOC, descriptor.Statistics, descriptor.CompressionInfo:
			continue
		}
		f, err := os.Open(t.Path(c))
		if err != nil {
			for _, s := range srcs {
				s.r.Close()
			}
			return nil, nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			for _, s := range srcs {
				s.r.Close()
			}
			return nil, nil, err
		}
		srcs = append(srcs, source{stream: wire.StreamComponent, component: uint32(len(m.Components)), r: store.readable(f, true), n: fi.Size()})
		m.Components = append(m.Components, wire.ComponentSpec{Name: string(c), Length: uint64(fi.Size())})
	}
	return m, srcs, nil
}
