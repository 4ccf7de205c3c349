package stream

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// FetchRequest asks Peer for the parts of Keyspace.Table in Ranges, to be installed in Dir
// (a Cassandra-layout table directory). With Resume, sstables a previous Fetch of the same
// request into Dir installed are not fetched again.
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

	conn, err := quic.DialAddr(ctx, req.Peer, withALPN(tlsConf), quicConfig(cfg))
	if err != nil {
		return nil, &SessionError{Peer: req.Peer, Code: wire.CodeUnauthorized, Err: err}
	}
	stop := context.AfterFunc(ctx, func() {
		conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeShuttingDown), "fetch cancelled")
	})
	defer stop()
	rs := &recvSession{cfg: cfg, conn: conn, peer: req.Peer, dir: req.Dir, state: state, res: res, onProgress: onProgress,
		tr: newTracker(sr.SessionID.String(), req.Peer, Receiving, req.Keyspace, req.Table)}
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
	failedIDs  map[string]bool
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
		if p, ok := m.(*wire.Prepare); ok {
			var total int64
			for _, s := range p.SSTables {
				total += int64(s.Bytes)
			}
			rs.progress(func(s *SessionStatus) { s.State, s.FilesTotal, s.BytesTotal = "streaming", len(p.SSTables), total })
		}
		if f, ok := m.(*wire.Failure); ok {
			rs.failed(f.SSTableID, f.Code, fmt.Errorf("%w: sender: %s", ErrRefused, f.Reason))
		}
		if _, ok := m.(*wire.Manifest); ok && st.Discard != "" {
			// A refused Manifest: the Failure we send says why; its data stream follows.
			for _, out := range st.Send {
				if f, ok := out.(*wire.Failure); ok {
					rs.failed(f.SSTableID, f.Code, errors.New(f.Reason))
				}
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
// returned as an error.
func (rs *recvSession) receive(ctx context.Context, in *Incoming) error {
	us, err := rs.conn.AcceptUniStream(ctx)
	if err != nil {
		return fmt.Errorf("waiting for the data of %s: %w", in.ID, err)
	}
	failSSTable := func(err error) error {
		us.CancelRead(quic.StreamErrorCode(localCode(err)))
		if ctx.Err() != nil || rs.conn.Context().Err() != nil {
			return err
		}
		code := localCode(err)
		rs.failed(in.ID, code, err)
		rs.cfg.observeSSTable(Receiving, in.Kind.String(), 0, err)
		return rs.send(rs.sm.Failed(in.ID, code, err.Error()).Send...)
	}
	job, err := newInstallJob(rs.dir, in)
	if err != nil {
		return failSSTable(err)
	}
	defer job.abort()
	if rs.dataFR == nil {
		rs.dataFR = newFrameReader(us, rs.cfg.Limits)
	} else {
		rs.dataFR.r, rs.dataFR.n, rs.dataFR.off = us, 0, 0
	}
	var d wire.Data
	var sinceReport int64
	for {
		b, err := rs.dataFR.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return failSSTable(err)
		}
		if _, err := wire.ParseData(b, rs.cfg.Limits, &d); err != nil {
			return failSSTable(fmt.Errorf("%w: %w", ErrProtocol, err))
		}
		if err := in.Accept(&d); err != nil {
			return failSSTable(err)
		}
		if err := job.write(&d); err != nil {
			return failSSTable(err)
		}
		n := int64(len(d.Payload))
		if err := rs.cfg.Inbound.Wait(ctx, len(d.Payload)); err != nil {
			return failSSTable(err)
		}
		rs.res.BytesReceived += n
		sinceReport += n
		if sinceReport >= 16<<20 {
			sinceReport = 0
			rs.progress(func(s *SessionStatus) { s.BytesDone = rs.res.BytesReceived })
		}
	}
	if err := in.Complete(); err != nil {
		return failSSTable(err)
	}
	partitions, err := job.finish()
	if err != nil {
		return failSSTable(err)
	}
	toc := job.desc.Filename("TOC.txt")
	rs.state.Installed[in.ID] = toc
	if err := rs.state.save(); err != nil {
		return err
	}
	rs.res.SSTables = append(rs.res.SSTables, Fetched{Path: job.desc.Prefix(), Kind: in.Kind.String(), SSTable: in.ID,
		Partitions: partitions, Bytes: int64(in.Received())})
	rs.progress(func(s *SessionStatus) { s.FilesDone++; s.BytesDone = rs.res.BytesReceived })
	rs.cfg.observeSSTable(Receiving, in.Kind.String(), int64(in.Received()), nil)
	return rs.send(rs.sm.Installed(in.ID, uint64(partitions)).Send...)
}
