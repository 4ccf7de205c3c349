package stream

import (
	"context"
	"crypto/tls"
	"net"

	"github.com/quic-go/quic-go"
)

// The QUIC sockets' receive path without an allocation per packet.
//
// quic-go reads a *net.UDPConn in batches through x/net's ReadBatch, which allocates a fresh
// *net.UDPAddr (and its IP) for every datagram received: at 1452 bytes a packet that was
// ~36 MiB of garbage per GiB on the fetching side, the largest part of its heap churn. quic-go
// uses a socket's own ReadBatch when it has one (its batchConn), so sluice hands it a
// *net.UDPConn wrapped with a ReadBatch (recvmmsg, udpconn_linux.go) that reuses its headers
// and returns one cached *net.UDPAddr per peer address, and a WriteMsgUDP that goes through
// WriteMsgUDPAddrPort (no sockaddr allocated per ACK sent). Elsewhere the socket is used as it
// is (udpconn_other.go).

// dialQUIC is quic.DialAddr over a socket wrapped by lowAllocUDP. The transport and the
// socket are closed when the connection ends (its context is done), as quic.DialAddr's are.
func dialQUIC(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4zero, Port: 0})
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: lowAllocUDP(udp)}
	conn, err := tr.Dial(ctx, raddr, tlsConf, conf)
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, err
	}
	// The connection cancels its context only after its CONNECTION_CLOSE has been written.
	context.AfterFunc(conn.Context(), func() {
		tr.Close()
		udp.Close()
	})
	return conn, nil
}

// lowAllocUDP wraps pc for quic.Transport when it is a *net.UDPConn and the platform has a
// batch read without per-packet allocation; otherwise it returns pc. The wrapper must be
// the transport's only reader: its ReadBatch reuses state between calls.
func lowAllocUDP(pc net.PacketConn) net.PacketConn {
	c, ok := pc.(*net.UDPConn)
	if !ok {
		return pc
	}
	if w, ok := newBatchUDP(c); ok {
		return w
	}
	return pc
}
