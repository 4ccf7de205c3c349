package tlsx

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/wire"
)

// testTimeout bounds every handshake and exchange; generous for a loaded 2-core machine.
const testTimeout = 10 * time.Second

func quicConfig() *quic.Config {
	return &quic.Config{
		HandshakeIdleTimeout: testTimeout,
		MaxIdleTimeout:       testTimeout,
		KeepAlivePeriod:      testTimeout / 4,
	}
}

// echoServer accepts QUIC connections with an identity's ServerConfig. Its handler records the
// PeerName of every connection Accept returns and every byte read from any stream, replying
// "PEER:" followed by what it read.
type echoServer struct {
	ln       *quic.Listener
	received atomic.Int64
	mu       sync.Mutex
	peers    []string
}

func startEchoServer(t *testing.T, id *Identity) *echoServer {
	t.Helper()
	ln, err := quic.ListenAddr("127.0.0.1:0", id.ServerConfig(), quicConfig())
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			wg.Go(func() { s.serve(ctx, conn) })
		}
	})
	return s
}

func (s *echoServer) serve(ctx context.Context, conn *quic.Conn) {
	defer conn.CloseWithError(0, "")
	peer, err := PeerName(conn.ConnectionState().TLS)
	if err != nil {
		peer = "error: " + err.Error()
	}
	s.mu.Lock()
	s.peers = append(s.peers, peer)
	s.mu.Unlock()
	str, err := conn.AcceptStream(ctx)
	if err != nil {
		return
	}
	data, err := io.ReadAll(str)
	s.received.Add(int64(len(data)))
	if err != nil {
		return
	}
	str.Write(append([]byte(peer+":"), data...))
	str.Close()
	// Closing the connection now could discard the reply; the client closes it once read.
	select {
	case <-conn.Context().Done():
	case <-ctx.Done():
	}
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

func (s *echoServer) seen() (peers []string, received int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.peers), s.received.Load()
}

// exchange dials addr, sends payload on one stream and returns the server's reply and the
// server's verified name, if any.
func exchange(addr string, conf *tls.Config, payload string) (reply, server string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, err := quic.DialAddr(ctx, addr, conf, quicConfig())
	if err != nil {
		return "", "", err
	}
	defer conn.CloseWithError(0, "")
	server, _ = PeerName(conn.ConnectionState().TLS) // "" if unverified: the barrier of wantRefused
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return "", server, err
	}
	str.SetDeadline(time.Now().Add(testTimeout))
	if _, err := str.Write([]byte(payload)); err != nil {
		return "", server, err
	}
	if err := str.Close(); err != nil {
		return "", server, err
	}
	data, err := io.ReadAll(str)
	return string(data), server, err
}

// wantRefused checks that a dial with conf fails in the TLS handshake with a CRYPTO_ERROR
// raised by the server (remote) or the client itself (local), then proves the server's handler
// never saw that connection or a byte from it: an exchange with the barrier config that
// completes afterwards is the only one the handler recorded.
func wantRefused(t *testing.T, s *echoServer, conf *tls.Config, remote bool, barrier *tls.Config) {
	t.Helper()
	reply, _, err := exchange(s.addr(), conf, "secret payload")
	var te *quic.TransportError
	if !errors.As(err, &te) || !te.ErrorCode.IsCryptoError() || te.Remote != remote {
		t.Fatalf("exchange = %q, %v; want a TLS handshake failure raised by the %s", reply, err, side(remote))
	}
	t.Logf("refused: %v", err)
	if _, _, err := exchange(s.addr(), barrier, "ok"); err != nil {
		t.Fatalf("good client after the refused one: %v", err)
	}
	peers, received := s.seen()
	if !slices.Equal(peers, []string{"client"}) || received != 2 {
		t.Fatalf("server handler saw peers %q and %d bytes; want only the good client and its 2 bytes", peers, received)
	}
}

func side(remote bool) string {
	if remote {
		return "server"
	}
	return "client"
}

// sendCert makes c present cert whatever CAs the server asks for; by default a Go client sends
// no certificate rather than one the server's CertificateRequest does not ask for.
func sendCert(c *tls.Config, cert tls.Certificate) *tls.Config {
	c.Certificates = nil
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	return c
}

func TestQUICMutualTLSExchange(t *testing.T) {
	dir := newCluster(t, "server", "client")
	server, client := mustLoad(t, dir, "server"), mustLoad(t, dir, "client")
	s := startEchoServer(t, server)

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, err := quic.DialAddr(ctx, s.addr(), client.ClientConfig("server"), quicConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseWithError(0, "")
	st := conn.ConnectionState().TLS
	if st.NegotiatedProtocol != wire.ALPN || st.Version != tls.VersionTLS13 {
		t.Errorf("negotiated %q over TLS %#x, want %q over TLS 1.3", st.NegotiatedProtocol, st.Version, wire.ALPN)
	}
	if name, err := PeerName(st); err != nil || name != "server" {
		t.Errorf("client sees peer %q, %v; want server", name, err)
	}
	conn.CloseWithError(0, "")

	reply, peer, err := exchange(s.addr(), client.ClientConfig("server"), "hello over QUIC")
	if err != nil {
		t.Fatal(err)
	}
	if peer != "server" || reply != "client:hello over QUIC" {
		t.Errorf("reply %q from %q; want the server to name the client", reply, peer)
	}
	// The server also accepts the client by an IP SAN of a certificate issued without hosts.
	if _, _, err := exchange(s.addr(), client.ClientConfig("127.0.0.1"), "x"); err != nil {
		t.Errorf("dial by 127.0.0.1: %v", err)
	}
}

func TestQUICServerRefusesClients(t *testing.T) {
	dir := newCluster(t, "server", "client")
	server, client := mustLoad(t, dir, "server"), mustLoad(t, dir, "client")
	// Another cluster's CA has the same subject as ours; only its signature tells them apart.
	rogue := mustLoad(t, newCluster(t, "client"), "client")

	for _, tc := range []struct {
		name string
		conf func(t *testing.T) *tls.Config
	}{
		{"certificate from another CA", func(t *testing.T) *tls.Config {
			// Trusts our server, so only the server can refuse.
			return sendCert(client.ClientConfig("server"), rogue.cert)
		}},
		{"self-signed certificate", func(t *testing.T) *tls.Config {
			now := time.Now()
			tmpl, err := nodeTemplate("client", RoleNode, []string{"client"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			leaf, key, err := sign(tmpl, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return sendCert(client.ClientConfig("server"), tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf})
		}},
		{"no certificate", func(t *testing.T) *tls.Config {
			c := client.ClientConfig("server")
			c.Certificates = nil
			return c
		}},
		{"expired certificate", func(t *testing.T) *tls.Config {
			return sendCert(client.ClientConfig("server"), issueExpired(t, dir, "client").cert)
		}},
		{"certificate not yet valid", func(t *testing.T) *tls.Config {
			now := time.Now()
			return sendCert(client.ClientConfig("server"), issueWindow(t, dir, "client", now.Add(time.Hour), now.Add(48*time.Hour)).cert)
		}},
		{"other ALPN", func(t *testing.T) *tls.Config {
			c := client.ClientConfig("server")
			c.NextProtos = []string{"sluice/0"}
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startEchoServer(t, server)
			wantRefused(t, s, tc.conf(t), true, client.ClientConfig("server"))
		})
	}
}

func TestQUICClientRefusesServers(t *testing.T) {
	dir := newCluster(t, "server", "client")
	server, client := mustLoad(t, dir, "server"), mustLoad(t, dir, "client")
	rogue := mustLoad(t, newCluster(t, "server"), "server")

	for _, tc := range []struct {
		name       string
		server     *Identity
		serverName string
	}{
		{"server from another CA", rogue, "server"},
		{"expired server certificate", issueExpired(t, dir, "server"), "server"},
		{"server certificate for another name", server, "client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The server accepts our client, so the client alone refuses.
			srv := &Identity{name: tc.server.name, ca: tc.server.ca, pool: client.pool, cert: tc.server.cert}
			s := startEchoServer(t, srv)
			barrier := client.ClientConfig(tc.serverName)
			barrier.InsecureSkipVerify = true
			wantRefused(t, s, client.ClientConfig(tc.serverName), false, barrier)
		})
	}
}

func TestServerAndClientConfig(t *testing.T) {
	id := mustLoad(t, newCluster(t, "n1"), "n1")
	sc, cc := id.ServerConfig(), id.ClientConfig("n2")
	if sc.ClientAuth != tls.RequireAndVerifyClientCert || sc.ClientCAs == nil || sc.MinVersion != tls.VersionTLS13 ||
		!slices.Equal(sc.NextProtos, []string{wire.ALPN}) || len(sc.Certificates) != 1 {
		t.Errorf("ServerConfig %+v", sc)
	}
	if cc.RootCAs == nil || cc.ServerName != "n2" || cc.MinVersion != tls.VersionTLS13 || cc.InsecureSkipVerify ||
		!slices.Equal(cc.NextProtos, []string{wire.ALPN}) || len(cc.Certificates) != 1 {
		t.Errorf("ClientConfig %+v", cc)
	}
	sc.NextProtos[0] = "changed"
	if id.ServerConfig().NextProtos[0] != wire.ALPN {
		t.Error("ServerConfig shares its NextProtos with earlier results")
	}
}

func TestPeerNameNeedsAVerifiedChain(t *testing.T) {
	id := mustLoad(t, newCluster(t, "n1"), "n1")
	if _, err := PeerName(tls.ConnectionState{}); !errors.Is(err, ErrUnverifiedPeer) {
		t.Errorf("empty state: %v, want ErrUnverifiedPeer", err)
	}
	unverified := tls.ConnectionState{HandshakeComplete: true, PeerCertificates: []*x509.Certificate{id.Certificate()}}
	if _, err := PeerName(unverified); !errors.Is(err, ErrUnverifiedPeer) {
		t.Errorf("unverified peer certificate: %v, want ErrUnverifiedPeer", err)
	}
	verified := tls.ConnectionState{HandshakeComplete: true, VerifiedChains: [][]*x509.Certificate{{id.Certificate(), id.CA()}}}
	if name, err := PeerName(verified); err != nil || name != "n1" {
		t.Errorf("verified chain: %q, %v", name, err)
	}
	ca := tls.ConnectionState{HandshakeComplete: true, VerifiedChains: [][]*x509.Certificate{{id.CA()}}}
	if _, err := PeerName(ca); !errors.Is(err, ErrInvalidName) {
		t.Errorf("CommonName %q: %v, want ErrInvalidName", id.CA().Subject.CommonName, err)
	}
}
