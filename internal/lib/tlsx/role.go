package tlsx

import (
	"crypto/x509"
	"fmt"
	"slices"
)

// Role is what a certificate of the cluster CA may do. The CA holder decides it when issuing:
// `sluice cert node` makes node certificates, `sluice cert client` client certificates.
type Role string

const (
	// RoleNode: a cluster member. It serves and fetches every table, calls other nodes'
	// peer operations (load, fetch requests, repair trees) and, with the gossip key, may own
	// tokens. A certificate without a role marker (made before roles existed) is a node's.
	RoleNode Role = "node"
	// RoleClient: an operator's or application's certificate. It may fetch only the keyspaces
	// a node's configuration lists under client_fetch_keyspaces; it never serves, never calls
	// peer operations and never owns tokens.
	RoleClient Role = "client"
)

// Organizational units marking the role in a certificate's subject.
const (
	ouNode   = "sluice-node"
	ouClient = "sluice-client"
)

// RoleOf reads the role a certificate was issued for.
func RoleOf(c *x509.Certificate) Role {
	if slices.Contains(c.Subject.OrganizationalUnit, ouClient) {
		return RoleClient
	}
	return RoleNode
}

// PeerIdentity is a verified peer certificate's name and role.
type PeerIdentity struct {
	Name string
	Role Role
}

// IdentifyPeer is PeerName plus the certificate's role.
func IdentifyPeer(chains [][]*x509.Certificate) (PeerIdentity, error) {
	if len(chains) == 0 || len(chains[0]) == 0 {
		return PeerIdentity{}, ErrUnverifiedPeer
	}
	leaf := chains[0][0]
	if err := ValidateName(leaf.Subject.CommonName); err != nil {
		return PeerIdentity{}, fmt.Errorf("peer certificate CommonName: %w", err)
	}
	return PeerIdentity{Name: leaf.Subject.CommonName, Role: RoleOf(leaf)}, nil
}
