package tlsx

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"n1", true},
		{"node-1", true},
		{"node_1", true},
		{"Node1.dc-east.example", true},
		{"10.0.0.1", true},
		{"a", true},
		{"-n", true},
		{strings.Repeat("a", 253), true},
		{"", false},
		{strings.Repeat("a", 254), false},
		{"ca", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"trailing.", false},
		{"a..b", false},
		{"a/b", false},
		{"../n1", false},
		{`a\b`, false},
		{"a b", false},
		{"a:b", false},
		{"nöde", false},
		{"a\x00b", false},
	} {
		err := ValidateName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, not ErrInvalidName", tc.name, err)
		}
	}
}

func TestSubjectAltNames(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		dns   []string
		ips   []string
		err   bool
	}{
		{hosts: nil, dns: []string{"n1"}, ips: []string{"127.0.0.1", "::1"}},
		{hosts: []string{}, dns: []string{"n1"}, ips: []string{"127.0.0.1", "::1"}},
		{hosts: []string{"10.1.2.3"}, dns: []string{"n1"}, ips: []string{"10.1.2.3"}},
		{hosts: []string{"db1.example.com"}, dns: []string{"n1", "db1.example.com"}},
		{hosts: []string{"2001:db8::1", "::ffff:10.0.0.1", "10.0.0.1"}, dns: []string{"n1"}, ips: []string{"2001:db8::1", "10.0.0.1"}},
		{hosts: []string{"N1", "n1", "db", "DB", "db"}, dns: []string{"n1", "db"}},
		{hosts: []string{"localhost", "127.0.0.1"}, dns: []string{"n1", "localhost"}, ips: []string{"127.0.0.1"}},
		{hosts: []string{"under_score.internal"}, dns: []string{"n1", "under_score.internal"}},
		{hosts: []string{""}, err: true},
		{hosts: []string{"a b"}, err: true},
		{hosts: []string{"*.example.com"}, err: true},
		{hosts: []string{"example.com."}, err: true},
		{hosts: []string{"a..b"}, err: true},
		{hosts: []string{"-a.b"}, err: true},
		{hosts: []string{"a-.b"}, err: true},
		{hosts: []string{strings.Repeat("a", 64) + ".b"}, err: true},
		{hosts: []string{"fe80::1%eth0"}, err: true},
		{hosts: []string{"[::1]"}, err: true},
		{hosts: []string{"10.0.0.1:7000"}, err: true},
		{hosts: []string{"http://x"}, err: true},
	} {
		dns, ips, err := subjectAltNames("n1", tc.hosts)
		if tc.err {
			if !errors.Is(err, ErrInvalidHost) {
				t.Errorf("hosts %q: error %v, want ErrInvalidHost", tc.hosts, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("hosts %q: %v", tc.hosts, err)
			continue
		}
		var got []string
		for _, ip := range ips {
			got = append(got, ip.String())
		}
		if !slices.Equal(dns, tc.dns) || !slices.Equal(got, tc.ips) {
			t.Errorf("hosts %q: DNS %q IP %q, want DNS %q IP %q", tc.hosts, dns, got, tc.dns, tc.ips)
		}
		for _, ip := range ips {
			if ip4 := ip.To4(); ip4 != nil && len(ip) != net.IPv4len {
				t.Errorf("hosts %q: IPv4 %v encoded in %d bytes", tc.hosts, ip, len(ip))
			}
		}
	}
}

// TestValidNamesVerifyAsHostnames checks that every name ValidateName accepts is one a peer's
// TLS client can verify: ClientConfig(name) checks the server certificate against name.
func TestValidNamesVerifyAsHostnames(t *testing.T) {
	now := time.Now()
	for _, name := range []string{"n1", "node_1", "Node1.dc-east.example", "-n", "a.b-c_d.E"} {
		if err := ValidateName(name); err != nil {
			t.Fatal(err)
		}
		dns, ips, err := subjectAltNames(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := nodeTemplate(name, RoleNode, dns, ips, now, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := sign(tmpl, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.VerifyHostname(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
}
