package tlsx

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWriteCACreatesSelfSignedP256CA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	before := time.Now()
	if err := WriteCA(dir, false); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"ca.crt", "ca.key"}) {
		t.Fatalf("directory holds %v, want ca.crt and ca.key only", got)
	}
	for _, f := range []struct {
		name string
		mode fs.FileMode
	}{{"ca.key", 0o600}, {"ca.crt", 0o644}, {".", 0o700 | fs.ModeDir}} {
		st, err := os.Stat(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != f.mode {
			t.Errorf("%s: mode %v, want %v", f.name, st.Mode(), f.mode)
		}
	}
	ca := readTestCert(t, filepath.Join(dir, CACertFile))
	if !ca.IsCA || !ca.BasicConstraintsValid || !ca.MaxPathLenZero || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("not a leaf-signing CA: IsCA=%v MaxPathLenZero=%v KeyUsage=%v", ca.IsCA, ca.MaxPathLenZero, ca.KeyUsage)
	}
	if err := ca.CheckSignatureFrom(ca); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	pub, ok := ca.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T, want ECDSA P-256", ca.PublicKey)
	}
	if want := before.AddDate(10, 0, 0); ca.NotAfter.Before(want.Add(-time.Minute)) || ca.NotAfter.After(want.Add(time.Minute)) {
		t.Errorf("NotAfter %v, want 10 years from now (%v)", ca.NotAfter, want)
	}
	if !ca.NotBefore.Before(before) {
		t.Errorf("NotBefore %v is not backdated", ca.NotBefore)
	}
	key, err := parseKeyPEM(readTestFile(t, filepath.Join(dir, CAKeyFile)))
	if err != nil {
		t.Fatal(err)
	}
	if !keyMatches(ca, key) {
		t.Error("ca.key does not match ca.crt")
	}
}

func TestWriteCARefusesToOverwriteWithoutForce(t *testing.T) {
	dir := newCluster(t, "n1")
	crt, key := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	oldCrt, oldKey := readTestFile(t, crt), readTestFile(t, key)

	err := WriteCA(dir, false)
	wantFileError(t, err, ErrExists, crt)
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("%v is not fs.ErrExist", err)
	}
	if !bytes.Equal(readTestFile(t, crt), oldCrt) || !bytes.Equal(readTestFile(t, key), oldKey) {
		t.Fatal("refused WriteCA changed the CA files")
	}

	// Either file alone blocks the write: a stray key must not be paired with a new certificate.
	if err := os.Remove(crt); err != nil {
		t.Fatal(err)
	}
	wantFileError(t, WriteCA(dir, false), ErrExists, key)
	if _, err := os.Stat(crt); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("refused WriteCA wrote ca.crt")
	}

	if err := WriteCA(dir, true); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(readTestFile(t, key), oldKey) {
		t.Fatal("forced WriteCA kept the old key")
	}
	if st, err := os.Stat(key); err != nil || st.Mode() != 0o600 {
		t.Fatalf("forced ca.key: %v, %v; want mode 0600", st.Mode(), err)
	}
	// Node certificates of the replaced CA no longer load.
	n1, _ := Files(dir, "n1")
	_, err = Load(dir, "n1")
	wantFileError(t, err, ErrNotSignedByCA, n1)
}

func TestWriteNodeIssuesServerAndClientCertificate(t *testing.T) {
	dir := newCluster(t)
	if err := WriteNode(dir, "node-1.dc1", []string{"10.0.0.7", "node1.example.com", "fd00::7"}, false); err != nil {
		t.Fatal(err)
	}
	crt, key := Files(dir, "node-1.dc1")
	if got := dirNames(t, dir); !slices.Equal(got, []string{"ca.crt", "ca.key", "node-1.dc1.crt", "node-1.dc1.key"}) {
		t.Fatalf("directory holds %v", got)
	}
	if st, err := os.Stat(key); err != nil || st.Mode() != 0o600 {
		t.Fatalf("node key: %v, %v; want mode 0600", st.Mode(), err)
	}
	ca := readTestCert(t, filepath.Join(dir, CACertFile))
	c := readTestCert(t, crt)
	if err := c.CheckSignatureFrom(ca); err != nil {
		t.Errorf("not signed by the CA: %v", err)
	}
	if c.Subject.CommonName != "node-1.dc1" || c.IsCA {
		t.Errorf("CommonName %q IsCA %v", c.Subject.CommonName, c.IsCA)
	}
	if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("ExtKeyUsage %v, want server and client auth", c.ExtKeyUsage)
	}
	if !slices.Equal(c.DNSNames, []string{"node-1.dc1", "node1.example.com"}) {
		t.Errorf("DNS SANs %v", c.DNSNames)
	}
	var ips []string
	for _, ip := range c.IPAddresses {
		ips = append(ips, ip.String())
	}
	if !slices.Equal(ips, []string{"10.0.0.7", "fd00::7"}) {
		t.Errorf("IP SANs %v", ips)
	}
	if c.NotAfter.After(ca.NotAfter) || c.NotAfter.Before(time.Now().AddDate(NodeValidityYears, 0, -1)) {
		t.Errorf("NotAfter %v (CA %v)", c.NotAfter, ca.NotAfter)
	}
	id, err := Load(dir, "node-1.dc1")
	if err != nil {
		t.Fatal(err)
	}
	if id.Name() != "node-1.dc1" || !id.Certificate().Equal(c) || !id.CA().Equal(ca) {
		t.Errorf("Load returned %q %v", id.Name(), id.Certificate().Subject)
	}

	old := readTestFile(t, crt)
	wantFileError(t, WriteNode(dir, "node-1.dc1", nil, false), ErrExists, crt)
	if !bytes.Equal(readTestFile(t, crt), old) {
		t.Fatal("refused WriteNode changed the certificate")
	}
	if err := WriteNode(dir, "node-1.dc1", nil, true); err != nil {
		t.Fatal(err)
	}
	if c2 := readTestCert(t, crt); len(c2.IPAddresses) != 2 || !c2.IPAddresses[0].IsLoopback() {
		t.Errorf("forced WriteNode without hosts: IP SANs %v, want loopback", c2.IPAddresses)
	}
}

func TestWriteNodeRejectsBadInputWithoutWriting(t *testing.T) {
	dir := newCluster(t)
	for _, tc := range []struct {
		name  string
		hosts []string
		want  error
	}{
		{"../evil", nil, ErrInvalidName},
		{"a/b", nil, ErrInvalidName},
		{"ca", nil, ErrInvalidName},
		{"", nil, ErrInvalidName},
		{"n1", []string{"bad host"}, ErrInvalidHost},
		{"n1", []string{""}, ErrInvalidHost},
		{"n1", []string{"fe80::1%eth0"}, ErrInvalidHost},
	} {
		if err := WriteNode(dir, tc.name, tc.hosts, false); !errors.Is(err, tc.want) {
			t.Errorf("WriteNode(%q, %q) = %v, want %v", tc.name, tc.hosts, err, tc.want)
		}
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"ca.crt", "ca.key"}) {
		t.Fatalf("rejected WriteNode calls left %v", got)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "evil.crt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a path-traversing name escaped the directory")
	}
}

func TestWriteNodeNeedsTheCA(t *testing.T) {
	dir := t.TempDir()
	err := WriteNode(dir, "n1", nil, false)
	wantFileError(t, err, ErrMissing, filepath.Join(dir, CACertFile))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%v is not fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), filepath.Join(dir, CACertFile)+": missing") {
		t.Errorf("message %q does not say which file is missing", err)
	}

	dir = newCluster(t)
	key := filepath.Join(dir, CAKeyFile)
	writeTestFile(t, key, []byte("not a key"))
	wantFileError(t, WriteNode(dir, "n1", nil, false), ErrBadPEM, key)

	other := newCluster(t)
	copyTestFile(t, filepath.Join(other, CAKeyFile), key)
	wantFileError(t, WriteNode(dir, "n1", nil, false), ErrKeyMismatch, key)
}

// TestLoadNamesTheBadFile breaks one file of a good cluster directory per case.
func TestLoadNamesTheBadFile(t *testing.T) {
	other := newCluster(t, "n1")
	for _, tc := range []struct {
		name string
		brk  func(t *testing.T, dir string)
		file string // base name Load must blame
		want error
	}{
		{"missing CA", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, CACertFile)) }, "ca.crt", ErrMissing},
		{"missing cert", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "n1.crt")) }, "n1.crt", ErrMissing},
		{"missing key", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "n1.key")) }, "n1.key", ErrMissing},
		{"CA not PEM", func(t *testing.T, dir string) { writeTestFile(t, filepath.Join(dir, CACertFile), []byte("hello")) }, "ca.crt", ErrBadPEM},
		{"key where the cert belongs", func(t *testing.T, dir string) {
			copyTestFile(t, filepath.Join(dir, "n1.key"), filepath.Join(dir, "n1.crt"))
		}, "n1.crt", ErrBadPEM},
		{"cert where the key belongs", func(t *testing.T, dir string) {
			copyTestFile(t, filepath.Join(dir, "n1.crt"), filepath.Join(dir, "n1.key"))
		}, "n1.key", ErrBadPEM},
		{"cert DER corrupt", func(t *testing.T, dir string) {
			writeTestFile(t, filepath.Join(dir, "n1.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{0x30, 0x03, 1, 2, 3}}))
		}, "n1.crt", ErrBadCertificate},
		{"node cert as CA", func(t *testing.T, dir string) {
			copyTestFile(t, filepath.Join(dir, "n1.crt"), filepath.Join(dir, CACertFile))
		}, "ca.crt", ErrBadCertificate},
		{"key of another node", func(t *testing.T, dir string) {
			copyTestFile(t, filepath.Join(dir, "n2.key"), filepath.Join(dir, "n1.key"))
		}, "n1.key", ErrKeyMismatch},
		{"pair from another cluster", func(t *testing.T, dir string) {
			copyTestFile(t, filepath.Join(other, "n1.crt"), filepath.Join(dir, "n1.crt"))
			copyTestFile(t, filepath.Join(other, "n1.key"), filepath.Join(dir, "n1.key"))
		}, "n1.crt", ErrNotSignedByCA},
		{"pair of another node", func(t *testing.T, dir string) {
			copyTestFile(t, filepath.Join(dir, "n2.crt"), filepath.Join(dir, "n1.crt"))
			copyTestFile(t, filepath.Join(dir, "n2.key"), filepath.Join(dir, "n1.key"))
		}, "n1.crt", ErrWrongName},
		{"expired cert", func(t *testing.T, dir string) { saveIdentity(t, dir, "n1", issueExpired(t, dir, "n1")) }, "n1.crt", ErrExpired},
		{"cert not yet valid", func(t *testing.T, dir string) {
			now := time.Now()
			saveIdentity(t, dir, "n1", issueWindow(t, dir, "n1", now.Add(time.Hour), now.Add(48*time.Hour)))
		}, "n1.crt", ErrNotYetValid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newCluster(t, "n1", "n2")
			tc.brk(t, dir)
			id, err := Load(dir, "n1")
			if id != nil {
				t.Fatal("Load returned an identity with an error")
			}
			path := filepath.Join(dir, tc.file)
			wantFileError(t, err, tc.want, path)
			if !strings.Contains(err.Error(), path) {
				t.Errorf("message %q does not name %s", err, path)
			}
		})
	}
}

func TestLoadChecksValidityAtTheGivenTime(t *testing.T) {
	dir := newCluster(t, "n1")
	ca := filepath.Join(dir, CACertFile)
	crt, _ := Files(dir, "n1")
	_, err := load(dir, "n1", time.Now().AddDate(NodeValidityYears, 1, 0))
	wantFileError(t, err, ErrExpired, crt)
	_, err = load(dir, "n1", time.Now().AddDate(CAValidityYears, 1, 0))
	wantFileError(t, err, ErrExpired, ca)
	_, err = load(dir, "n1", time.Now().AddDate(0, 0, -1))
	wantFileError(t, err, ErrNotYetValid, ca)
}

func TestLoadAcceptsSEC1Keys(t *testing.T) {
	dir := newCluster(t, "n1")
	_, keyPath := Files(dir, "n1")
	key, err := parseKeyPEM(readTestFile(t, keyPath))
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	mustLoad(t, dir, "n1")
}

func TestLoadRejectsInvalidName(t *testing.T) {
	if _, err := Load(t.TempDir(), "../n1"); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("Load(../n1) = %v, want ErrInvalidName", err)
	}
}

func FuzzParsePEM(f *testing.F) {
	dir := newCluster(f, "n1")
	for _, name := range []string{CACertFile, CAKeyFile, "n1.crt", "n1.key"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := parseCertPEM(data); (c == nil) == (err == nil) {
			t.Fatalf("parseCertPEM: certificate %v with error %v", c != nil, err)
		} else if err != nil && !errors.Is(err, ErrBadPEM) && !errors.Is(err, ErrBadCertificate) {
			t.Fatalf("parseCertPEM: unclassified error %v", err)
		}
		if k, err := parseKeyPEM(data); (k == nil) == (err == nil) {
			t.Fatalf("parseKeyPEM: key %v with error %v", k != nil, err)
		} else if err != nil && !errors.Is(err, ErrBadPEM) && !errors.Is(err, ErrBadCertificate) {
			t.Fatalf("parseKeyPEM: unclassified error %v", err)
		}
	})
}
