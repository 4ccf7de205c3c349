package tlsx

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// newCluster creates a cluster directory with a CA and the named nodes (no extra hosts).
func newCluster(t testing.TB, nodes ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteCA(dir, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := WriteNode(dir, n, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustLoad(t *testing.T, dir, name string) *Identity {
	t.Helper()
	id, err := Load(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// issueWindow issues node name under the CA in dir with the given validity and returns it as an
// identity; Load would refuse a window that does not contain now.
func issueWindow(t *testing.T, dir, name string, notBefore, notAfter time.Time) *Identity {
	t.Helper()
	ca, caKey, err := loadCA(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dns, ips, err := subjectAltNames(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := nodeTemplate(name, RoleNode, dns, ips, notBefore, notAfter)
	if err != nil {
		t.Fatal(err)
	}
	leaf, key, err := sign(tmpl, ca, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return newIdentity(name, ca, leaf, key)
}

// issueExpired issues node name under the CA in dir, valid for a day that ended an hour ago.
func issueExpired(t *testing.T, dir, name string) *Identity {
	now := time.Now()
	return issueWindow(t, dir, name, now.Add(-25*time.Hour), now.Add(-time.Hour))
}

// saveIdentity writes id's certificate and key as node name's files in dir.
func saveIdentity(t *testing.T, dir, name string, id *Identity) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(id.cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	crt, key := Files(dir, name)
	writeTestFile(t, crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: id.Certificate().Raw}))
	writeTestFile(t, key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func writeTestFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyTestFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, to, data)
}

func readTestFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readTestCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	c, err := parseCertPEM(readTestFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dirNames lists dir, so a test can tell that nothing (not even a temporary file) was left.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// wantFileError checks that err wraps want and names the file path.
func wantFileError(t *testing.T, err, want error, path string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != path {
		t.Fatalf("error %v does not name %s", err, filepath.Base(path))
	}
}
