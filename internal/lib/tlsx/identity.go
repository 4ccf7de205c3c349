package tlsx

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/sluicedb/sluice/wire"
)

// Identity is a node's certificate and key together with the cluster CA that its peers'
// certificates must chain to. It is immutable and safe for concurrent use. Every config it
// returns is a fresh value whose fields the caller may set, but the certificate pool and the
// certificate inside are shared and must not be modified.
type Identity struct {
	name string
	ca   *x509.Certificate
	pool *x509.CertPool
	cert tls.Certificate
}

func newIdentity(name string, ca, leaf *x509.Certificate, key crypto.Signer) *Identity {
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &Identity{
		name: name,
		ca:   ca,
		pool: pool,
		cert: tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf},
	}
}

// Name returns the node name the identity was loaded as (its certificate's CommonName).
func (id *Identity) Name() string { return id.name }

// Certificate returns the node's certificate; callers must not modify it.
func (id *Identity) Certificate() *x509.Certificate { return id.cert.Leaf }

// Signer returns the private key of the node's certificate, which signs the node's gossip
// claims.
func (id *Identity) Signer() crypto.Signer { return id.cert.PrivateKey.(crypto.Signer) }

// CA returns the cluster CA certificate; callers must not modify it.
func (id *Identity) CA() *x509.Certificate { return id.ca }

// ServerConfig returns the TLS configuration for accepting peers: TLS 1.3 only, ALPN
// wire.ALPN only, and a client certificate chaining to the cluster CA, valid now and issued
// for client authentication, required before the handshake completes. A QUIC listener using
// it never returns a connection from a peer without one.
func (id *Identity) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    id.pool,
		NextProtos:   []string{wire.ALPN},
	}
}

// ClientConfig returns the TLS configuration for dialing the peer serverName, the node name
// (or one of the hosts) its certificate was issued for: TLS 1.3 only, ALPN wire.ALPN only, the
// server's certificate verified against the cluster CA alone (not the system roots), and this
// node's certificate offered for client authentication.
func (id *Identity) ClientConfig(serverName string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		RootCAs:      id.pool,
		ServerName:   serverName,
		NextProtos:   []string{wire.ALPN},
	}
}

// PeerName returns the node name of the peer of a completed handshake made with ServerConfig
// or ClientConfig: the CommonName of its verified certificate. It fails with ErrUnverifiedPeer
// if the state holds no verified chain (the handshake is not complete, or the config did not
// verify the peer) and with ErrInvalidName if the CommonName is not a node name.
func PeerName(state tls.ConnectionState) (string, error) {
	if !state.HandshakeComplete || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return "", ErrUnverifiedPeer
	}
	name := state.VerifiedChains[0][0].Subject.CommonName
	if err := ValidateName(name); err != nil {
		return "", fmt.Errorf("peer certificate CommonName: %w", err)
	}
	return name, nil
}
