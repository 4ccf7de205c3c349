package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/tlsx"
)

// TestCertCommands runs the cert commands in order on one directory: usage errors exit 2,
// refusals to overwrite exit 1, and what is written loads as a node identity.
func TestCertCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // printed paths, in order
		stderr string // a fragment of the error
	}{
		{[]string{"cert"}, 2, "", "want a subcommand"},
		{[]string{"cert", "bogus"}, 2, "", "unexpected arguments"},
		{[]string{"cert", "ca"}, 2, "", "--dir is required"},
		{[]string{"cert", "node", "--dir", dir, "--name", "n1"}, 1, "", "ca.crt: missing"},
		{[]string{"cert", "ca", "--dir", dir}, 0, "ca.crt ca.key", ""},
		{[]string{"cert", "ca", "--dir", dir}, 1, "", "already exists (pass --force"},
		{[]string{"cert", "ca", "--dir", dir, "--force"}, 0, "ca.crt ca.key", ""},
		{[]string{"cert", "node", "--dir", dir}, 2, "", "--name are required"},
		{[]string{"cert", "node", "--dir", dir, "--name", "../n1"}, 2, "", "invalid node name"},
		{[]string{"cert", "node", "--dir", dir, "--name", "n1", "--host", "a b"}, 2, "", "invalid host"},
		{[]string{"cert", "node", "--dir", dir, "--name", "n1", "--nope"}, 2, "", "unknown flag"},
		{[]string{"cert", "node", "--dir", dir, "--name", "n1", "--host", "10.0.0.1,n1.example", "--host", "::1"}, 0, "n1.crt n1.key", ""},
		{[]string{"cert", "node", "--dir", dir, "--name", "n1"}, 1, "", "n1.crt: already exists"},
		{[]string{"cert", "node", "--dir", dir, "--name", "n2"}, 0, "n2.crt n2.key", ""},
	} {
		code, stdout, stderr := sluice(t, tc.args...)
		var printed []string
		for _, p := range strings.Fields(stdout) {
			printed = append(printed, strings.TrimPrefix(p, dir+string(filepath.Separator)))
		}
		if code != tc.code || strings.Join(printed, " ") != tc.stdout || !strings.Contains(stderr, tc.stderr) {
			t.Fatalf("sluice %q: exit %d, stdout %q, stderr %q; want exit %d, paths %q, error containing %q",
				tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
	id, err := tlsx.Load(dir, "n1")
	if err != nil {
		t.Fatal(err)
	}
	c := id.Certificate()
	if strings.Join(c.DNSNames, " ") != "n1 n1.example" || len(c.IPAddresses) != 2 {
		t.Errorf("n1 SANs: DNS %q IP %v", c.DNSNames, c.IPAddresses)
	}
	if _, err := tlsx.Load(dir, "n2"); err != nil {
		t.Fatal(err)
	}
}
