package stream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/wire"
)

// The receiving session, by concern: this file runs the control stream (recvSession: the
// Receiver stepped with each control message, and what it decided carried out);
// transfer.go receives one sstable over the data plane (inbound.go) into its installer
// (installer.go); commit.go commits the sstables received whole in shared batches;
// space.go admits the session against its directory's free space; resume.go keeps what a
// later Fetch resumes from.

// recvSession is one receiving session: Fetch's, on Fetch's goroutine.
type recvSession struct {
	ctx        context.Context // the session's: what its installs' fills stop with
	cfg        Config
	conn       *quic.Conn
	peer       string
	dir        string
	state      *resumeState // the resume record and kept prefixes (resume.go)
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
	failedIDs    map[string]*SSTableError
	// sealed are the sstables received whole and waiting for a shared commit (commit.go),
	// sealedBytes their bytes; committing is the batch being committed.
	sealed      []*sealed
	sealedBytes int64
	committing  *commitRun
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
		m, err := fr.message()
		if err != nil {
			break
		}
		if f, ok := m.(*wire.Failure); ok && rs.failedIDs[f.SSTableID] != nil {
			// Why the sender failed an sstable whose data stream it reset: the reset came first.
			rs.senderFailed(f)
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
		rs.senderFailed(m)
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
	if _, seen := rs.failedIDs[id]; id == "" || seen {
		return
	}
	if rs.failedIDs == nil {
		rs.failedIDs = map[string]*SSTableError{}
	}
	e := &SSTableError{Peer: rs.peer, SSTable: id, Code: code, Err: err}
	rs.failedIDs[id] = e
	rs.res.Failed = append(rs.res.Failed, e)
}

// senderFailed records the sender's Failure of an sstable. When this side failed it already
// (the sender reset its data stream, which arrives before the Failure on the control stream
// does), the sender's reason joins that error: it says what went wrong (the file it could not
// read).
func (rs *recvSession) senderFailed(m *wire.Failure) {
	why := ErrRefused
	if m.Code == wire.CodeChecksum {
		why = ErrChecksum // the sender found its own copy damaged
	}
	err := fmt.Errorf("%w: sender: %s", why, m.Reason)
	if e := rs.failedIDs[m.SSTableID]; e != nil {
		e.Err = fmt.Errorf("%w; %w", e.Err, err)
		return
	}
	rs.failed(m.SSTableID, m.Code, err)
}

// peerReasonWait bounds how long a session whose TCP data connection broke waits for the
// sender's QUIC close, which says why (it ends the session from its side: the two
// connections' ends arrive in either order).
const peerReasonWait = time.Second

// peerClose returns the sender's close of the connection, which says why it ended the
// session, when err, the session's error, does not already carry it; nil when the sender did
// not close it.
func (rs *recvSession) peerClose(err error) error {
	var ae *quic.ApplicationError
	if errors.As(err, &ae) {
		return nil
	}
	if rs.tcp != nil && rs.tcp.cut {
		t := time.NewTimer(min(peerReasonWait, rs.cfg.HandshakeTimeout))
		select {
		case <-rs.conn.Context().Done():
		case <-t.C:
		}
		t.Stop()
	}
	if cause := context.Cause(rs.conn.Context()); errors.As(cause, &ae) && ae.Remote {
		return cause
	}
	return nil
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
