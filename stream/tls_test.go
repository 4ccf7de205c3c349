package stream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

var tlsConfig = Config{Transport: TransportTLS}

// A TLS data plane needs both ends to ask for it: tls against tcp (either way round) and
// against quic stream over QUIC; a receiver that asked for TLS never gets plaintext.
func TestFetchTLSNeedsBothEnds(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{3}, partitions: 60})
	ranges, _ := token.ParseRanges(token.Murmur3, "(0,0]")
	for _, tc := range []struct{ server, client string }{
		{TransportTLS, TransportTCP}, {TransportTCP, TransportTLS}, {TransportTLS, TransportQUIC}, {TransportQUIC, TransportTLS},
	} {
		n := startNode(t, Config{Transport: tc.server}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
		res, err := Fetch(context.Background(), Config{Transport: tc.client}, ca.client(t, ca),
			FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}, nil)
		if err != nil {
			t.Fatalf("server %s, client %s: %v", tc.server, tc.client, err)
		}
		checkFetched(t, parents, ranges, res)
		if n.sent.Load() < res.BytesReceived {
			t.Errorf("server %s, client %s: %d bytes received, %d UDP bytes sent: not over QUIC", tc.server, tc.client, res.BytesReceived, n.sent.Load())
		}
		n.stop()
	}
}

// The TLS data listener hands a session a connection only after a TLS 1.3 handshake with a
// client certificate of the cluster CA and, inside it, an outstanding token: a plaintext
// connection with the right token, a client without a certificate and one with a foreign
// CA's certificate get nothing, and the session's connection is TLS with the data ALPN.
func TestTLSPlaneAdmitsOnlyAuthenticatedTokens(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	p, err := listenTCP(Config{TCPAddr: "127.0.0.1:0", HandshakeTimeout: 2 * time.Second}, ca.server(t), nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	go p.serve()
	defer p.close()
	o, err := p.offer()
	if err != nil {
		t.Fatal(err)
	}
	handed := func() *dataConn {
		select {
		case c := <-o.conn:
			return c
		case <-time.After(300 * time.Millisecond):
			return nil
		}
	}
	dialTLS := func(conf *tls.Config) (net.Conn, error) {
		c, err := tls.Dial("tcp", p.advertised(), dataTLS(conf))
		if err != nil {
			return nil, err
		}
		if _, err := c.Write(o.token[:]); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}

	plain, err := net.Dial("tcp", p.advertised())
	if err != nil {
		t.Fatal(err)
	}
	plain.Write(o.token[:])
	plain.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(plain); len(b) > 0 && b[0] != 0x15 { // at most a TLS alert
		t.Errorf("plaintext connection read %q", b)
	}
	plain.Close()
	if c := handed(); c != nil {
		t.Fatal("a plaintext connection presenting the token reached the session")
	}

	for name, conf := range map[string]*tls.Config{
		"no client certificate": {RootCAs: ca.pool, MinVersion: tls.VersionTLS13},
		"foreign CA's client":   other.client(t, ca),
	} {
		if c, err := dialTLS(conf); err == nil {
			// TLS 1.3 reports the server's refusal of the client certificate on the first read.
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = c.Read(make([]byte, 1))
			c.Close()
			if err == nil {
				t.Errorf("%s: read data", name)
			}
		}
		if c := handed(); c != nil {
			t.Fatalf("%s: reached the session", name)
		}
	}

	good, err := dialTLS(ca.client(t, ca))
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	c := handed()
	if c == nil {
		t.Fatal("the authenticated connection with the token never reached the session")
	}
	defer c.close()
	tc, ok := c.c.(*tls.Conn)
	if !ok || c.plain() != nil {
		t.Fatalf("session's connection is %T, want TLS", c.c)
	}
	if st := tc.ConnectionState(); st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != dataALPN {
		t.Errorf("TLS version %x, ALPN %q", st.Version, st.NegotiatedProtocol)
	}
	c.c.Write([]byte("data"))
	b := make([]byte, 4)
	if _, err := io.ReadFull(good, b); err != nil || string(b) != "data" {
		t.Errorf("the session's connection: %q %v", b, err)
	}
}

// The data connection must be the session peer's own certificate, not merely one the CA
// signed.
func TestSameLeaf(t *testing.T) {
	ca := newTestCA(t)
	parse := func(c tls.Certificate) []*x509.Certificate {
		x, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return []*x509.Certificate{x}
	}
	a, b := parse(ca.leaf(t, "node-a")), parse(ca.leaf(t, "node-b"))
	if err := sameLeaf("x", a, a); err != nil {
		t.Errorf("same certificate: %v", err)
	}
	if err := sameLeaf("x", b, a); !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "node-b") {
		t.Errorf("another member's certificate: %v", err)
	}
	if err := sameLeaf("x", nil, a); !errors.Is(err, ErrProtocol) {
		t.Errorf("no certificate: %v", err)
	}
}

// Config.TCPCongestion is set on both ends' data sockets; one the kernel does not offer
// fails the listener at once, naming those it does.
func TestTCPCongestionControl(t *testing.T) {
	avail, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil || !strings.Contains(" "+string(avail)+" ", " reno ") {
		t.Skipf("reno not offered here (%q, %v)", avail, err)
	}
	cfg := Config{TCPAddr: "127.0.0.1:0", HandshakeTimeout: 2 * time.Second, Transport: TransportTCP, TCPCongestion: "reno"}
	p, err := listenTCP(cfg, nil, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	go p.serve()
	defer p.close()
	o, err := p.offer()
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dialData(context.Background(), cfg, nil, nil, &wire.TCPDataPlane{Token: o.token, Addr: p.advertised()}, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer dc.close()
	var sc *dataConn
	select {
	case sc = <-o.conn:
		defer sc.close()
	case <-time.After(5 * time.Second):
		t.Fatal("not admitted")
	}
	for side, c := range map[string]*net.TCPConn{"dialled": dc.raw, "accepted": sc.raw} {
		if got, err := socketCongestion(c); err != nil || got != "reno" {
			t.Errorf("%s socket: congestion control %q, %v", side, got, err)
		}
	}

	cfg.TCPCongestion = "no-such-cc"
	if _, err := listenTCP(cfg, nil, nil, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "no-such-cc") || !strings.Contains(err.Error(), "reno") {
		t.Errorf("unknown congestion control: %v", err)
	}
	if err := (Config{Transport: TransportQUIC, TCPCongestion: "bbr"}).withDefaults().validate(); err == nil {
		t.Error("TCPCongestion accepted with transport quic")
	}
}
