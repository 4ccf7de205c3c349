package peerrpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/lib/tlsx"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// Handler answers one call: the decoded result (JSON-encoded into the response) or an error.
// An *Error keeps its code; any other error is CodeFailed.
type Handler func(ctx context.Context, caller tlsx.PeerIdentity, method string, body []byte) (any, error)

// Server serves peer calls on connections the stream server hands over. Every call is held
// to Limits before Handler sees it (see the package documentation); Handler only routes and
// answers.
type Server struct {
	Handler Handler
	Log     zerolog.Logger
	// Limits is the table of methods and budgets; nil for DefaultMethods and the default
	// budgets. It must not change once the server serves.
	Limits *Limits
	// MaxConnsPerPeer bounds the connections one caller (by certificate name) holds at once.
	// Default 32: an operation runs a few transfers at a time, each a call.
	MaxConnsPerPeer int
	// RequestTimeout bounds reading a request after its stream opened. Default 10s.
	RequestTimeout time.Duration
	// WriteTimeout bounds writing an answer. Default 30s.
	WriteTimeout time.Duration

	once     sync.Once
	conns    *Slots
	gate     *gate
	onRefuse atomic.Pointer[func(method string, reason Reason)]
}

// Errorf makes an *Error with code.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func (s *Server) init() {
	s.once.Do(func() {
		limit := s.MaxConnsPerPeer
		if limit <= 0 {
			limit = 32
		}
		s.conns = NewSlots(limit)
		s.gate = newGate(s.Limits)
	})
}

// OnRefuse sets the function told of every call the limits refuse, with the method's name (""
// for a method not in the table) and the reason; it must not block. It may be set while the
// server serves; the last one set is told.
func (s *Server) OnRefuse(fn func(method string, reason Reason)) { s.onRefuse.Store(&fn) }

// MemoryInUse is the bytes heavy calls hold reserved from the memory budget now.
func (s *Server) MemoryInUse() int64 {
	s.init()
	return s.gate.budget.Used()
}

// ServeConn serves calls on conn until the caller closes it or ctx ends; it closes conn.
func (s *Server) ServeConn(ctx context.Context, conn *quic.Conn, caller tlsx.PeerIdentity) {
	s.init()
	if !s.conns.Take(caller.Name) {
		conn.CloseWithError(1, "too many peer connections from "+caller.Name)
		return
	}
	defer s.conns.Give(caller.Name)
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

// serveStream answers one call: the request is read (at most MaxRequest), held to the limits
// (a heavy call keeps its slot and reservation until its answer is written), handled, and its
// answer held to the method's MaxAnswer.
func (s *Server) serveStream(ctx context.Context, st *quic.Stream, caller tlsx.PeerIdentity) {
	defer st.Close()
	st.SetReadDeadline(time.Now().Add(or(s.RequestTimeout, 10*time.Second)))
	b, err := readFrame(st, MaxRequest)
	var req Request
	if err == nil {
		req, err = DecodeRequest(b)
	}
	if err != nil {
		s.Log.Warn().Str("peer_name", caller.Name).Err(err).Msg("bad peer call")
		s.write(st, nil, Response{Code: CodeBadRequest, Error: err.Error()})
		return
	}
	m, release, reason, rerr := s.gate.admit(caller.Name, req.Method, req.Body)
	if rerr != nil {
		s.refused(caller, req.Method, reason, rerr)
		s.write(st, nil, Response{Code: rerr.Code, Error: rerr.Msg})
		return
	}
	defer release()
	out, err := s.Handler(ctx, caller, req.Method, req.Body)
	if err != nil {
		s.write(st, nil, errorResponse(err))
		return
	}
	body, err := encodeBody(out)
	if err != nil {
		s.write(st, nil, errorResponse(err))
		return
	}
	if len(body) > m.MaxAnswer || len(body)+len(bodyHead)+len(bodyTail) > MaxResponse {
		rerr := Errorf(CodeFailed, "%s: answer of %d bytes exceeds its MaxAnswer of %d", req.Method, len(body), m.MaxAnswer)
		s.refused(caller, req.Method, ReasonAnswer, rerr)
		s.write(st, nil, Response{Code: rerr.Code, Error: rerr.Msg})
		return
	}
	s.write(st, body, Response{})
}

// refused logs a call the limits refused and tells OnRefuse's function.
func (s *Server) refused(caller tlsx.PeerIdentity, method string, reason Reason, err *Error) {
	if _, ok := s.gate.lim.Lookup(method); !ok {
		method = ""
	}
	s.Log.Warn().Str("peer_name", caller.Name).Str("method", method).Str("reason", string(reason)).
		Str("code", string(err.Code)).Msg(err.Msg)
	if fn := s.onRefuse.Load(); fn != nil {
		(*fn)(method, reason)
	}
}

// The envelope of a successful answer around its body, written in pieces so that a large
// body is not copied into a frame.
const (
	bodyHead = `{"body":`
	bodyTail = `}`
)

// write writes a response frame: body in its envelope when resp is empty, else resp.
func (s *Server) write(st *quic.Stream, body []byte, resp Response) {
	var head []byte
	if resp.Code == "" && resp.Error == "" {
		head = binary.BigEndian.AppendUint32(nil, uint32(len(bodyHead)+len(body)+len(bodyTail)))
		head = append(head, bodyHead...)
	} else {
		resp.Error = truncate(resp.Error, maxErrorMsg)
		var err error
		if head, err = appendFrame(nil, resp); err != nil {
			st.CancelWrite(1)
			return
		}
	}
	st.SetWriteDeadline(time.Now().Add(or(s.WriteTimeout, 30*time.Second)))
	if _, err := st.Write(head); err != nil || body == nil {
		return
	}
	if _, err := st.Write(body); err != nil {
		return
	}
	st.Write([]byte(bodyTail))
}

// Raw is an answer a handler encoded itself (one JSON value, into a buffer it sized from the
// request); the server sends it as it is, without encoding it again.
type Raw []byte

// encodeBody is a handler's answer in JSON.
func encodeBody(out any) ([]byte, error) {
	if raw, ok := out.(Raw); ok {
		if len(raw) == 0 {
			return []byte("null"), nil
		}
		return raw, nil
	}
	return jsonMarshal(out)
}

// maxErrorMsg bounds an error's message in a response: a refusal may quote its request.
const maxErrorMsg = 1 << 10

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func errorResponse(err error) Response {
	var e *Error
	if errors.As(err, &e) {
		return Response{Code: e.Code, Error: e.Msg}
	}
	return Response{Code: CodeFailed, Error: err.Error()}
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
