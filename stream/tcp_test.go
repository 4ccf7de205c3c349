package stream

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

var tcpConfig = Config{Transport: TransportTCP}

// Partial and entire fetches over each TCP data plane (plaintext and TLS) verify and hold
// exactly the parents' partitions, for compressed and uncompressed BIG and BTI; the bulk
// bytes do not cross the QUIC connection.
func TestFetchOverTCPDataPlanes(t *testing.T) {
	for _, cfg := range []Config{tcpConfig, tlsConfig} {
		t.Run(string(cfg.Transport), func(t *testing.T) { testFetchOverDataPlane(t, cfg) })
	}
}

func testFetchOverDataPlane(t *testing.T, cfg Config) {
	ca := newTestCA(t)
	root := t.TempDir()
	tables := map[string]genSpec{
		"big_lz4":  {version: "oa", compression: "lz4", seeds: []uint64{1, 2}},
		"bti_none": {version: "da", compression: "none", seeds: []uint64{5}},
		"bti_lz4":  {version: "da", compression: "lz4", seeds: []uint64{7}},
		"big_none": {version: "nb", compression: "none", seeds: []uint64{6}},
	}
	n := startNode(t, cfg, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
	for name, spec := range tables {
		parents := genTable(t, root, name, spec)
		for _, rs := range []string{"(-5000000000000000000,6000000000000000000]", "(0,0]"} {
			t.Run(name+rs, func(t *testing.T) {
				ranges, _ := token.ParseRanges(token.Murmur3, rs)
				before := n.sent.Load()
				res, err := Fetch(context.Background(), cfg, ca.client(t, ca),
					FetchRequest{Peer: n.addr, Keyspace: "ks", Table: name, Ranges: ranges, Dir: t.TempDir()}, nil)
				if err != nil {
					t.Fatal(err)
				}
				checkFetched(t, parents, ranges, res)
				udp := n.sent.Load() - before
				if udp > res.BytesReceived/4 {
					t.Errorf("%d bytes received, but the sender sent %d UDP bytes: the data went over QUIC", res.BytesReceived, udp)
				}
				t.Logf("%d sstables, %d bytes over %s, %d UDP bytes sent", len(res.SSTables), res.BytesReceived, cfg.Transport, udp)
			})
		}
	}
}

// One end on quic and the other on tcp stream over QUIC: TCP needs both to ask for it.
func TestFetchTCPNeedsBothEnds(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{3}, partitions: 60})
	ranges, _ := token.ParseRanges(token.Murmur3, "(0,0]")
	for _, tc := range []struct{ name, server, client string }{
		{"tcp server", TransportTCP, TransportQUIC},
		{"tcp client", TransportQUIC, TransportTCP},
	} {
		n := startNode(t, Config{Transport: tc.server}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
		res, err := Fetch(context.Background(), Config{Transport: tc.client}, ca.client(t, ca),
			FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		checkFetched(t, parents, ranges, res)
		if n.sent.Load() < res.BytesReceived {
			t.Errorf("%s: %d bytes received, %d UDP bytes sent: not over QUIC", tc.name, res.BytesReceived, n.sent.Load())
		}
	}
}

// A corrupted chunk fails its sstable over TCP and TLS as over QUIC, nothing of it is visible, and
// the session goes on to install the next sstable from the same connection.
func TestFetchOverTCPCorruptChunk(t *testing.T) {
	for _, tr := range []string{TransportTCP, TransportTLS} {
		t.Run(tr, func(t *testing.T) {
			ca := newTestCA(t)
			root := t.TempDir()
			prefixes := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{9, 10}, partitions: 400})
			data := prefixes[0] + "-Data.db"
			b, err := os.ReadFile(data)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/3] ^= 0x40
			if err := os.WriteFile(data, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, addr := testServer(t, Config{Transport: tr, FrameSize: 16 << 10}, dirCatalog{root}, ca.server(t))
			for _, spec := range []string{"(0,0]", "(-9000000000000000000,9000000000000000000]"} {
				ranges, _ := token.ParseRanges(token.Murmur3, spec)
				dir := t.TempDir()
				res, err := Fetch(context.Background(), Config{Transport: tr}, ca.client(t, ca),
					FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}, nil)
				var se *SSTableError
				if !errors.Is(err, ErrChecksum) || !errors.As(err, &se) || se.Code != wire.CodeChecksum {
					t.Fatalf("%s: err = %v, want one sstable's checksum error", spec, err)
				}
				if res == nil || len(res.SSTables) != 1 || res.SSTables[0].SSTable == se.SSTable {
					t.Fatalf("%s: installed %+v, want the intact sstable only", spec, res)
				}
				checkNothingHalfInstalled(t, dir, res.SSTables)
				if tmp, _ := filepath.Glob(filepath.Join(dir, ".sluice-tmp-*")); len(tmp) != 0 {
					t.Errorf("%s: temporaries left: %v", spec, tmp)
				}
				checkFetched(t, prefixes[1:], ranges, &FetchResult{SSTables: res.SSTables})
			}
		})
	}
}

// A Fetch cancelled in the middle of an sstable over TCP or TLS leaves nothing visible,
// keeps the verified prefix, and a resume over the same plane completes from it.
func TestFetchOverTCPCancelMidStream(t *testing.T) {
	for _, tr := range []string{TransportTCP, TransportTLS} {
		t.Run(tr, func(t *testing.T) {
			ca := newTestCA(t)
			root := t.TempDir()
			parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{31}, partitions: bigPartitions})
			srv, addr := testServer(t, Config{Transport: tr, FrameSize: 64 << 10}, dirCatalog{root}, ca.server(t))
			ranges, _ := token.ParseRanges(token.Murmur3, "(-8000000000000000000,8000000000000000000]")
			dir := t.TempDir()
			req := FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}
			srv.SetThroughput(8<<20, 0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res, err := Fetch(ctx, Config{Transport: tr}, ca.client(t, ca), req, func(st SessionStatus) {
				if st.BytesDone >= 3<<20 {
					cancel()
				}
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled fetch: %v", err)
			}
			if len(res.SSTables) != 0 || len(visible(t, dir)) != 0 {
				t.Fatalf("visible after a cancelled fetch: %v (%+v)", visible(t, dir), res.SSTables)
			}
			st := readState(t, req)
			if st.Partial == nil || st.Partial.VerifiedChunks == 0 || st.Partial.Bytes < 1<<20 {
				t.Fatalf("resume record after the cancel: %+v", st.Partial)
			}
			srv.SetThroughput(0, 0)
			req.Resume = true
			res, err = Fetch(context.Background(), Config{Transport: tr}, ca.client(t, ca), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkFetched(t, parents, ranges, res)
			if l := leftovers(t, dir); len(l) != 0 {
				t.Errorf("left behind: %v", l)
			}
		})
	}
}

// The data listener hands a connection to a session only for an outstanding token, once,
// before its deadline; any other connection is closed without a byte written to it.
func TestTCPPlaneAdmitsOnlyOutstandingTokens(t *testing.T) {
	p, err := listenTCP(Config{TCPAddr: "127.0.0.1:0", HandshakeTimeout: time.Second}, nil, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	go p.serve()
	defer p.close()
	o, err := p.offer()
	if err != nil {
		t.Fatal(err)
	}
	dial := func(tok []byte) net.Conn {
		c, err := net.Dial("tcp", p.advertised())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(tok); err != nil {
			t.Fatal(err)
		}
		return c
	}
	refused := func(name string, c net.Conn) {
		t.Helper()
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := io.Copy(io.Discard, c)
		if n != 0 || (err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err)) {
			t.Errorf("%s: read %d bytes, %v; want a closed connection and nothing", name, n, err)
		}
		select {
		case <-o.conn:
			t.Errorf("%s: handed to the session", name)
		default:
		}
	}
	wrong := o.token
	wrong[31] ^= 1
	refused("wrong token", dial(wrong[:]))
	refused("short token", dial(o.token[:31])) // then silence until the deadline

	if o, err = p.offer(); err != nil {
		t.Fatal(err)
	}
	good := dial(o.token[:])
	defer good.Close()
	select {
	case c := <-o.conn:
		defer c.close()
		c.c.Write([]byte("data"))
		b := make([]byte, 4)
		if _, err := io.ReadFull(good, b); err != nil || string(b) != "data" {
			t.Errorf("the session's connection: %q %v", b, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the valid token's connection never reached the session")
	}
	refused("token used twice", dial(o.token[:]))

	late, err := p.offer()
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	late.deadline = time.Now().Add(-time.Second)
	p.mu.Unlock()
	o = late
	refused("expired token", dial(late.token[:]))
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne)
}

// A rogue connection to a real server's data listener during a session gets nothing, and
// the session completes.
func TestTCPRogueConnectionGetsNothing(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{4}, partitions: 60})
	srv, addr := testServer(t, tcpConfig, dirCatalog{root}, ca.server(t))
	ta, err := srv.TCPAddr(context.Background())
	if err != nil || ta == nil {
		t.Fatalf("TCPAddr: %v %v", ta, err)
	}
	var tok [32]byte
	rand.Read(tok[:])
	rogue, err := net.Dial("tcp", ta.String())
	if err != nil {
		t.Fatal(err)
	}
	defer rogue.Close()
	rogue.Write(tok[:])
	ranges, _ := token.ParseRanges(token.Murmur3, "(0,0]")
	res, err := Fetch(context.Background(), tcpConfig, ca.client(t, ca),
		FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, parents, ranges, res)
	rogue.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(rogue); len(got) != 0 || (err != nil && !isReset(err)) {
		t.Errorf("rogue connection read %d bytes, %v", len(got), err)
	}
}

func TestDataAddr(t *testing.T) {
	for _, tc := range []struct{ offered, peer, want string }{
		{"10.0.0.1:7400", "10.0.0.1:9", "10.0.0.1:7400"},
		{"[::ffff:10.0.0.1]:7400", "10.0.0.1:9", "[::ffff:10.0.0.1]:7400"},
		{"0.0.0.0:7400", "10.0.0.1:9", "10.0.0.1:7400"},
		{"[::]:7400", "[fe80::1]:9", "[fe80::1]:7400"},
		{":7400", "node1:9", "node1:7400"},
	} {
		if got, err := dataAddr(tc.offered, tc.peer); err != nil || got != tc.want {
			t.Errorf("dataAddr(%q, %q) = %q, %v; want %q", tc.offered, tc.peer, got, err, tc.want)
		}
	}
	if _, err := dataAddr("no port", "10.0.0.1:9"); !errors.Is(err, ErrProtocol) {
		t.Errorf("an address without a port: %v", err)
	}
	// A sender may not point the receiver at another host: it would make the receiver dial
	// (and write a token to) any address it can reach.
	for _, offered := range []string{"10.0.0.7:7400", "127.0.0.1:22", "node2:7400"} {
		if got, err := dataAddr(offered, "10.0.0.1:9"); !errors.Is(err, ErrProtocol) {
			t.Errorf("dataAddr(%q) off the peer's host = %q, %v; want ErrProtocol", offered, got, err)
		}
	}
}

// The receiver takes a TCPDataPlane only when it asked for one, once, before Prepare.
func TestReceiverTCPDataPlane(t *testing.T) {
	dp := &wire.TCPDataPlane{Addr: "127.0.0.1:1"}
	start := func(cfg Config) *Receiver {
		r := NewReceiver(cfg, wire.StreamRequest{Operation: wire.OpFetch, Keyspace: "ks", Table: "t"})
		h := r.Start()[0].(*wire.Hello)
		if offered := slices.Contains(h.Features, featureTCPData); offered != (cfg.Transport == TransportTCP) {
			t.Errorf("transport %q: Hello features %v", cfg.Transport, h.Features)
		}
		if _, err := r.Step(&wire.HelloAck{Version: wire.MaxVersion}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if _, err := start(Config{}).Step(dp); !errors.Is(err, ErrProtocol) {
		t.Errorf("quic receiver took a TCPDataPlane: %v", err)
	}
	r := start(tcpConfig)
	st, err := r.Step(dp)
	if err != nil || st.DataPlane != dp {
		t.Fatalf("tcp receiver: %+v %v", st, err)
	}
	if _, err := r.Step(dp); !errors.Is(err, ErrProtocol) {
		t.Errorf("a second TCPDataPlane: %v", err)
	}
	r = start(tcpConfig)
	if _, err := r.Step(&wire.TCPDataPlane{}); !errors.Is(err, ErrProtocol) {
		t.Errorf("a TCPDataPlane without an address: %v", err)
	}
}

// The data plane's header reader turns the peer's malformed headers into protocol errors
// and still reports a partial header as io.EOF (wire's tests cover the codec itself).
func TestParseDataHeaderErrors(t *testing.T) {
	d := wire.Data{SSTableID: "a", Stream: wire.StreamRuns}
	frame := wire.AppendDataHeader(nil, &d, 10)
	scratch := make([]byte, wire.DataHeaderScratch)
	var got wire.Data
	if _, _, err := parseDataHeader(frame[:len(frame)-1], scratch, wire.Limits{}, &got); !errors.Is(err, io.EOF) {
		t.Errorf("partial header: %v", err)
	}
	other := wire.AppendMessage(nil, &wire.Keepalive{Nanos: 1})
	if _, _, err := parseDataHeader(other, scratch, wire.Limits{}, &got); !errors.Is(err, ErrProtocol) {
		t.Errorf("a Keepalive frame: %v", err)
	}
}

// flakyListener fails its first accepts as a listener out of descriptors does.
type flakyListener struct {
	net.Listener
	failures int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.failures > 0 {
		l.failures--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errEMFILE)}
	}
	return l.Listener.Accept()
}

var errEMFILE = errors.New("too many open files")

// A connection flood that exhausts descriptors makes Accept fail for a while; the data
// plane backs off and goes on serving instead of stopping for good.
func TestTheTCPPlaneKeepsAcceptingAfterAcceptErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpPlane{ln: &flakyListener{Listener: ln, failures: 5}, timeout: 2 * time.Second, log: zerolog.Nop(),
		pending: map[net.Conn]struct{}{}}
	done := make(chan struct{})
	go func() { p.serve(); close(done) }()
	defer func() { p.close(); <-done }()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var tok [32]byte
	rand.Read(tok[:])
	c.Write(tok[:])
	// An unknown token is answered by closing: proof the plane accepted the connection.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || (err != io.EOF && !isReset(err)) {
		t.Fatalf("after accept errors the plane did not serve: read %d, %v", n, err)
	}
}
