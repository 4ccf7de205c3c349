package stream

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/rs/zerolog"
)

// countingConn counts the UDP payload bytes a node sends: what a sender really put on the
// wire, QUIC framing and retransmissions included.
type countingConn struct {
	net.PacketConn
	sent *atomic.Int64
}

func (c countingConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(p, addr)
	c.sent.Add(int64(n))
	return n, err
}

// quic-go tunes the socket's buffers through these when the connection offers them.
func (c countingConn) SetReadBuffer(n int) error {
	return c.PacketConn.(*net.UDPConn).SetReadBuffer(n)
}

func (c countingConn) SetWriteBuffer(n int) error {
	return c.PacketConn.(*net.UDPConn).SetWriteBuffer(n)
}

func (c countingConn) SyscallConn() (syscall.RawConn, error) {
	return c.PacketConn.(*net.UDPConn).SyscallConn()
}

// node is a Server that a test can stop mid-session, as a node shutting down would.
type node struct {
	srv  *Server
	addr string
	sent atomic.Int64
	stop func()
}

// startNode serves cat on addr ("127.0.0.1:0" for any port) until stop or the test's end.
func startNode(t testing.TB, cfg Config, cat Catalog, tc *tls.Config, addr string) *node {
	t.Helper()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{srv: NewServer(cfg, cat, tc, zerolog.Nop()), addr: pc.LocalAddr().String()}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.srv.Serve(ctx, countingConn{pc, &n.sent})
	}()
	var once sync.Once
	n.stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			pc.Close()
		})
	}
	t.Cleanup(n.stop)
	return n
}
