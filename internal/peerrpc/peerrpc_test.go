package peerrpc

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/tlsx"
	"github.com/sluicedb/sluice/stream"
)

// serveNode runs a stream server named "n1" whose peer calls echo their caller and method.
func serveNode(t *testing.T) (dir, addr string) {
	t.Helper()
	dir = t.TempDir()
	if err := tlsx.WriteCA(dir, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2"} {
		if err := tlsx.WriteNode(dir, n, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := tlsx.WriteClient(dir, "app", false); err != nil {
		t.Fatal(err)
	}
	id, err := tlsx.Load(dir, "n1")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Handler: func(ctx context.Context, caller tlsx.PeerIdentity, method string, body []byte) (any, error) {
		switch method {
		case "echo":
			return map[string]string{"caller": caller.Name, "body": string(body)}, nil
		case "refuse":
			return nil, Errorf(CodeConflict, "not now")
		case "fail":
			return nil, errors.New("disk on fire")
		}
		return nil, Errorf(CodeUnknown, "no %s", method)
	}, Log: zerolog.Nop()}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ss := stream.NewServer(stream.Config{Node: "n1", Protocols: map[string]stream.ProtocolHandler{ALPN: srv.ServeConn}},
		nil, id.ServerConfig(), zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ss.Serve(ctx, pc); close(done) }()
	t.Cleanup(func() { cancel(); <-done; pc.Close() })
	return dir, pc.LocalAddr().String()
}

func client(t *testing.T, dir, name string) *Client {
	id, err := tlsx.Load(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{ID: id, HandshakeTimeout: 5 * time.Second}
}

// A call reaches the node it names, with the caller's proven name; refusals keep their code.
func TestCallsNameTheirEndsAndKeepTheirCodes(t *testing.T) {
	dir, addr := serveNode(t)
	c := client(t, dir, "n2")
	ctx := context.Background()
	var got map[string]string
	if err := c.Call(ctx, addr, "n1", "echo", map[string]int{"x": 1}, &got); err != nil || got["caller"] != "n2" || got["body"] != `{"x":1}` {
		t.Fatalf("echo: %v %v", got, err)
	}
	var pe *Error
	for method, code := range map[string]Code{"refuse": CodeConflict, "fail": CodeFailed, "nothing": CodeUnknown, "BAD": CodeBadRequest} {
		if err := c.Call(ctx, addr, "n1", method, nil, nil); !errors.As(err, &pe) || pe.Code != code {
			t.Errorf("%s: %v, want %s", method, err, code)
		}
	}
	// The server is n1: calling it as n2 fails the handshake.
	if err := c.Call(ctx, addr, "n2", "echo", nil, nil); !errors.Is(err, tlsx.ErrWrongName) {
		t.Errorf("calling n1 as n2: %v", err)
	}
	// A request over the limit is refused before it is sent.
	if err := c.Call(ctx, addr, "n1", "echo", strings.Repeat("x", MaxRequest), nil); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("oversized request: %v", err)
	}
	// A client certificate gets no peer calls.
	if err := client(t, dir, "app").Call(ctx, addr, "n1", "echo", nil, nil); err == nil {
		t.Error("a client certificate made a peer call")
	}
}
