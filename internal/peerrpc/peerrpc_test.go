package peerrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/stream"
)

// echoLimits is the table of serveNode's methods.
var echoLimits = &Limits{Methods: []Method{
	{Name: "echo", MaxBody: MaxRequest, MaxAnswer: 1 << 20},
	{Name: "refuse", MaxBody: lightBody, MaxAnswer: 1 << 10},
	{Name: "fail", MaxBody: lightBody, MaxAnswer: 1 << 10},
}}

// serveNode runs a stream server named "n1" whose peer calls echo their caller and method.
func serveNode(t *testing.T) (dir, addr string) {
	t.Helper()
	dir, addr, _ = serve(t, echoLimits, func(ctx context.Context, caller tlsx.PeerIdentity, method string, body []byte) (any, error) {
		switch method {
		case "echo":
			return map[string]string{"caller": caller.Name, "body": string(body)}, nil
		case "refuse":
			return nil, Errorf(CodeConflict, "not now")
		case "fail":
			return nil, errors.New("disk on fire")
		}
		return nil, Errorf(CodeUnknown, "no %s", method)
	})
	return dir, addr
}

// serve runs a stream server named "n1" answering peer calls with h under lim; the nodes n2, n3
// and the client app have certificates in dir.
func serve(t *testing.T, lim *Limits, h Handler) (dir, addr string, srv *Server) {
	t.Helper()
	dir = t.TempDir()
	if err := tlsx.WriteCA(dir, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
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
	srv = &Server{Handler: h, Limits: lim, Log: zerolog.Nop()}
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
	return dir, pc.LocalAddr().String(), srv
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

// Heavy calls beyond their caller's slots, or beyond the memory budget, are refused at once
// with CodeBusy while the admitted ones run; an answer beyond its MaxAnswer is replaced by an
// error; every refusal is reported with its reason.
func TestHeavyCallsBeyondTheBudgetsAreBusyAtOnce(t *testing.T) {
	entered := make(chan string, 8)
	unblock := make(chan struct{})
	cost := func([]byte) (Cost, error) { return Cost{Answer: 10, Work: 40}, nil }
	lim := &Limits{HeavyPerPeer: 2, MemoryBudget: 100, Methods: []Method{
		{Name: "slow", MaxBody: 1 << 10, MaxAnswer: 1 << 10, Heavy: true, Check: cost},
		{Name: "chatty", MaxBody: 1 << 10, MaxAnswer: 10},
	}}
	dir, addr, srv := serve(t, lim, func(ctx context.Context, caller tlsx.PeerIdentity, method string, body []byte) (any, error) {
		if method == "chatty" {
			return strings.Repeat("x", 100), nil
		}
		entered <- caller.Name
		select {
		case <-unblock:
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	var mu sync.Mutex
	refusals := map[string]int{}
	srv.OnRefuse(func(method string, r Reason) {
		mu.Lock()
		refusals[method+" "+string(r)]++
		mu.Unlock()
	})
	n2, n3 := client(t, dir, "n2"), client(t, dir, "n3")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	results := make(chan error, 5)
	for range 5 {
		go func() { results <- n2.Call(ctx, addr, "n1", "slow", nil, nil) }()
	}
	for range 3 {
		if err := <-results; !IsBusy(err) || !strings.Contains(err.Error(), "HeavyPerPeer") {
			t.Fatalf("a third call of one caller: %v, want busy (HeavyPerPeer)", err)
		}
	}
	<-entered
	<-entered
	// n3 has slots, but 80 of the 100 bytes are reserved.
	if err := n3.Call(ctx, addr, "n1", "slow", nil, nil); !IsBusy(err) || !strings.Contains(err.Error(), "MemoryBudget") {
		t.Fatalf("a call beyond the memory budget: %v, want busy (MemoryBudget)", err)
	}
	close(unblock)
	for range 2 {
		if err := <-results; err != nil {
			t.Fatalf("an admitted call: %v", err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.MemoryInUse() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still reserved after every call ended", srv.MemoryInUse())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := n3.Call(ctx, addr, "n1", "slow", nil, nil); err != nil {
		t.Fatalf("n3 once the budget is free: %v", err)
	}
	var pe *Error
	if err := n2.Call(ctx, addr, "n1", "chatty", nil, nil); !errors.As(err, &pe) || pe.Code != CodeFailed || !strings.Contains(err.Error(), "MaxAnswer") {
		t.Fatalf("an answer beyond MaxAnswer: %v", err)
	}
	if err := n2.Call(ctx, addr, "n1", "nothing", nil, nil); !errors.As(err, &pe) || pe.Code != CodeUnknown {
		t.Fatalf("an unknown method: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"slow peer_busy": 3, "slow memory_busy": 1, "chatty answer": 1, " unknown_method": 1}
	if fmt.Sprint(refusals) != fmt.Sprint(want) {
		t.Fatalf("refusals %v, want %v", refusals, want)
	}
}

// A client reads no more of an answer than its method's MaxAnswer allows.
func TestAClientReadsNoMoreThanMaxAnswer(t *testing.T) {
	dir, addr, _ := serve(t, &Limits{Methods: []Method{{Name: "big", MaxBody: 1 << 10, MaxAnswer: 1 << 20}}},
		func(ctx context.Context, caller tlsx.PeerIdentity, method string, body []byte) (any, error) {
			return strings.Repeat("x", 100<<10), nil
		})
	c := client(t, dir, "n2")
	ctx := context.Background()
	if err := c.Call(ctx, addr, "n1", "big", nil, nil); err != nil {
		t.Fatal(err)
	}
	c.Limits = &Limits{Methods: []Method{{Name: "big", MaxBody: 1 << 10, MaxAnswer: 10 << 10}}}
	if err := c.Call(ctx, addr, "n1", "big", nil, nil); !errors.Is(err, ErrFrame) {
		t.Fatalf("an answer beyond the client's MaxAnswer: %v", err)
	}
}
