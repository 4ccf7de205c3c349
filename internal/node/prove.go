package node

import (
	"context"
	"crypto"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/membership/gossip"
)

// proveMember is gossip's Verifier: member m proves it holds m.Name's node certificate of the
// cluster CA at the stream address it announced, and answers the peer protocol as m.Name. It
// returns the certificate's public key, under which every gossip claim in m's name (tokens,
// state, stream address, leave and replace intents) must then verify.
func (n *Node) proveMember(ctx context.Context, m gossip.Member) (crypto.PublicKey, error) {
	addr, err := streamAddr(m)
	if err != nil {
		return nil, err
	}
	tc, err := peerrpc.TLSConfig(n.id, addr, m.Name)
	if err != nil {
		return nil, err
	}
	var key crypto.PublicKey
	check := tc.VerifyConnection
	tc.VerifyConnection = func(cs tls.ConnectionState) error {
		if err := check(cs); err != nil {
			return err
		}
		key = cs.PeerCertificates[0].PublicKey
		return nil
	}
	hs := n.cfg.Timeouts.Handshake
	if hs <= 0 {
		hs = 10 * time.Second
	}
	conn, err := quic.DialAddr(ctx, addr, tc, &quic.Config{HandshakeIdleTimeout: hs})
	if err != nil {
		return nil, fmt.Errorf("peer %s at %s: %w", m.Name, addr, err)
	}
	conn.CloseWithError(0, "")
	if err := n.verifyMember(ctx, m); err != nil {
		return nil, err
	}
	return key, nil
}
