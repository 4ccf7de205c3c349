package stream

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
)

// dataALPN is the ALPN protocol of a TLS data connection: distinct from the QUIC control
// connection's (wire.ALPN), so that neither handshake can be replayed as the other.
const dataALPN = "sluice-data/1"

// dataConn is a data-plane connection: raw is the TCP socket; c is what frames travel
// through, raw itself (transport tcp) or a TLS 1.3 session over it (transport tls).
type dataConn struct {
	raw *net.TCPConn
	c   net.Conn
}

// plain returns the socket when frames travel over it unencrypted (sendfile and splice can
// move their payloads), or nil under TLS (payloads pass through user space to be sealed).
func (d *dataConn) plain() *net.TCPConn {
	if d.c == net.Conn(d.raw) {
		return d.raw
	}
	return nil
}

// close closes the socket, which also unblocks a read or write in progress (a TLS Close
// could wait to send its close_notify behind that write).
func (d *dataConn) close() error { return d.raw.Close() }

// dataTLS is conf for a TLS data connection: TLS 1.3 only and the data ALPN; the
// certificates, the cluster CA and the client-certificate requirement stay conf's, the
// same as the QUIC connection's.
func dataTLS(conf *tls.Config) *tls.Config {
	c := conf.Clone()
	c.MinVersion = tls.VersionTLS13
	c.NextProtos = []string{dataALPN}
	return c
}

// sameLeaf checks that the data connection's peer certificate is the one the QUIC
// connection's peer presented: the one-time token binds the connection to the session, and
// this binds it to the same authenticated node, so neither a leaked token nor another
// cluster member's certificate alone can carry a session's data.
func sameLeaf(what string, data, session []*x509.Certificate) error {
	if len(data) == 0 || len(session) == 0 {
		return fmt.Errorf("%w: %s: no peer certificate", ErrProtocol, what)
	}
	if !bytes.Equal(data[0].Raw, session[0].Raw) {
		return fmt.Errorf("%w: %s presented certificate %q, the session's peer %q", ErrProtocol, what,
			data[0].Subject.CommonName, session[0].Subject.CommonName)
	}
	return nil
}

// handshakeServer runs the server side of a TLS data connection on raw within ctx.
func handshakeServer(ctx context.Context, raw *net.TCPConn, conf *tls.Config) (*tls.Conn, error) {
	tc := tls.Server(raw, conf)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tc, nil
}
