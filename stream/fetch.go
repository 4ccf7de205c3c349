package stream

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
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
}

// Fetched is one installed sstable.
type Fetched struct {
	Path       string // the installed sstable's path prefix, e.g. dir/nb-7-big
	Kind       string // entire, partial or rows
	SSTable    string // the sender's ID
	Partitions int64
	Bytes      int64 // bytes received for it, all streams
}

// FetchResult is what a Fetch installed.
type FetchResult struct {
	SSTables      []Fetched
	Skipped       []string // sender IDs already installed by an earlier Fetch (Resume)
	Failed        []error  // one *SSTableError per failed sstable
	BytesReceived int64
	Wall          time.Duration
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
	if err := state.sweep(); err != nil {
		return nil, fmt.Errorf("stream: removing leftovers of an earlier fetch in %s: %w", req.Dir, err)
	}
	sr := wire.StreamRequest{Operation: wire.OpFetch, Keyspace: req.Keyspace, Table: req.Table, Ranges: EncodeRanges(req.Ranges)}
	if _, err := rand.Read(sr.SessionID[:]); err != nil {
		return nil, err
	}
	res := &FetchResult{}
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

	conn, err := quic.DialAddr(ctx, req.Peer, withALPN(tlsConf), quicConfig(cfg))
	if err != nil {
		return nil, &SessionError{Peer: req.Peer, Code: wire.CodeUnauthorized, Err: err}
	}
	stop := context.AfterFunc(ctx, func() {
		conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeShuttingDown), "fetch cancelled")
	})
	defer stop()
	rs := &recvSession{cfg: cfg, conn: conn, peer: req.Peer, dir: req.Dir, state: state, res: res, onProgress: onProgress,
		resumed: resumed, tr: newTracker(sr.SessionID.String(), req.Peer, Receiving, req.Keyspace, req.Table)}
	err = rs.run(ctx, sr)
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
	if err := state.remove(); err != nil {
		return res, err
	}
	return res, nil
}

type recvSession struct {
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
	dataFR     *frameReader
	data       *tcpReader // the TCP data plane, when the sender offered it
	mem        []byte     // TCP: a payload bound for memory (index, rows slices)
	readBack   []byte     // TCP: Data.db bytes read back from the file for checking
	failedIDs  map[string]bool
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
	ctrl, err := rs.conn.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	rs.ctrl = ctrl
	rs.sm = NewReceiver(rs.cfg, sr)
	if err := rs.send(rs.sm.Start()...); err != nil {
		return err
	}
	fr := newFrameReader(ctrl, rs.cfg.Limits)
	for !rs.sm.Done() {
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
		if st.DataPlane != nil {
			c, err := dialData(ctx, rs.cfg, st.DataPlane, rs.peer)
			if err != nil {
				return err
			}
			defer c.Close()
			// A session that ends for any reason (cancel included: Fetch closes the QUIC
			// connection) unblocks a read on the data connection.
			stop := context.AfterFunc(rs.conn.Context(), func() { c.Close() })
			defer stop()
			rs.data = newTCPReader(c, rs.cfg.Limits)
		}
		if p, ok := m.(*wire.Prepare); ok {
			var total int64
			for _, s := range p.SSTables {
				total += int64(s.Bytes)
			}
			rs.progress(func(s *SessionStatus) { s.State, s.FilesTotal, s.BytesTotal = "streaming", len(p.SSTables), total })
		}
		if f, ok := m.(*wire.Failure); ok {
			why := ErrRefused
			if f.Code == wire.CodeChecksum {
				why = ErrChecksum // the sender found its own copy damaged
			}
			rs.failed(f.SSTableID, f.Code, fmt.Errorf("%w: sender: %s", why, f.Reason))
		}
		if _, ok := m.(*wire.Manifest); ok && st.Discard != "" {
			// A refused Manifest: the Failure we send says why; its data stream follows.
			for _, out := range st.Send {
				if f, ok := out.(*wire.Failure); ok {
					rs.failed(f.SSTableID, f.Code, st.Err)
				}
			}
			if rs.data != nil {
				if err := rs.drain(st.Discard); err != nil {
					return err
				}
				continue
			}
			us, err := rs.conn.AcceptUniStream(ctx)
			if err != nil {
				return err
			}
			us.CancelRead(quic.StreamErrorCode(wire.CodeProtocol))
		}
		if st.Receive != nil {
			if err := rs.receive(ctx, st.Receive); err != nil {
				return err
			}
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

// receive reads the current sstable's data stream into an install and commits it, or
// fails the sstable. Only a session-level problem (connection gone, context done) is
// returned as an error; then the verified prefix of Data.db is kept for a resume.
func (rs *recvSession) receive(ctx context.Context, in *Incoming) error {
	var us *quic.ReceiveStream
	if rs.data == nil {
		var err error
		if us, err = rs.conn.AcceptUniStream(ctx); err != nil {
			return fmt.Errorf("waiting for the data of %s: %w", in.ID, err)
		}
	}
	var job *installJob
	var part string // this sstable's kept Data.db (a hard link to the install's), or ""
	// fatal marks an error the TCP data connection cannot recover from (it broke, or a
	// frame was cut short): it fails the session, as a broken QUIC connection does.
	var fatal bool
	// failSSTable ends this sstable. keep says whether every byte accepted so far was also
	// written, so that the verified prefix may be kept when the whole session is failing.
	failSSTable := func(err error, keep bool) error {
		if us != nil {
			us.CancelRead(quic.StreamErrorCode(localCode(err)))
		} else if !fatal && ctx.Err() == nil && rs.conn.Context().Err() == nil {
			// The rest of this sstable's data is still on its way: skip it to reach the
			// next sstable's (the sender stops early once it reads our Failure).
			if derr := rs.drain(in.ID); derr != nil {
				err, fatal, keep = errors.Join(err, derr), true, false
			}
		}
		if fatal || ctx.Err() != nil || rs.conn.Context().Err() != nil || connectionGone(err) {
			if keep && job != nil && part != "" {
				if cerr := rs.checkpoint(in, job, part); cerr != nil {
					err = errors.Join(err, fmt.Errorf("keeping the received prefix of %s: %w", in.ID, cerr))
				}
			}
			return err
		}
		if derr := rs.dropPartial(in.ID, part); derr != nil {
			return errors.Join(err, derr)
		}
		code := localCode(err)
		rs.failed(in.ID, code, err)
		rs.cfg.observeSSTable(Receiving, in.Kind.String(), 0, err)
		return rs.send(rs.sm.Failed(in.ID, code, err.Error()).Send...)
	}
	job, err := newInstallJob(rs.dir, rs.state.scratchPattern(), in)
	if err != nil {
		return failSSTable(err, false)
	}
	defer job.abort()
	var replayed int64
	if v, ok := rs.resumed[in.ID]; ok {
		delete(rs.resumed, in.ID)
		if off, ok := in.ResumeOffset(v); ok {
			// The sender restarts Data.db at off: the kept prefix must fill the gap.
			p := rs.state.Partial
			if p == nil || p.ID != in.ID || p.VerifiedChunks != v || p.Bytes != off || p.Manifest != manifestHash(in.Manifest) {
				return failSSTable(fmt.Errorf("%w: the kept Data.db prefix of %s was received under another manifest", ErrManifest, in.ID), false)
			}
			if err := job.replay(filepath.Join(rs.dir, p.Path), off); err != nil {
				return failSSTable(err, false)
			}
			replayed = off
		}
	}
	if part, err = rs.keep(job); err != nil {
		return failSSTable(err, false)
	}
	if replayed > 0 {
		// Record the new kept file before dropping the old one.
		if err := rs.checkpoint(in, job, part); err != nil {
			return failSSTable(err, false)
		}
	}
	var sinceReport, sinceCheckpoint int64
	// account counts n payload bytes received and written: the inbound limit, progress
	// reports and checkpoints.
	account := func(n int64) error {
		rs.res.BytesReceived += n
		if err := rs.cfg.Inbound.Wait(ctx, int(n)); err != nil {
			return failSSTable(err, true)
		}
		sinceReport += n
		if sinceReport >= progressBytes {
			sinceReport = 0
			rs.progress(func(s *SessionStatus) { s.BytesDone = rs.res.BytesReceived })
		}
		if sinceCheckpoint += n; sinceCheckpoint >= checkpointBytes && part != "" {
			sinceCheckpoint = 0
			if err := rs.checkpoint(in, job, part); err != nil {
				return failSSTable(err, false)
			}
		}
		return nil
	}
	var d wire.Data
	if rs.data != nil {
		for {
			n, err := rs.data.header(&d)
			if err == nil && n == 0 && d.SSTableID != in.ID {
				err = fmt.Errorf("%w: end of sstable %q's data in that of %q", ErrProtocol, d.SSTableID, in.ID)
			}
			if err != nil {
				fatal = true
				return failSSTable(err, true)
			}
			if n == 0 {
				break
			}
			s, err := in.admit(&d, uint64(n))
			if err != nil {
				return failSSTable(err, false)
			}
			if err := rs.tcpPayload(ctx, in, job, s, &d, n); err != nil {
				// A payload cut short leaves the connection mid-frame. Every byte accepted
				// before this frame was written, so its verified prefix may be kept.
				fatal = rs.data.left != 0
				return failSSTable(err, fatal)
			}
			if err := account(n); err != nil {
				return err
			}
		}
	} else {
		if rs.dataFR == nil {
			rs.dataFR = newFrameReader(us, rs.cfg.Limits)
		} else {
			rs.dataFR.r, rs.dataFR.n, rs.dataFR.off = us, 0, 0
		}
		for {
			b, err := rs.dataFR.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return failSSTable(err, true)
			}
			if _, err := wire.ParseData(b, rs.cfg.Limits, &d); err != nil {
				return failSSTable(fmt.Errorf("%w: %w", ErrProtocol, err), true)
			}
			if err := in.Accept(&d); err != nil {
				return failSSTable(err, false)
			}
			if err := job.write(&d); err != nil {
				return failSSTable(err, false)
			}
			if err := account(int64(len(d.Payload))); err != nil {
				return err
			}
		}
	}
	if err := in.Complete(); err != nil {
		return failSSTable(err, false)
	}
	partitions, err := job.finish(ctx)
	if err != nil {
		// Every byte arrived and was written: a cancelled rebuild or rewrite may keep them.
		return failSSTable(err, true)
	}
	rs.state.Installed[in.ID] = job.final.Filename(descriptor.TOC)
	rs.state.Partial = nil
	if err := rs.state.save(); err != nil {
		return err
	}
	if part != "" {
		// Unrecorded now; if this removal is lost, the next Fetch's sweep removes it.
		os.Remove(filepath.Join(rs.dir, part))
	}
	got := int64(in.Received()) - replayed
	rs.res.SSTables = append(rs.res.SSTables, Fetched{Path: job.final.Prefix(), Kind: in.Kind.String(), SSTable: in.ID,
		Partitions: partitions, Bytes: got})
	rs.progress(func(s *SessionStatus) { s.FilesDone++; s.BytesDone = rs.res.BytesReceived })
	rs.cfg.observeSSTable(Receiving, in.Kind.String(), got, nil)
	return rs.send(rs.sm.Installed(in.ID, uint64(partitions)).Send...)
}

const (
	// progressBytes is how often, in received bytes, onProgress hears of a transfer.
	progressBytes = 1 << 20
	// checkpointBytes is how often, in received bytes, the verified Data.db prefix of the
	// sstable in progress is made durable and recorded, so that even a crash (not only a
	// failed session, which records it at once) loses at most this much.
	checkpointBytes = 64 << 20
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
	chunks, off := in.Checkpoint()
	if chunks == 0 || len(rs.resumed) > 0 {
		// Nothing to keep, or the record still holds the prefix of an sstable this session
		// resumes but has not reached yet: there is one partial per request.
		return nil
	}
	if err := job.data.Sync(); err != nil {
		return err
	}
	old := rs.state.Partial
	rs.state.Partial = &partialState{ID: in.ID, Path: part, VerifiedChunks: chunks, Bytes: off, Manifest: manifestHash(in.Manifest)}
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
