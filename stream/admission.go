package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/wire"
)

// Authorizer decides whether a verified peer may stream keyspace.table from this server; a
// non-nil error refuses the session with CodeUnauthorized and says why.
type Authorizer func(peer tlsx.PeerIdentity, keyspace, table string) error

// ProtocolHandler serves a connection that negotiated another ALPN protocol than wire.ALPN
// (the node's peer operations). It owns conn and returns when done with it. Only peers with a
// node certificate reach it.
type ProtocolHandler func(ctx context.Context, conn *quic.Conn, peer tlsx.PeerIdentity)

// Bounds on what one receiver may hold of a server.
const (
	// maxRequestFrame bounds a control frame until the StreamRequest has arrived: a Hello
	// and a request with MaxRanges ranges and a long resume list fit.
	maxRequestFrame = 8 << 20
	// maxSessionFrame bounds every later control frame a receiver sends (Received,
	// Installed, Failure, Complete), all small, so a session pins little memory.
	maxSessionFrame = 256 << 10
	// sessionQueue is how many decoded control messages wait for the sending goroutine.
	sessionQueue = 16
)

// perPeerDefault is the default of Config.MaxSessionsPerPeer: a quarter of the node-wide cap,
// at least one, so that one certificate holder leaves room for others.
func perPeerDefault(total int) int { return max(1, total/4) }

// identify reads the name and role of conn's verified peer certificate.
func identify(conn *quic.Conn) (tlsx.PeerIdentity, error) {
	return tlsx.IdentifyPeer(conn.ConnectionState().TLS.VerifiedChains)
}

// admit takes a session slot for peer: one of MaxSessions node-wide and one of
// MaxSessionsPerPeer for the certificate name. The returned function gives both back. A peer
// at its limit is admitted over it, provisionally: once its request is read (supersede) the
// session either replaces that peer's session of the same request, which a receiver killed
// and resuming left behind, or is refused.
func (s *Server) admit(peer string) (release func(), over bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	over = s.perPeer[peer] >= s.cfg.MaxSessionsPerPeer
	select {
	case s.sem <- struct{}{}:
	default:
		return nil, false, fmt.Errorf("%w: %d sessions running", ErrBusy, s.cfg.MaxSessions)
	}
	s.perPeer[peer]++
	return func() {
		<-s.sem
		s.mu.Lock()
		if s.perPeer[peer]--; s.perPeer[peer] == 0 {
			delete(s.perPeer, peer)
		}
		s.mu.Unlock()
	}, over, nil
}

// requestKey identifies what a session streams: the same keyspace, table and ranges.
func requestKey(req *wire.StreamRequest) string {
	return fmt.Sprintf("%s\x00%s\x00%x", req.Keyspace, req.Table, req.Ranges)
}

// supersede registers ss, whose request is read, among its peer's sessions. A session admitted
// over its peer's limit takes the place of that peer's session of the same request (closed at
// once: a receiver killed mid-fetch that resumes would otherwise wait for the dead session's
// idle timeout), or is refused with the per-peer limit. unregister undoes it.
func (s *Server) supersede(ss *sendSession, over bool) (unregister func(), err error) {
	key := requestKey(ss.sm.Request())
	s.mu.Lock()
	defer s.mu.Unlock()
	mine := s.active[ss.id.Name]
	if over {
		var victim *sendSession
		for other, k := range mine {
			if k == key && (victim == nil || other.started.Before(victim.started)) {
				victim = other
			}
		}
		if victim == nil {
			return nil, fmt.Errorf("%w: %s already holds %d sessions (the per-peer limit)", ErrBusy, ss.id.Name, s.perPeer[ss.id.Name]-1)
		}
		delete(mine, victim)
		victim.conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeShuttingDown), "superseded by a new session of the same request from "+ss.id.Name)
	}
	if mine == nil {
		mine = map[*sendSession]string{}
		s.active[ss.id.Name] = mine
	}
	mine[ss] = key
	return func() {
		s.mu.Lock()
		delete(s.active[ss.id.Name], ss)
		if len(s.active[ss.id.Name]) == 0 {
			delete(s.active, ss.id.Name)
		}
		s.mu.Unlock()
	}, nil
}

// writeDeadline gives the next write to w (a QUIC stream or TCP connection) d to finish: a
// receiver that stops reading (flow control never opens) fails the session after d instead
// of holding its slot forever.
func writeDeadline(w any, d time.Duration) {
	if dw, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		dw.SetWriteDeadline(time.Now().Add(d))
	}
}

// protocols are the ALPN names the server negotiates: the stream protocol first.
func (s *Server) protocols() []string {
	out := []string{wire.ALPN}
	for p := range s.cfg.Protocols {
		out = append(out, p)
	}
	return out
}

// checkPeer refuses a request for a name that is not a Cassandra identifier, a session whose
// Hello names another node than the certificate, and what the Authorizer refuses.
func (ss *sendSession) checkPeer(req *wire.StreamRequest) error {
	// Names become paths in the catalog: only Cassandra's identifiers get that far.
	if err := cqlname.CheckTable(req.Keyspace, req.Table); err != nil {
		return &wire.Failure{Code: wire.CodeProtocol, Reason: err.Error()}
	}
	if hello := ss.sm.PeerNode(); hello != ss.id.Name {
		return &wire.Failure{Code: wire.CodeUnauthorized,
			Reason: fmt.Sprintf("Hello names node %q but the certificate is %q", hello, ss.id.Name)}
	}
	if a := ss.srv.cfg.Authorize; a != nil {
		if err := a(ss.id, req.Keyspace, req.Table); err != nil {
			return &wire.Failure{Code: wire.CodeUnauthorized, Reason: err.Error()}
		}
	}
	return nil
}
