package peerrpc

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/internal/lib/tlsx"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// Error is a call the peer refused or that failed there; Peer and Method are set by Call.
type Error struct {
	Peer, Method string
	Code         Code
	Msg          string
}

func (e *Error) Error() string {
	if e.Peer == "" {
		return e.Msg
	}
	return fmt.Sprintf("peer %s: %s: %s (%s)", e.Peer, e.Method, e.Msg, e.Code)
}

// Client calls other nodes with this node's identity.
type Client struct {
	ID *tlsx.Identity
	// HandshakeTimeout bounds the QUIC handshake; IdleTimeout and KeepAlive keep a long call
	// (a fetch may run for hours) alive and detect a dead peer. Defaults 10s, 30s, 10s.
	HandshakeTimeout, IdleTimeout, KeepAlive time.Duration
	// Limits is the table the client obeys, the servers' own: a request body beyond its
	// method's MaxBody is not sent, and no more than its MaxAnswer (and room for an error) is
	// read back. nil for the default table.
	Limits *Limits
}

// answerSlack is what a client reads beyond a method's MaxAnswer: the envelope, or an error
// (its message truncated to maxErrorMsg, which JSON escaping may grow sixfold).
const answerSlack = 8 << 10

// TLSConfig is the client configuration that proves the server at addr is node name: its
// certificate chains to the cluster CA, is for name and carries the node role. The host of
// addr must be in the certificate too, as for any TLS server.
func TLSConfig(id *tlsx.Identity, addr, name string) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("peer address %q: %w", addr, err)
	}
	c := id.ClientConfig(host)
	c.NextProtos = []string{ALPN}
	c.VerifyConnection = func(cs tls.ConnectionState) error { return VerifyNode(cs, name) }
	return c, nil
}

// VerifyNode checks that a verified TLS peer is node name.
func VerifyNode(cs tls.ConnectionState, name string) error {
	got, err := tlsx.IdentifyPeer(cs.VerifiedChains)
	if err != nil {
		return err
	}
	if got.Name != name {
		return fmt.Errorf("%w: certificate of %q, expected node %q", tlsx.ErrWrongName, got.Name, name)
	}
	if got.Role != tlsx.RoleNode {
		return fmt.Errorf("%w: %q holds a %s certificate, not a node's", tlsx.ErrBadCertificate, name, got.Role)
	}
	return nil
}

// Call asks node name at addr (its stream address) to run method with req and decodes the
// answer into out (which may be nil). A refusal is an *Error.
func (c *Client) Call(ctx context.Context, addr, name, method string, req, out any) error {
	var body json.RawMessage
	var err error
	if req != nil {
		if body, err = json.Marshal(req); err != nil {
			return err
		}
	}
	maxAnswer := MaxResponse
	if m, ok := c.Limits.Lookup(method); ok {
		if len(body) > m.MaxBody {
			return fmt.Errorf("peerrpc: %s: body of %d bytes exceeds its MaxBody of %d", method, len(body), m.MaxBody)
		}
		maxAnswer = min(maxAnswer, m.MaxAnswer+answerSlack)
	}
	tc, err := TLSConfig(c.ID, addr, name)
	if err != nil {
		return err
	}
	qc := &quic.Config{HandshakeIdleTimeout: or(c.HandshakeTimeout, 10*time.Second),
		MaxIdleTimeout: or(c.IdleTimeout, 30*time.Second), KeepAlivePeriod: or(c.KeepAlive, 10*time.Second)}
	conn, err := quic.DialAddr(ctx, addr, tc, qc)
	if err != nil {
		return fmt.Errorf("peer %s at %s: %w", name, addr, err)
	}
	defer conn.CloseWithError(0, "")
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return fmt.Errorf("peer %s at %s: %w", name, addr, err)
	}
	// A cancelled ctx ends the call: the server sees the connection close and stops.
	defer context.AfterFunc(ctx, func() { conn.CloseWithError(0, "call cancelled") })()
	buf, err := appendFrame(nil, Request{Method: method, Body: body})
	if err != nil {
		return err
	}
	if len(buf)-4 > MaxRequest {
		return fmt.Errorf("peerrpc: %s request of %d bytes exceeds %d", method, len(buf)-4, MaxRequest)
	}
	if _, err := st.Write(buf); err != nil {
		return callErr(ctx, name, method, err)
	}
	st.Close() // the request is complete; the answer comes back on the same stream
	b, err := readFrame(st, maxAnswer)
	if err != nil {
		return callErr(ctx, name, method, err)
	}
	var resp Response
	if err := json.Unmarshal(b, &resp); err != nil {
		return fmt.Errorf("peer %s: %s: bad answer: %w", name, method, err)
	}
	if resp.Error != "" || resp.Code != "" {
		return &Error{Peer: name, Method: method, Code: resp.Code, Msg: resp.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("peer %s: %s: bad answer: %w", name, method, err)
	}
	return nil
}

func callErr(ctx context.Context, name, method string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("peer %s: %s: %w", name, method, context.Cause(ctx))
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("peer %s: %s: %w", name, method, err)
}
