package tlsx

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
)

// Cluster directory file names of the certificate authority.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// maxNameLen is the longest DNS name; a node name is always one of its certificate's DNS SANs.
const maxNameLen = 253

// ValidateName reports whether name can name a node: 1 to 253 characters of [A-Za-z0-9._-],
// not starting or ending with '.', without "..", and not "ca" (whose files are the CA's). The
// name becomes a file name in the cluster directory and a DNS SAN that peers verify, so it
// must be both a plain base name and a host name. Errors wrap ErrInvalidName.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > maxNameLen:
		return fmt.Errorf("%w: %d characters, at most %d", ErrInvalidName, len(name), maxNameLen)
	case name == "ca":
		return fmt.Errorf("%w: %q is reserved for the cluster CA", ErrInvalidName, name)
	}
	for _, c := range []byte(name) {
		if !nameByte(c) {
			return fmt.Errorf("%w: %q: character %q not in [A-Za-z0-9._-]", ErrInvalidName, name, c)
		}
	}
	if name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return fmt.Errorf("%w: %q: '.' only between other characters", ErrInvalidName, name)
	}
	return nil
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// Files returns the certificate and key paths of node name in the cluster directory dir. It
// does not validate name.
func Files(dir, name string) (cert, key string) {
	return filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
}

// subjectAltNames returns the SANs of node name's certificate: name as the first DNS name, each
// host as an IP address or a further DNS name (duplicates dropped), and the loopback addresses
// 127.0.0.1 and ::1 when no host is given, so a single-machine cluster works out of the box.
func subjectAltNames(name string, hosts []string) (dns []string, ips []net.IP, err error) {
	dns = []string{name}
	seenIP := make(map[netip.Addr]bool)
	for _, h := range hosts {
		if ip, err := netip.ParseAddr(h); err == nil {
			if ip.Zone() != "" {
				return nil, nil, fmt.Errorf("%w: %q: an IP address in a certificate has no zone", ErrInvalidHost, h)
			}
			ip = ip.Unmap()
			if !seenIP[ip] {
				seenIP[ip] = true
				ips = append(ips, net.IP(ip.AsSlice()))
			}
			continue
		}
		if err := validateDNSName(h); err != nil {
			return nil, nil, err
		}
		if !containsFold(dns, h) {
			dns = append(dns, h)
		}
	}
	if len(hosts) == 0 {
		ips = []net.IP{net.IPv4(127, 0, 0, 1).To4(), net.IPv6loopback}
	}
	return dns, ips, nil
}

// validateDNSName accepts dot-separated labels of 1 to 63 letters, digits, '-' and '_' (Go's
// verifier and many internal zones accept '_'), at most 253 characters in all, without a
// trailing dot or wildcard: a node certificate names concrete hosts.
func validateDNSName(h string) error {
	if h == "" || len(h) > maxNameLen {
		return fmt.Errorf("%w: %q: want an IP address or a DNS name of 1 to %d characters", ErrInvalidHost, h, maxNameLen)
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("%w: %q: DNS labels have 1 to 63 characters", ErrInvalidHost, h)
		}
		for _, c := range []byte(label) {
			if !nameByte(c) {
				return fmt.Errorf("%w: %q: character %q not allowed in a DNS name", ErrInvalidHost, h, c)
			}
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("%w: %q: a DNS label neither starts nor ends with '-'", ErrInvalidHost, h)
		}
	}
	return nil
}

// containsFold reports whether list holds s ignoring ASCII case, as DNS names compare.
func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
