package stream

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// FetchRequest asks Peer for the parts of Keyspace.Table in Ranges, to be installed in Dir
// (a Cassandra-layout table directory). With Resume, sstables a previous Fetch of the same
// request into Dir installed are not fetched again, and the sstable it was receiving when it
// stopped restarts after its last verified chunk. Several Fetches may run into one Dir at
// once (they allocate generations under a per-directory lock), but not two of the same
// request (Peer, table and Ranges), which share one resume record.
type FetchRequest struct {
	Peer            string
	Keyspace, Table string
	Ranges          token.RangeSet
	Dir             string
	Resume          bool
	// Source names sstables the sender registered under that id (wire.StreamRequest.Source)
	// instead of the table's live ones; "" for the live table.
	Source string
}

// Fetched is one installed sstable.
type Fetched struct {
	Path       string // the installed sstable's path prefix, e.g. dir/nb-7-big
	Kind       string // entire, partial or rows
	SSTable    string // the sender's ID
	Partitions int64
	Bytes      int64 // bytes received for it, all streams
	// Runs is the number of runs of the parent its Data.db holds (1 for entire and rows
	// sstables); FillerPartitions the filler partitions (empty, in the gaps the runs leave)
	// its index addresses besides its Partitions.
	Runs             int
	FillerPartitions int64
	// FillerBytes and ReencodedBytes (a filled partial): the uncompressed bytes of its filler
	// partitions, and the Data.db bytes of the chunks re-encoded at its runs' edges.
	FillerBytes    int64
	ReencodedBytes int64
}

// FetchResult is what a Fetch installed.
type FetchResult struct {
	SSTables      []Fetched
	Skipped       []string // sender IDs already installed by an earlier Fetch (Resume)
	Failed        []error  // one *SSTableError per failed sstable
	BytesReceived int64
	Wall          time.Duration
	// Warnings say what the fetch ignored: resume record entries that name no file of the
	// target directory.
	Warnings []string
}

// Fetch runs one receiving session against req.Peer and installs what it receives. It
// returns an error when the session failed (a *SessionError, with the result so far) or
// when some sstables failed (their errors joined, with the result listing what did
// install). Every failed sstable leaves nothing visible in req.Dir. onProgress, if not nil,
// is called from Fetch's goroutine after each sstable and data frame batch.
func Fetch(ctx context.Context, cfg Config, tlsConf *tls.Config, req FetchRequest, onProgress func(SessionStatus)) (*FetchResult, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if req.Peer == "" || req.Keyspace == "" || req.Table == "" || req.Dir == "" || len(req.Ranges) == 0 {
		return nil, fmt.Errorf("stream: FetchRequest needs Peer, Keyspace, Table, Dir and Ranges")
	}
	start := time.Now()
	if err := os.MkdirAll(req.Dir, 0o755); err != nil {
		return nil, err
	}
	state := loadState(req.Dir, req.Peer, req.Keyspace, req.Table, req.Ranges.String(), req.Resume)
	// What installs left in the directory when their process died (a receiver killed
	// mid-fetch): their owner locks say they are gone, whoever ran them. Installs in flight
	// stay.
	removed, err := fsx.CleanLeftovers(req.Dir)
	if err != nil {
		return nil, fmt.Errorf("stream: removing leftovers of dead installs in %s: %w", req.Dir, err)
	}
	if len(removed) > 0 {
		state.warnings = append(state.warnings, fmt.Sprintf("removed %d files that installs left in %s when their process died: %s",
			len(removed), req.Dir, strings.Join(removed[:min(len(removed), 8)], " ")))
	}
	if err := state.sweep(); err != nil {
		return nil, fmt.Errorf("stream: removing leftovers of an earlier fetch in %s: %w", req.Dir, err)
	}
	sr := wire.StreamRequest{Operation: wire.OpFetch, Keyspace: req.Keyspace, Table: req.Table, Ranges: EncodeRanges(req.Ranges),
		Source: req.Source}
	if _, err := rand.Read(sr.SessionID[:]); err != nil {
		return nil, err
	}
	res := &FetchResult{Warnings: state.warnings}
	for id := range state.Installed {
		sr.Resume = append(sr.Resume, wire.ResumePoint{SSTableID: id, VerifiedChunks: ResumeInstalled})
		res.Skipped = append(res.Skipped, id)
	}
	sort.Strings(res.Skipped)
	resumed := map[string]uint64{}
	if p := state.Partial; p != nil {
		sr.Resume = append(sr.Resume, wire.ResumePoint{SSTableID: p.ID, VerifiedChunks: p.VerifiedChunks})
		resumed[p.ID] = p.VerifiedChunks
	}

	conn, err := dialQUIC(ctx, req.Peer, withALPN(tlsConf), quicConfig(cfg))
	if err != nil {
		return nil, &SessionError{Peer: req.Peer, Code: wire.CodeUnauthorized, Err: err}
	}
	stop := context.AfterFunc(ctx, func() {
		conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeShuttingDown), "fetch cancelled")
	})
	defer stop()
	rs := &recvSession{closeData: func() {}, releaseSpace: func() {}, cfg: cfg, tls: tlsConf, conn: conn, peer: req.Peer, dir: req.Dir, state: state, res: res, onProgress: onProgress,
		resumed: resumed, tr: newTracker(sr.SessionID.String(), req.Peer, Receiving, req.Keyspace, req.Table)}
	err = rs.run(ctx, sr)
	rs.releaseSpace()
	res.Wall = time.Since(start)
	if err == nil && len(res.Failed) > 0 {
		cfg.observeSession(Receiving, errors.Join(res.Failed...))
	} else {
		cfg.observeSession(Receiving, err)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		conn.CloseWithError(quic.ApplicationErrorCode(codeOf(err)), truncate(err.Error(), 512))
		var se *SessionError
		if !errors.As(err, &se) {
			err = &SessionError{Peer: req.Peer, Code: codeOf(err), Err: err}
		}
		return res, err
	}
	conn.CloseWithError(0, "")
	if len(res.Failed) > 0 {
		return res, errors.Join(res.Failed...)
	}
	// The record stays, naming what is installed, so that repeating this request with
	// Resume installs nothing twice.
	if err := state.complete(); err != nil {
		return res, err
	}
	return res, nil
}

type recvSession struct {
	ctx        context.Context // the session's: what its installs' fills stop with
	cfg        Config
	conn       *quic.Conn
	peer       string
	dir        string
	state      *fetchState
	res        *FetchResult
	onProgress func(SessionStatus)
	tr         *tracker
	ctrl       *quic.Stream
	sm         *Receiver
	wbuf       []byte
	dataIn     *tcpReader  // QUIC: reads each sstable's stream, reused
	dataPiece  []byte      // QUIC: the buffer payloads pass through
	tcp        *tcpIn      // the TCP data plane, when the sender offered it
	tls        *tls.Config // the QUIC connection's, for a TLS data plane
	closeData  func()      // closes the TCP data connection
	// releaseSpace ends the session's hold on its directory's free space (space.go).
	releaseSpace func()
	failedIDs    map[string]bool
	// sealed are the sstables received whole and waiting for a shared commit (commit.go),
	// sealedBytes their bytes; committing is the batch being committed.
	sealed      []*sealed
	sealedBytes int64
	committing  *commitRun
	// resumed holds the ResumePoints with verified chunks this session sent: the sender
	// restarts those sstables' Data.db after them.
	resumed map[string]uint64
}

func (rs *recvSession) send(ms ...wire.Message) error {
	var err error
	rs.wbuf, err = writeMessages(rs.ctrl, rs.wbuf, ms...)
	return err
}

func (rs *recvSession) progress(f func(*SessionStatus)) {
	st := rs.tr.update(f)
	if rs.onProgress != nil {
		rs.onProgress(st)
	}
}

func (rs *recvSession) run(ctx context.Context, sr wire.StreamRequest) error {
	rs.ctx = ctx
	ctrl, err := rs.conn.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	rs.ctrl = ctrl
	rs.sm = NewReceiver(rs.cfg, sr)
	if err := rs.send(rs.sm.Start()...); err != nil {
		return err
	}
	defer func() { rs.closeData() }() // closeData is set once the TCP data plane is dialled
	defer rs.drain()
	fr := newFrameReader(ctrl, rs.cfg.Limits)
	for {
		// Before blocking on the control stream: once nothing more is to arrive, the sender
		// waits for the outcomes of the sealed sstables, so their commit must finish first.
		if err := rs.commitIfDue(0); err != nil {
			return err
		}
		if rs.sm.AllReceived() {
			if err := rs.settle(true); err != nil {
				return err
			}
		}
		if rs.sm.Done() {
			break
		}
		m, err := fr.message()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: control stream ended before Complete", ErrProtocol)
			}
			return fmt.Errorf("control stream from %s: %w", rs.peer, err)
		}
		st, err := rs.sm.Step(m)
		if werr := rs.send(st.Send...); werr != nil && err == nil {
			err = werr
		}
		if err != nil {
			return err
		}
		if err := rs.act(ctx, m, st); err != nil {
			return err
		}
	}
	// Complete is sent: wait for the sender to close its side, then the caller closes the
	// connection.
	ctrl.Close()
	ctrl.SetReadDeadline(time.Now().Add(rs.cfg.HandshakeTimeout))
	for {
		if _, err := fr.message(); err != nil {
			break
		}
	}
	rs.progress(func(s *SessionStatus) { s.State = "complete" })
	return nil
}

// act carries out what the Receiver decided on control message m: dial the TCP data plane,
// report progress and failures, skip a refused sstable's data, receive an accepted one.
func (rs *recvSession) act(ctx context.Context, m wire.Message, st Step) error {
	if st.DataPlane != nil {
		var tlsConf *tls.Config
		if rs.cfg.Transport == TransportTLS {
			tlsConf = rs.tls
		}
		c, err := dialData(ctx, rs.cfg, tlsConf, rs.conn.ConnectionState().TLS.PeerCertificates, st.DataPlane, rs.peer)
		if err != nil {
			return err
		}
		// A session that ends for any reason (cancel included: Fetch closes the QUIC
		// connection) unblocks a read on the data connection.
		stop := context.AfterFunc(rs.conn.Context(), func() { c.close() })
		rs.closeData = func() { stop(); c.close() }
		rs.tcp = &tcpIn{data: newTCPReader(c.c, rs.cfg.Limits), sealed: c.plain() == nil}
	}
	switch m := m.(type) {
	case *wire.Prepare:
		var total int64
		for _, s := range m.SSTables {
			total += int64(s.Bytes)
		}
		rs.progress(func(s *SessionStatus) { s.State, s.FilesTotal, s.BytesTotal = "streaming", len(m.SSTables), total })
		if err := rs.reserveSpace(m.SSTables); err != nil {
			return err
		}
	case *wire.Failure:
		why := ErrRefused
		if m.Code == wire.CodeChecksum {
			why = ErrChecksum // the sender found its own copy damaged
		}
		rs.failed(m.SSTableID, m.Code, fmt.Errorf("%w: sender: %s", why, m.Reason))
	case *wire.Manifest:
		if st.Discard != "" {
			// A refused Manifest: the Failure we send says why; its data stream follows.
			for _, out := range st.Send {
				if f, ok := out.(*wire.Failure); ok {
					rs.failed(f.SSTableID, f.Code, st.Err)
				}
			}
			p, err := rs.openInbound(ctx, st.Discard)
			if err != nil {
				return err
			}
			return p.abandon(st.Discard, wire.CodeProtocol)
		}
	}
	if st.Receive != nil {
		return rs.receive(ctx, st.Receive)
	}
	return nil
}

func (rs *recvSession) failed(id string, code wire.Code, err error) {
	if id == "" || rs.failedIDs[id] {
		return
	}
	if rs.failedIDs == nil {
		rs.failedIDs = map[string]bool{}
	}
	rs.failedIDs[id] = true
	rs.res.Failed = append(rs.res.Failed, &SSTableError{Peer: rs.peer, SSTable: id, Code: code, Err: err})
}

// receive reads the current sstable's data into an install and commits it, or fails the
// sstable. Only a session-level problem (connection gone, context done, data plane broken)
// is returned as an error; then the verified prefix of Data.db is kept for a resume.
func (rs *recvSession) receive(ctx context.Context, in *Incoming) error {
	plane, err := rs.openInbound(ctx, in.ID)
	if err != nil {
		return fmt.Errorf("waiting for the data of %s: %w", in.ID, err)
	}
	// A big sstable next: the sealed small ones are committed while it streams.
	if err := rs.commitIfDue(int64(in.Total())); err != nil {
		return err
	}
	t := &transfer{rs: rs, ctx: ctx, in: in, plane: plane}
	st := t.begin()
	defer func() {
		if t.job != nil { // nil once sealed: the batch owns it
			t.job.abort()
		}
	}()
	if st != nil {
		return t.fail(st)
	}
	if st := t.pump(); st != nil {
		return t.fail(st)
	}
	if st := t.install(); st != nil {
		return t.fail(st)
	}
	return nil
}

// transfer is one sstable being received: its checks (in), its install (job), the data
// plane it arrives on and the name its Data.db is kept under for a resume.
type transfer struct {
	rs         *recvSession
	ctx        context.Context
	in         *Incoming
	plane      inbound
	job        *installJob
	part       string // the kept Data.db (a hard link to the install's), or ""
	replayed   int64  // bytes of a kept prefix replayed instead of received
	sinceRport int64
}

// stop is why a transfer stopped: err, and whether every byte accepted so far was also
// written (so that its verified prefix may be kept).
type stop struct {
	err    error
	intact bool
}

func stopped(err error, intact bool) *stop { return &stop{err: err, intact: intact} }

// begin opens the install and, when the sender resumes this sstable after a kept prefix,
// replays that prefix into it; then gives the Data.db its kept name.
func (t *transfer) begin() *stop {
	rs, in := t.rs, t.in
	job, err := newInstallJob(rs.dir, rs.state.scratchPattern(), in)
	if err != nil {
		return stopped(err, false)
	}
	job.ctx = rs.ctx
	t.job = job
	if v, ok := rs.resumed[in.ID]; ok {
		delete(rs.resumed, in.ID)
		if off, ok := in.ResumeOffset(v); ok {
			// The sender restarts Data.db at off: the kept prefix must fill the gap.
			p := rs.state.Partial
			if p == nil || p.ID != in.ID || p.VerifiedChunks != v || p.Bytes != off || p.Manifest != in.manifestHash() {
				return stopped(fmt.Errorf("%w: the kept Data.db prefix of %s was received under another manifest", ErrManifest, in.ID), false)
			}
			if err := job.replay(filepath.Join(rs.dir, p.Path), off); err != nil {
				return stopped(err, false)
			}
			t.replayed = off
		}
	}
	if t.part, err = rs.keep(job); err != nil {
		return stopped(err, false)
	}
	if t.replayed > 0 {
		// Record the new kept file before dropping the old one.
		if err := rs.checkpoint(t.in, job, t.part); err != nil {
			return stopped(err, false)
		}
	}
	return nil
}

// pump is the one receive loop: each frame's header is admitted by the Receiver's checks,
// its payload taken by the data plane into the install, and the bytes accounted.
func (t *transfer) pump() *stop {
	var d wire.Data
	for {
		n, end, err := t.plane.next(&d)
		if err != nil {
			return stopped(err, true)
		}
		if end {
			return nil
		}
		s, err := t.in.admit(&d, uint64(n))
		if err != nil {
			return stopped(err, false)
		}
		if err := t.plane.take(t.ctx, t.in, t.job, s, &d, n); err != nil {
			// A TCP payload cut short leaves the connection mid-frame (the plane is broken):
			// every byte accepted before this frame was written, so its prefix may be kept.
			var cut payloadCut
			return stopped(err, t.plane.broken() || errors.As(err, &cut))
		}
		if d.Stream == wire.StreamRuns {
			t.job.dataArrived()
		}
		if st := t.account(n); st != nil {
			return st
		}
	}
}

// account counts n payload bytes received and written: the inbound limit, progress reports
// and checkpoints.
func (t *transfer) account(n int64) *stop {
	rs := t.rs
	rs.res.BytesReceived += n
	if err := rs.cfg.Inbound.Wait(t.ctx, int(n)); err != nil {
		return stopped(err, true)
	}
	if t.sinceRport += n; t.sinceRport >= progressBytes {
		t.sinceRport = 0
		rs.progress(func(s *SessionStatus) { s.BytesDone = rs.res.BytesReceived })
	}
	if t.in.Progress(n) && t.part != "" {
		if err := rs.checkpoint(t.in, t.job, t.part); err != nil {
			return stopped(err, false)
		}
	}
	return nil
}

// install completes the sstable and queues it to be sealed and committed with a batch
// (commit.go);
// a rows sstable, which is rewritten after its commit, is committed and acknowledged here.
func (t *transfer) install() *stop {
	rs, in, job := t.rs, t.in, t.job
	if err := in.Complete(); err != nil {
		return stopped(err, false)
	}
	if in.Kind != wire.KindRows {
		if err := rs.seal(t); err != nil {
			return &stop{err: sessionErr{err}}
		}
		return nil
	}
	// The record names the install before its commit: loadState keeps an entry only while
	// its TOC.txt exists, so a crash before the commit fetches the sstable again and a crash
	// after it does not (recorded after the commit, it would be installed twice).
	job.beforePublish = func(final descriptor.Descriptor) error {
		rs.state.Installed[in.ID] = final.Filename(descriptor.TOC)
		return rs.state.save()
	}
	partitions, err := job.finish(t.ctx)
	if err != nil {
		if _, recorded := rs.state.Installed[in.ID]; recorded {
			// Not published: drop the entry before its generation can be reused by another
			// install (best effort; the TOC check on load covers a crash here).
			delete(rs.state.Installed, in.ID)
			_ = rs.state.save()
		}
		// Every byte arrived and was written: a cancelled rebuild or rewrite may keep them.
		return stopped(err, true)
	}
	if crashAfterPublish != nil && crashAfterPublish() {
		return &stop{err: sessionErr{errCrashAfterPublish}}
	}
	s := &sealed{in: in, job: job, part: t.part, replayed: t.replayed, partitions: partitions}
	rs.sm.Received(in.ID)
	if err := rs.installed(s); err != nil {
		return &stop{err: sessionErr{err}}
	}
	return nil
}

// crashAfterPublish, set only by tests, ends the session right after an sstable became
// visible, as a process killed at that instant would, before anything else is recorded.
var crashAfterPublish func() bool

var errCrashAfterPublish = errors.New("stream: test crash after publishing an sstable")

// sessionErr marks an error that ends the session whatever else holds (the control stream
// failed after the sstable was installed).
type sessionErr struct{ error }

func (e sessionErr) Unwrap() error { return e.error }

// fail ends the transfer as DecideFailure says: the session ends (keeping the verified
// prefix when it may), or this sstable alone fails and the sender is told.
func (t *transfer) fail(st *stop) error {
	rs, in, err := t.rs, t.in, st.err
	if se, ok := err.(sessionErr); ok {
		return se.error
	}
	over := func() bool {
		return t.plane.broken() || t.ctx.Err() != nil || rs.conn.Context().Err() != nil || connectionGone(err)
	}
	if !over() {
		// The rest of this sstable's data is still on its way: stop it (QUIC) or skip it to
		// reach the next sstable's (TCP).
		if aerr := t.plane.abandon(in.ID, localCode(err)); aerr != nil {
			err, st.intact = errors.Join(err, aerr), false
		}
	}
	act := DecideFailure(FailureFacts{SessionOver: over(), PrefixIntact: st.intact, Kept: t.job != nil && t.part != ""})
	if act.EndSession {
		if act.Checkpoint {
			if cerr := rs.checkpoint(in, t.job, t.part); cerr != nil {
				err = errors.Join(err, fmt.Errorf("keeping the received prefix of %s: %w", in.ID, cerr))
			}
		}
		return err
	}
	if derr := rs.dropPartial(in.ID, t.part); derr != nil {
		return errors.Join(err, derr)
	}
	code := localCode(err)
	rs.failed(in.ID, code, err)
	rs.cfg.observeSSTable(Receiving, in.Kind.String(), 0, err)
	return rs.send(rs.sm.Failed(in.ID, code, err.Error()).Send...)
}

const (
	// progressBytes is how often, in received bytes, onProgress hears of a transfer.
	progressBytes = 1 << 20
)

// keep gives the Data.db being received a second name, a hard link in the target
// directory named for this request, which survives the install's abort: a later resume
// reads the verified prefix from it. Where hard links are impossible it returns "" and the
// sstable can only restart from its beginning.
func (rs *recvSession) keep(job *installJob) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	name := strings.Replace(rs.state.partPattern(), "*", hex.EncodeToString(b[:]), 1)
	if err := os.Link(job.data.Name(), filepath.Join(rs.dir, name)); err != nil {
		return "", nil
	}
	return name, nil
}

// checkpoint makes the verified Data.db prefix of in durable and records it, atomically,
// as the partial sstable of this request, replacing any earlier kept file.
//
// Crash argument: the data file is fsynced before the record naming its prefix is written,
// and the record is replaced atomically (state.save), so a record never names bytes that
// are not on disk; and the resumed session re-verifies every compressed chunk of the
// prefix as it copies it (replay). A kept file is created before any record names it and
// removed after the record stops naming it; one left unnamed by a crash in between is
// removed by the next Fetch of the same request (sweep).
func (rs *recvSession) checkpoint(in *Incoming, job *installJob, part string) error {
	chunks, off, ok := in.CheckpointAt(len(rs.resumed))
	if !ok {
		return nil
	}
	if err := job.data.Sync(); err != nil {
		return err
	}
	old := rs.state.Partial
	rs.state.Partial = &partialState{ID: in.ID, Path: part, VerifiedChunks: chunks, Bytes: off, Manifest: in.manifestHash()}
	if err := rs.state.save(); err != nil {
		return err
	}
	if old != nil && old.Path != part {
		return removeIfExists(filepath.Join(rs.dir, old.Path))
	}
	return nil
}

// dropPartial forgets the kept prefix of sstable id, which failed for good.
func (rs *recvSession) dropPartial(id, part string) error {
	var errs []error
	if p := rs.state.Partial; p != nil && p.ID == id {
		rs.state.Partial = nil
		errs = append(errs, rs.state.save(), removeIfExists(filepath.Join(rs.dir, p.Path)))
	}
	if part != "" {
		errs = append(errs, removeIfExists(filepath.Join(rs.dir, part)))
	}
	return errors.Join(errs...)
}

// connectionGone reports an error that ends the whole connection, not one stream: the peer
// closed it (an application close, as a stopping node does), the transport failed or it went
// idle. A stream read can return it before the connection's context is cancelled, and it must
// not be mistaken for this sstable's own failure: the session is over, and the verified prefix
// is kept for resume.
func connectionGone(err error) bool {
	var ae *quic.ApplicationError
	var te *quic.TransportError
	var ie *quic.IdleTimeoutError
	var he *quic.HandshakeTimeoutError
	return errors.As(err, &ae) || errors.As(err, &te) || errors.As(err, &ie) || errors.As(err, &he)
}
