package peerrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/tlsx"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// Handler answers one call: the decoded result (JSON-encoded into the response) or an error.
// An *Error keeps its code; any other error is CodeFailed.
type Handler func(ctx context.Context, caller tlsx.PeerIdentity, method string, body []byte) (any, error)

// Server serves peer calls on connections the stream server hands over.
type Server struct {
	Handler Handler
	Log     zerolog.Logger
	// MaxConnsPerPeer bounds the connections one caller (by certificate name) holds at once.
	// Default 32: an operation runs a few transfers at a time, each a call.
	MaxConnsPerPeer int
	// RequestTimeout bounds reading a request after its stream opened. Default 10s.
	RequestTimeout time.Duration
	// WriteTimeout bounds writing an answer. Default 30s.
	WriteTimeout time.Duration

	mu    sync.Mutex
	conns map[string]int
}

// Errorf makes an *Error with code.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// ServeConn serves calls on conn until the caller closes it or ctx ends; it closes conn.
func (s *Server) ServeConn(ctx context.Context, conn *quic.Conn, caller tlsx.PeerIdentity) {
	if !s.take(caller.Name) {
		conn.CloseWithError(1, "too many peer connections from "+caller.Name)
		return
	}
	defer s.give(caller.Name)
	// The caller closing the connection (a call is one connection) ends its calls.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(conn.Context(), cancel)()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		st, err := conn.AcceptStream(ctx)
		if err != nil {
			conn.CloseWithError(0, "")
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveStream(ctx, st, caller)
		}()
	}
}

func (s *Server) take(peer string) bool {
	limit := s.MaxConnsPerPeer
	if limit <= 0 {
		limit = 32
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		s.conns = map[string]int{}
	}
	if s.conns[peer] >= limit {
		return false
	}
	s.conns[peer]++
	return true
}

func (s *Server) give(peer string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[peer]--; s.conns[peer] <= 0 {
		delete(s.conns, peer)
	}
}

func (s *Server) serveStream(ctx context.Context, st *quic.Stream, caller tlsx.PeerIdentity) {
	defer st.Close()
	st.SetReadDeadline(time.Now().Add(or(s.RequestTimeout, 10*time.Second)))
	var resp Response
	b, err := readFrame(st, MaxRequest)
	var req Request
	if err == nil {
		req, err = DecodeRequest(b)
	}
	if err != nil {
		s.Log.Warn().Str("peer_name", caller.Name).Err(err).Msg("bad peer call")
		resp = Response{Code: CodeBadRequest, Error: err.Error()}
	} else {
		out, err := s.Handler(ctx, caller, req.Method, req.Body)
		resp = result(out, err)
	}
	buf, err := appendFrame(nil, resp)
	if err == nil && len(buf)-4 > MaxResponse {
		buf, err = appendFrame(nil, Response{Code: CodeFailed, Error: fmt.Sprintf("answer of %d bytes exceeds %d", len(buf)-4, MaxResponse)})
	}
	if err != nil {
		st.CancelWrite(1)
		return
	}
	st.SetWriteDeadline(time.Now().Add(or(s.WriteTimeout, 30*time.Second)))
	st.Write(buf)
}

func result(out any, err error) Response {
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return Response{Code: e.Code, Error: e.Msg}
		}
		return Response{Code: CodeFailed, Error: err.Error()}
	}
	body, err := jsonMarshal(out)
	if err != nil {
		return Response{Code: CodeFailed, Error: err.Error()}
	}
	return Response{Body: body}
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
