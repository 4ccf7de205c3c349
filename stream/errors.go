package stream

import (
	"errors"
	"fmt"
	"os"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/wire"
)

var (
	// ErrProtocol reports a peer that broke the session protocol: an unexpected or
	// inconsistent message.
	ErrProtocol = errors.New("stream: protocol violation")
	// ErrManifest reports a Manifest that fails validation: hostile or inconsistent.
	ErrManifest = errors.New("stream: bad manifest")
	// ErrChecksum reports received bytes whose chunk CRC or digest does not match.
	ErrChecksum = errors.New("stream: checksum mismatch")
	// ErrRefused reports a request or sstable the peer declined.
	ErrRefused = errors.New("stream: refused")
	// ErrBusy reports a server already running Config.MaxSessions sessions.
	ErrBusy = errors.New("stream: too many sessions")
	// ErrUnsupported reports an sstable this build cannot receive, such as rows of a version
	// the sstable writer does not write (md, me).
	ErrUnsupported = errors.New("stream: unsupported")
	// ErrIdle reports a session whose peer sent no control message for Config.IdleTimeout.
	ErrIdle = errors.New("stream: session idle")
)

// SSTableError is the failure of one sstable of a session, naming the peer and the
// sender's sstable ID.
type SSTableError struct {
	Peer    string
	SSTable string
	Code    wire.Code
	Err     error
}

func (e *SSTableError) Error() string {
	return fmt.Sprintf("stream: sstable %s from %s (%v): %v", e.SSTable, e.Peer, e.Code, e.Err)
}

func (e *SSTableError) Unwrap() error { return e.Err }

// SessionError is the failure of a whole session with a peer.
type SessionError struct {
	Peer string
	Code wire.Code
	Err  error
}

func (e *SessionError) Error() string {
	return fmt.Sprintf("stream: session with %s (%v): %v", e.Peer, e.Code, e.Err)
}

func (e *SessionError) Unwrap() error { return e.Err }

// codeOf picks the wire code for a local error.
func codeOf(err error) wire.Code {
	var f *wire.Failure
	var ae *quic.ApplicationError
	switch {
	case errors.As(err, &f):
		return f.Code
	case errors.As(err, &ae) && ae.Remote && ae.ErrorCode != 0:
		// The peer closed the connection and said why (e.g. shutting down).
		return wire.Code(ae.ErrorCode)
	case errors.Is(err, ErrChecksum):
		return wire.CodeChecksum
	case errors.Is(err, ErrIdle), errors.Is(err, os.ErrDeadlineExceeded):
		return wire.CodeTimeout
	case errors.Is(err, ErrManifest), errors.Is(err, ErrProtocol):
		return wire.CodeProtocol
	case errors.Is(err, ErrRefused), errors.Is(err, ErrUnsupported), errors.Is(err, ErrBusy):
		return wire.CodeRefused
	}
	return wire.CodeInternal
}
