package tlsx

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicedb/sluice/internal/lib/fsx"
)

// maxFileSize bounds what is read from a certificate or key file; real ones are under 2 KiB.
const maxFileSize = 1 << 20

// WriteCA creates the cluster CA in dir (created with mode 0700 if missing): dir/ca.crt and
// dir/ca.key, a self-signed ECDSA P-256 CA valid for CAValidityYears. Without force it fails
// with ErrExists, writing nothing, if either file exists; with force it replaces both, which
// orphans every node certificate signed by the old CA.
func WriteCA(dir string, force bool) error {
	crt, key := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if err := prepare(dir, force, crt, key); err != nil {
		return err
	}
	tmpl, err := caTemplate(time.Now())
	if err != nil {
		return err
	}
	cert, k, err := sign(tmpl, nil, nil)
	if err != nil {
		return err
	}
	return writePair(dir, crt, cert, key, k, force)
}

// WriteNode issues node name's certificate and key, dir/NAME.crt and dir/NAME.key, signed by
// the CA in dir: ECDSA P-256, CommonName name, valid for NodeValidityYears (never beyond the
// CA), for server and client authentication. Its DNS SANs are name and every host that is not
// an IP address; its IP SANs are the hosts that are, or 127.0.0.1 and ::1 when hosts is empty.
// Without force it fails with ErrExists, writing nothing, if either file exists. Errors wrap
// ErrInvalidName, ErrInvalidHost, ErrExists, or name a CA file and its problem (*FileError).
func WriteNode(dir, name string, hosts []string, force bool) error {
	return writeLeaf(dir, name, RoleNode, hosts, force)
}

// WriteClient is WriteNode for a client (operator or application) certificate: RoleClient,
// client authentication only, so it can fetch from nodes whose configuration allows it but
// can neither serve nor act as a cluster member.
func WriteClient(dir, name string, force bool) error {
	return writeLeaf(dir, name, RoleClient, nil, force)
}

func writeLeaf(dir, name string, role Role, hosts []string, force bool) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	dns, ips, err := subjectAltNames(name, hosts)
	if err != nil {
		return err
	}
	now := time.Now()
	ca, caKey, err := loadCA(dir, now)
	if err != nil {
		return err
	}
	crt, key := Files(dir, name)
	if err := prepare(dir, force, crt, key); err != nil {
		return err
	}
	notBefore, notAfter := nodeValidity(ca, now)
	tmpl, err := nodeTemplate(name, role, dns, ips, notBefore, notAfter)
	if err != nil {
		return err
	}
	cert, k, err := sign(tmpl, ca, caKey)
	if err != nil {
		return err
	}
	return writePair(dir, crt, cert, key, k, force)
}

// Load reads node name's identity from the cluster directory dir: ca.crt, NAME.crt and
// NAME.key (ca.key is not needed and should not be on nodes). It fails with a *FileError naming
// the file if one is missing, is not PEM of the expected type, does not parse, if the key does
// not match the certificate, if the certificate is not signed by the CA, is not for name or
// lacks server or client authentication, or if either certificate is expired or not yet valid.
func Load(dir, name string) (*Identity, error) { return load(dir, name, time.Now()) }

func load(dir, name string, now time.Time) (*Identity, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	caPath := filepath.Join(dir, CACertFile)
	ca, err := readCert(caPath)
	if err != nil {
		return nil, err
	}
	if err := checkCA(ca, now); err != nil {
		return nil, fileErr(caPath, err)
	}
	crtPath, keyPath := Files(dir, name)
	leaf, err := readCert(crtPath)
	if err != nil {
		return nil, err
	}
	key, err := readKey(keyPath)
	if err != nil {
		return nil, err
	}
	if !keyMatches(leaf, key) {
		return nil, fileErr(keyPath, fmt.Errorf("%w %s", ErrKeyMismatch, crtPath))
	}
	if err := checkNode(leaf, ca, name, now); err != nil {
		return nil, fileErr(crtPath, err)
	}
	return newIdentity(name, ca, leaf, key), nil
}

// loadCA reads and checks the CA certificate and key in dir, for signing.
func loadCA(dir string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	crtPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	ca, err := readCert(crtPath)
	if err != nil {
		return nil, nil, err
	}
	if err := checkCA(ca, now); err != nil {
		return nil, nil, fileErr(crtPath, err)
	}
	key, err := readKey(keyPath)
	if err != nil {
		return nil, nil, err
	}
	if !keyMatches(ca, key) {
		return nil, nil, fileErr(keyPath, fmt.Errorf("%w %s", ErrKeyMismatch, crtPath))
	}
	return ca, key, nil
}

// checkCA checks that ca can anchor node certificates at now.
func checkCA(ca *x509.Certificate, now time.Time) error {
	if !ca.BasicConstraintsValid || !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		return fmt.Errorf("%w: %q is not a CA certificate", ErrBadCertificate, ca.Subject.CommonName)
	}
	return checkValidity(ca, now)
}

// checkNode checks that leaf is node name's certificate under ca at now. The validity, issuer,
// name and usage checks come first so the error says which one failed; the final chain
// verification is what the TLS handshake will do, so Load fails where a handshake would.
func checkNode(leaf, ca *x509.Certificate, name string, now time.Time) error {
	if err := checkValidity(leaf, now); err != nil {
		return err
	}
	if err := leaf.CheckSignatureFrom(ca); err != nil {
		return fmt.Errorf("%w (issuer %q): %v", ErrNotSignedByCA, leaf.Issuer.CommonName, err)
	}
	if cn := leaf.Subject.CommonName; cn != name {
		return fmt.Errorf("%w: CommonName %q, want %q", ErrWrongName, cn, name)
	}
	if err := leaf.VerifyHostname(name); err != nil {
		return fmt.Errorf("%w: %v", ErrBadCertificate, err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if RoleOf(leaf) == RoleClient {
		usages = usages[1:]
	}
	for _, usage := range usages {
		opts := x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}
		if _, err := leaf.Verify(opts); err != nil {
			return fmt.Errorf("%w: %v", ErrBadCertificate, err)
		}
	}
	return nil
}

func checkValidity(c *x509.Certificate, now time.Time) error {
	switch {
	case now.After(c.NotAfter):
		return fmt.Errorf("%w: %q expired at %s", ErrExpired, c.Subject.CommonName, c.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(c.NotBefore):
		return fmt.Errorf("%w: %q is valid from %s", ErrNotYetValid, c.Subject.CommonName, c.NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

// keyMatches reports whether key is the private key of cert's public key.
func keyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}

func readCert(path string) (*x509.Certificate, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parseCertPEM(data)
	if err != nil {
		return nil, fileErr(path, err)
	}
	return c, nil
}

func readKey(path string) (crypto.Signer, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	k, err := parseKeyPEM(data)
	if err != nil {
		return nil, fileErr(path, err)
	}
	return k, nil
}

// parseCertPEM parses the first PEM block of data, which must be a CERTIFICATE. Anything after
// it (say, an appended chain) is ignored: the cluster CA is the only issuer.
func parseCertPEM(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrBadPEM)
	}
	if block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: found %q, want CERTIFICATE", ErrBadPEM, block.Type)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCertificate, err)
	}
	return c, nil
}

// parseKeyPEM parses the first PEM block of data: a PKCS#8 PRIVATE KEY (what WriteCA and
// WriteNode write) or an EC PRIVATE KEY (SEC 1, what openssl ecparam writes).
func parseKeyPEM(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrBadPEM)
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%w: found %q, want PRIVATE KEY", ErrBadPEM, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: private key: %v", ErrBadCertificate, err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: private key of type %T cannot sign", ErrBadCertificate, key)
	}
	return s, nil
}

// readFile reads at most maxFileSize bytes of path, mapping a missing file to ErrMissing.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileErr(path, osErr(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fileErr(path, osErr(err))
	}
	if len(data) > maxFileSize {
		return nil, fileErr(path, fmt.Errorf("%w: larger than %d bytes", ErrBadPEM, maxFileSize))
	}
	return data, nil
}

// osErr strips the path from an *fs.PathError (FileError names the file) and maps
// fs.ErrNotExist to ErrMissing.
func osErr(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return ErrMissing
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// prepare creates dir and, without force, refuses paths that already exist.
func prepare(dir string, force bool, paths ...string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fileErr(dir, osErr(err))
	}
	if force {
		return nil
	}
	for _, p := range paths {
		_, err := os.Lstat(p)
		switch {
		case err == nil:
			return fileErr(p, ErrExists)
		case !errors.Is(err, fs.ErrNotExist):
			return fileErr(p, osErr(err))
		}
	}
	return nil
}

// writePair installs a certificate (mode 0644) and its PKCS#8 key (mode 0600). Both are
// written and synced under temporary names first, then published: linked into place without
// force, so a file created concurrently is never clobbered (the pair is then withdrawn), or
// renamed over the old files with force. A crash between the two publications can leave a new
// key beside an old certificate, which Load reports as ErrKeyMismatch.
func writePair(dir, crtPath string, cert *x509.Certificate, keyPath string, key crypto.Signer, force bool) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	keyTmp, err := writeTemp(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(keyTmp)
	crtTmp, err := writeTemp(crtPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(crtTmp)
	if err := publish(keyTmp, keyPath, force); err != nil {
		return err
	}
	if err := publish(crtTmp, crtPath, force); err != nil {
		if !force {
			os.Remove(keyPath)
		}
		return err
	}
	return syncDir(dir)
}

// writeTemp writes data with mode perm to a new file beside path and syncs it.
func writeTemp(path string, data []byte, perm fs.FileMode) (tmp string, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fileErr(path, osErr(err))
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return "", fileErr(f.Name(), osErr(err))
	}
	if _, err := f.Write(data); err != nil {
		return "", fileErr(f.Name(), osErr(err))
	}
	if err := f.Sync(); err != nil {
		return "", fileErr(f.Name(), osErr(err))
	}
	if err := f.Close(); err != nil {
		return "", fileErr(f.Name(), osErr(err))
	}
	return f.Name(), nil
}

// publish moves tmp to path: rename with force, otherwise a hard link, which fails if path
// exists (the temporary name is removed by the caller either way).
func publish(tmp, path string, force bool) error {
	if force {
		if err := os.Rename(tmp, path); err != nil {
			return fileErr(path, osErr(err))
		}
		return nil
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fileErr(path, ErrExists)
		}
		return fileErr(path, osErr(err))
	}
	return nil
}

// syncDir makes the directory entries of published files durable.
func syncDir(dir string) error {
	if err := fsx.SyncDir(dir); err != nil {
		return fileErr(dir, osErr(err))
	}
	return nil
}
