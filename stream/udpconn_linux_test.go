//go:build linux

package stream

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"golang.org/x/net/ipv4"
)

func listenLoopbackUDP(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBatchUDPReadBatch: datagrams arrive whole, with their sender's address (one shared
// *net.UDPAddr per sender), and a batch read after the first allocates nothing.
func TestBatchUDPReadBatch(t *testing.T) {
	recv := listenLoopbackUDP(t)
	w, ok := newBatchUDP(recv)
	if !ok {
		t.Fatal("no batch reader on linux")
	}
	b := w.(*batchUDP)
	send := listenLoopbackUDP(t)
	ms := make([]ipv4.Message, 4)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 2048)}
		ms[i].OOB = make([]byte, 128)
	}
	payload := []byte("sluice datagram")
	read := func() int {
		if _, err := send.WriteToUDP(payload, recv.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
		n, err := b.ReadBatch(ms, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := read(); n != 1 {
		t.Fatalf("read %d messages, want 1", n)
	}
	if got := ms[0].Buffers[0][:ms[0].N]; !bytes.Equal(got, payload) {
		t.Fatalf("payload %q, want %q", got, payload)
	}
	from, want := ms[0].Addr.(*net.UDPAddr), send.LocalAddr().(*net.UDPAddr)
	if !from.IP.Equal(want.IP) || from.Port != want.Port {
		t.Fatalf("from %v, want %v", from, want)
	}
	first := ms[0].Addr
	if allocs := testing.AllocsPerRun(100, func() { read() }); allocs != 0 {
		t.Errorf("ReadBatch: %v allocations per datagram, want 0", allocs)
	}
	if ms[0].Addr != first {
		t.Error("the same sender's address was allocated anew")
	}
	// Several datagrams queued: one call returns them all.
	for range 3 {
		if _, err := send.WriteToUDP(payload, recv.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	got := 0
	for got < 3 && time.Now().Before(deadline) {
		n, err := b.ReadBatch(ms, 0)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	if got != 3 {
		t.Fatalf("read %d datagrams, want 3", got)
	}
	// A read deadline ends a blocked read with a timeout, as quic.Transport's Close relies on.
	if err := recv.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := b.ReadBatch(ms, 0)
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
}

// TestBatchUDPWriteMsgUDP: the write path sends to IPv4 peers without allocating.
func TestBatchUDPWriteMsgUDP(t *testing.T) {
	w, _ := newBatchUDP(listenLoopbackUDP(t))
	b := w.(*batchUDP)
	peer := listenLoopbackUDP(t)
	to := peer.LocalAddr().(*net.UDPAddr)
	to16 := &net.UDPAddr{IP: to.IP.To16(), Port: to.Port}
	msg := []byte("ack")
	buf := make([]byte, 16)
	for _, addr := range []*net.UDPAddr{to, to16} {
		if allocs := testing.AllocsPerRun(50, func() {
			if _, _, err := b.WriteMsgUDP(msg, nil, addr); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("WriteMsgUDP to %v: %v allocations per packet, want 0", addr, allocs)
		}
		n, _, err := peer.ReadFromUDP(buf)
		if err != nil || !bytes.Equal(buf[:n], msg) {
			t.Fatalf("peer read %q, %v", buf[:n], err)
		}
	}
}

// TestDialQUICLowAlloc moves bytes over QUIC with both ends on batchUDP sockets (the
// server's through Serve's wrapping, the client's through dialQUIC) and checks that the
// client's socket is closed once the connection is.
func TestDialQUICLowAlloc(t *testing.T) {
	ca := newTestCA(t)
	udp := listenLoopbackUDP(t)
	tr := &quic.Transport{Conn: lowAllocUDP(udp)}
	defer tr.Close()
	conf := quicConfig(Config{HandshakeTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second})
	ln, err := tr.Listen(withALPN(ca.server(t)), conf)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := make([]byte, 8<<20)
	rand.Read(data)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		conn, err := ln.Accept(ctx)
		if err != nil {
			served <- err
			return
		}
		s, err := conn.OpenUniStreamSync(ctx)
		if err == nil {
			_, err = s.Write(data)
		}
		if err == nil {
			err = s.Close()
		}
		served <- err
		<-conn.Context().Done()
	}()
	conn, err := dialQUIC(ctx, udp.LocalAddr().String(), withALPN(ca.client(t, ca)), conf)
	if err != nil {
		t.Fatal(err)
	}
	s, err := conn.AcceptUniStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("received %d bytes differing from the %d sent", len(got), len(data))
	}
	conn.CloseWithError(0, "done")
	<-conn.Context().Done()
	// dialQUIC closes its socket after the connection: poll until the port is free to bind.
	local := conn.LocalAddr().(*net.UDPAddr)
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.ListenUDP("udp", &net.UDPAddr{Port: local.Port})
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dialer's socket on port %d is still open after the connection closed: %v", local.Port, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
