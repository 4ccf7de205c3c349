package fsx

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// loopback returns both ends of a TCP connection on 127.0.0.1.
func loopback(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// TestSendfileLoopback sends a file range over TCP; the receiver reads exactly those bytes and
// the file position stays put.
func TestSendfileLoopback(t *testing.T) {
	data := randomBytes(20, 5<<20+77)
	src := writeFile(t, t.TempDir(), "src", data)
	client, server := loopback(t)
	const off, n = 12345, 4<<20 + 3
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(server)
		got <- b
	}()
	k, err := Sendfile(context.Background(), client, src, off, n)
	if err != nil {
		t.Fatal(err)
	}
	if k != n {
		t.Fatalf("sent %d, want %d", k, n)
	}
	client.CloseWrite()
	assertBytes(t, <-got, data[off:off+n])
	if p := position(t, src); p != int64(len(data)) {
		t.Fatalf("source position %d moved", p)
	}
}

func TestSendfileShortSource(t *testing.T) {
	src := writeFile(t, t.TempDir(), "src", randomBytes(21, 1000))
	client, server := loopback(t)
	go io.Copy(io.Discard, server)
	k, err := Sendfile(context.Background(), client, src, 900, 200)
	if !errors.Is(err, io.ErrUnexpectedEOF) || k != 100 {
		t.Fatalf("sent %d, err %v; want 100 and io.ErrUnexpectedEOF", k, err)
	}
}

// TestSendfileCancel: a receiver that never reads fills the socket buffers; cancelling the
// context ends the blocked transfer with the context's error.
func TestSendfileCancel(t *testing.T) {
	src := writeFile(t, t.TempDir(), "src", nil)
	if err := src.Truncate(64 << 20); err != nil { // sparse: more than the socket buffers hold
		t.Fatal(err)
	}
	client, _ := loopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Sendfile(ctx, client, src, 0, 64<<20)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sendfile did not return after cancel")
	}
}

// TestSpliceToFileLoopback receives from TCP into a file at an offset, leaving the bytes
// around it and the file position alone.
func TestSpliceToFileLoopback(t *testing.T) {
	data := randomBytes(23, 3<<20+99)
	base := randomBytes(24, 1<<20)
	dst := writeFile(t, t.TempDir(), "dst", base)
	client, server := loopback(t)
	go func() {
		client.Write(data)
		client.Write([]byte("not part of the range"))
		client.CloseWrite()
	}()
	const dstOff = 1<<20 - 4097
	k, err := SpliceToFile(context.Background(), dst, dstOff, server, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if k != int64(len(data)) {
		t.Fatalf("received %d, want %d", k, len(data))
	}
	assertBytes(t, contents(t, dst), overlay(base, dstOff, data))
	if p := position(t, dst); p != int64(len(base)) {
		t.Fatalf("destination position %d moved", p)
	}
	rest, _ := io.ReadAll(server)
	if string(rest) != "not part of the range" {
		t.Fatalf("splice read past its range: left %q", rest)
	}
}

func TestSpliceToFilePipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data := randomBytes(25, 1<<20+5)
	go func() {
		w.Write(data)
		w.Close()
	}()
	dst := writeFile(t, t.TempDir(), "dst", nil)
	k, err := SpliceToFile(context.Background(), dst, 3, r, int64(len(data)))
	if err != nil || k != int64(len(data)) {
		t.Fatalf("received %d, err %v", k, err)
	}
	assertBytes(t, contents(t, dst), overlay(nil, 3, data))
}

func TestSpliceToFileEarlyClose(t *testing.T) {
	dst := writeFile(t, t.TempDir(), "dst", nil)
	client, server := loopback(t)
	go func() {
		client.Write(make([]byte, 1000))
		client.Close()
	}()
	k, err := SpliceToFile(context.Background(), dst, 0, server, 5000)
	if !errors.Is(err, io.ErrUnexpectedEOF) || k != 1000 {
		t.Fatalf("received %d, err %v; want 1000 and io.ErrUnexpectedEOF", k, err)
	}
	var re *RangeError
	if !errors.As(err, &re) || re.Dst != dst.Name() {
		t.Fatalf("error %v does not name the destination", err)
	}
}

func TestSpliceToFileCancel(t *testing.T) {
	dst := writeFile(t, t.TempDir(), "dst", nil)
	_, server := loopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := SpliceToFile(ctx, dst, 0, server, 100)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SpliceToFile did not return after cancel")
	}
}
