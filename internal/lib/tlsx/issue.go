package tlsx

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Validity periods. A node certificate never outlives the CA that signed it.
const (
	CAValidityYears   = 10
	NodeValidityYears = 5
)

// clockSkew backdates NotBefore so a certificate issued on one machine is already valid on a
// peer whose clock is slightly behind.
const clockSkew = time.Hour

// caCommonName is the subject of every cluster CA.
const caCommonName = "sluice cluster CA"

// caTemplate is a self-signed CA that may sign node certificates but no intermediate CA.
func caTemplate(now time.Time) (*x509.Certificate, error) {
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: caCommonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.AddDate(CAValidityYears, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}, nil
}

// nodeTemplate is a leaf certificate for node name that serves both ends of a mutual-TLS
// connection: a node dials peers and accepts them with the same certificate.
func nodeTemplate(name string, role Role, dns []string, ips []net.IP, notBefore, notAfter time.Time) (*x509.Certificate, error) {
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	ou, usage := ouNode, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if role == RoleClient {
		// A client never serves: without server authentication no peer accepts it as a node.
		ou, usage = ouClient, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	return &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, OrganizationalUnit: []string{ou}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           usage,
		BasicConstraintsValid: true,
		DNSNames:              dns,
		IPAddresses:           ips,
	}, nil
}

// nodeValidity returns the validity period of a node certificate issued at now under ca.
func nodeValidity(ca *x509.Certificate, now time.Time) (notBefore, notAfter time.Time) {
	notAfter = now.AddDate(NodeValidityYears, 0, 0)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	return now.Add(-clockSkew), notAfter
}

// sign generates a P-256 key for tmpl and signs tmpl with parentKey; a nil parent self-signs.
// It returns the DER certificate, parsed, and the new key.
func sign(tmpl, parent *x509.Certificate, parentKey crypto.Signer) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsx: create certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// serialNumber is a random positive 127-bit serial: unique without a registry, and within the
// 20 octets RFC 5280 allows.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	return n.Add(n, big.NewInt(1)), nil
}
