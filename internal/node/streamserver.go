package node

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/stream"
	"github.com/sluicedb/sluice/wire"
)

// QUICStreamServer is the NewStreamServerFunc of a real node: the stream package's server on
// QUIC with the node's mutual-TLS identity, its outcomes counted in the node's metrics. With
// transport tls or tcp the sessions still run over QUIC on stream_addr (UDP), and the bulk data
// plane listens on TCP at the same host and port number (UDP and TCP ports are separate, and
// port+1 would collide with the default admin_addr); a stream_addr with port 0 gives the
// TCP listener its own free port.
func QUICStreamServer(cfg StreamConfig, cat stream.Catalog, log zerolog.Logger) (StreamServer, error) {
	id, err := tlsx.Load(cfg.TLSDir, cfg.Name)
	if err != nil {
		return nil, err
	}
	pc, err := net.ListenPacket("udp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("stream address %s: %w", cfg.Addr, err)
	}
	scfg := StreamSettings(cfg)
	if cfg.Transport == TransportTCP || cfg.Transport == TransportTLS {
		scfg.TCPAddr = cfg.Addr
	}
	if cfg.Name != id.Name() {
		return nil, fmt.Errorf("certificate %q is not node %q's", id.Name(), cfg.Name)
	}
	srv := stream.NewServer(scfg, cat, id.ServerConfig(), log)
	srv.SetThroughput(cfg.Throughput.OutboundBytesPerSecond, cfg.Throughput.InboundBytesPerSecond)
	return &quicServer{Server: srv, pc: pc}, nil
}

// StreamSettings maps the node's configuration onto the stream layer's.
func StreamSettings(cfg StreamConfig) stream.Config {
	sc := stream.Config{Node: cfg.Name, IdleTimeout: cfg.Timeouts.Idle, KeepAlive: cfg.Timeouts.Keepalive,
		HandshakeTimeout: cfg.Timeouts.Handshake, Transport: string(cfg.Transport), TCPCongestion: cfg.TCPCongestion,
		Authorize: cfg.Authorize, Protocols: cfg.Protocols, FillAfterReceive: cfg.FillAfterReceive}
	if cfg.Memory.MaxInFlightBytes > 0 {
		sc.MaxIndexSlice = cfg.Memory.MaxInFlightBytes
	}
	if cfg.Metrics != nil {
		sc.Observer = metricsObserver{cfg.Metrics}
	}
	return sc
}

type quicServer struct {
	*stream.Server
	pc net.PacketConn
}

func (q *quicServer) Addr() net.Addr { return q.pc.LocalAddr() }

func (q *quicServer) Serve(ctx context.Context) error {
	defer q.pc.Close()
	return q.Server.Serve(ctx, q.pc)
}

// metricsObserver counts stream outcomes in the node's Prometheus collectors.
type metricsObserver struct{ m *Metrics }

func direction(d stream.Direction) string {
	if d == stream.Sending {
		return DirOut
	}
	return DirIn
}

func (o metricsObserver) SSTable(d stream.Direction, kind string, bytes int64, err error) {
	if err != nil {
		var f *wire.Failure
		switch {
		case errors.Is(err, stream.ErrChecksum):
			o.m.CRCFailures.Inc()
		case errors.As(err, &f) && f.Code == wire.CodeRefused:
			// Label by the stable code, not the free-text reason: labels must stay few.
			o.m.SlicesRefused.WithLabelValues(f.Code.String()).Inc()
		case errors.Is(err, stream.ErrRefused):
			o.m.SlicesRefused.WithLabelValues(wire.CodeRefused.String()).Inc()
		}
		return
	}
	o.m.FilesStreamed.WithLabelValues(direction(d), kind).Inc()
	o.m.BytesStreamed.WithLabelValues(direction(d), kind).Add(float64(bytes))
}

func (o metricsObserver) Session(d stream.Direction, err error) {
	outcome := OutcomeComplete
	if err != nil {
		outcome = OutcomeFailed
	}
	o.m.Sessions.WithLabelValues(direction(d), outcome).Inc()
}
