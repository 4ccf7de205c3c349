package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the node's configuration, read from YAML (LoadConfig) and overridden by flags. The
// zero value of every optional field means its default; New fills the defaults and validates.
// Every field, by its YAML name:
//
//   - name: the node's name, required, [A-Za-z0-9._-]+ (not "." or ".."). It names the
//     node in logs and metrics and its certificate: tls_dir/NAME.crt and NAME.key.
//   - data_dirs: the data directories, at least one, in Cassandra's layout
//     <dir>/<keyspace>/<table>-<32 hex table id>/. Missing ones are created at start. Relative
//     paths in a file are relative to the file's directory.
//   - stream_addr: host:port the stream server listens on (UDP for quic, TCP for tcp).
//     Default 127.0.0.1:7400; give a routable address or ":7400" to reach other nodes.
//   - admin_addr: host:port of the admin HTTP API (status, streams, throughput, metrics).
//     Default 127.0.0.1:7401. The API has no authentication, so keep it on loopback; the
//     node warns at start when it is not.
//   - tls_dir: directory of the cluster CA and this node's certificate, required: ca.crt,
//     NAME.crt and NAME.key. Relative paths in a file are relative to the file's directory.
//   - throughput.outbound_bytes_per_second, throughput.inbound_bytes_per_second: the node-wide
//     streaming rate limits in bytes per second, 0 (the default) = unlimited. They can be
//     changed at run time through the admin API (sluice setstreamthroughput).
//   - timeouts.idle: a stream connection with no traffic for this long is closed (default 60s).
//   - timeouts.handshake: limit on establishing a connection, TLS included (default 10s).
//   - timeouts.keepalive: interval of keep-alive packets on an idle connection (default 15s);
//     it must be shorter than timeouts.idle. Durations are Go durations: "500ms", "1m30s".
//   - memory.max_in_flight_bytes: bound on the bytes of all receive buffers together; a
//     receiver stops reading from the network when it is reached (default 256 MiB, at least
//     1 MiB).
//   - transport: "quic" (default) or "tcp" (the data plane over plain TCP with sendfile and
//     splice, for networks where QUIC is slower or blocked).
type Config struct {
	Name       string     `yaml:"name"`
	DataDirs   []string   `yaml:"data_dirs"`
	StreamAddr string     `yaml:"stream_addr"`
	AdminAddr  string     `yaml:"admin_addr"`
	TLSDir     string     `yaml:"tls_dir"`
	Throughput Throughput `yaml:"throughput"`
	Timeouts   Timeouts   `yaml:"timeouts"`
	Memory     Memory     `yaml:"memory"`
	Transport  Transport  `yaml:"transport"`
}

// Throughput holds streaming rate limits in bytes per second; 0 = unlimited. The JSON form is
// the body of POST /v1/throughput.
type Throughput struct {
	OutboundBytesPerSecond int64 `yaml:"outbound_bytes_per_second" json:"outbound_bytes_per_second"`
	InboundBytesPerSecond  int64 `yaml:"inbound_bytes_per_second" json:"inbound_bytes_per_second"`
}

// Timeouts of stream connections; 0 = default (see Config).
type Timeouts struct {
	Idle      time.Duration `yaml:"idle"`
	Handshake time.Duration `yaml:"handshake"`
	Keepalive time.Duration `yaml:"keepalive"`
}

// Memory bounds; 0 = default (see Config).
type Memory struct {
	MaxInFlightBytes int64 `yaml:"max_in_flight_bytes"`
}

// Transport is the stream data plane.
type Transport string

const (
	TransportQUIC Transport = "quic"
	TransportTCP  Transport = "tcp"
)

// Defaults of the optional fields.
const (
	DefaultStreamAddr       = "127.0.0.1:7400"
	DefaultAdminAddr        = "127.0.0.1:7401"
	DefaultIdleTimeout      = 60 * time.Second
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultKeepalive        = 15 * time.Second
	DefaultMaxInFlightBytes = 256 << 20
	minInFlightBytes        = 1 << 20
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// LoadConfig reads a YAML configuration file. Unknown fields are errors (a misspelt field
// would otherwise silently keep its default). Relative data_dirs and tls_dir are resolved
// against the file's directory. The result is not validated: flags may still fill it in.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	base := filepath.Dir(path)
	for i, d := range c.DataDirs {
		c.DataDirs[i] = resolve(base, d)
	}
	c.TLSDir = resolve(base, c.TLSDir)
	return c, nil
}

func resolve(base, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}

// ParseConfig decodes YAML strictly (unknown fields are errors). An empty document is the
// zero Config.
func ParseConfig(b []byte) (Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, err
	}
	return c, nil
}

// withDefaults returns c with every zero optional field set to its default.
func (c Config) withDefaults() Config {
	c.DataDirs = append([]string(nil), c.DataDirs...)
	if c.StreamAddr == "" {
		c.StreamAddr = DefaultStreamAddr
	}
	if c.AdminAddr == "" {
		c.AdminAddr = DefaultAdminAddr
	}
	if c.Transport == "" {
		c.Transport = TransportQUIC
	}
	if c.Timeouts.Idle == 0 {
		c.Timeouts.Idle = DefaultIdleTimeout
	}
	if c.Timeouts.Handshake == 0 {
		c.Timeouts.Handshake = DefaultHandshakeTimeout
	}
	if c.Timeouts.Keepalive == 0 {
		c.Timeouts.Keepalive = DefaultKeepalive
	}
	if c.Memory.MaxInFlightBytes == 0 {
		c.Memory.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	return c
}

// validate checks a configuration with defaults applied and names the first bad field.
func (c Config) validate() error {
	switch {
	case c.Name == "":
		return configErrorf("name", "required")
	case !nameRE.MatchString(c.Name) || c.Name == "." || c.Name == "..":
		return configErrorf("name", "%q: want letters, digits, '.', '_' or '-'", c.Name)
	case len(c.Name) > 253:
		return configErrorf("name", "longer than 253 characters")
	case len(c.DataDirs) == 0:
		return configErrorf("data_dirs", "at least one directory required")
	}
	seen := map[string]bool{}
	for i, d := range c.DataDirs {
		if d == "" {
			return configErrorf(fmt.Sprintf("data_dirs[%d]", i), "empty path")
		}
		clean := filepath.Clean(d)
		if seen[clean] {
			return configErrorf(fmt.Sprintf("data_dirs[%d]", i), "%q listed twice", d)
		}
		seen[clean] = true
	}
	if err := validateAddr("stream_addr", c.StreamAddr); err != nil {
		return err
	}
	if err := validateAddr("admin_addr", c.AdminAddr); err != nil {
		return err
	}
	if c.TLSDir == "" {
		return configErrorf("tls_dir", "required (the directory of ca.crt, %s.crt and %s.key)", c.Name, c.Name)
	}
	switch {
	case c.Throughput.OutboundBytesPerSecond < 0:
		return configErrorf("throughput.outbound_bytes_per_second", "negative (%d); 0 means unlimited", c.Throughput.OutboundBytesPerSecond)
	case c.Throughput.InboundBytesPerSecond < 0:
		return configErrorf("throughput.inbound_bytes_per_second", "negative (%d); 0 means unlimited", c.Throughput.InboundBytesPerSecond)
	case c.Timeouts.Idle < 0:
		return configErrorf("timeouts.idle", "negative (%v)", c.Timeouts.Idle)
	case c.Timeouts.Handshake < 0:
		return configErrorf("timeouts.handshake", "negative (%v)", c.Timeouts.Handshake)
	case c.Timeouts.Keepalive < 0:
		return configErrorf("timeouts.keepalive", "negative (%v)", c.Timeouts.Keepalive)
	case c.Timeouts.Keepalive >= c.Timeouts.Idle:
		// A keep-alive no more frequent than the idle timeout cannot keep a connection open.
		return configErrorf("timeouts.keepalive", "%v: must be shorter than timeouts.idle (%v)", c.Timeouts.Keepalive, c.Timeouts.Idle)
	case c.Memory.MaxInFlightBytes < minInFlightBytes:
		return configErrorf("memory.max_in_flight_bytes", "%d: want at least %d", c.Memory.MaxInFlightBytes, minInFlightBytes)
	case c.Transport != TransportQUIC && c.Transport != TransportTCP:
		return configErrorf("transport", "%q: want quic or tcp", c.Transport)
	}
	return nil
}

func validateAddr(field, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return configErrorf(field, "%q: want host:port", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return configErrorf(field, "%q: bad port %q", addr, port)
	}
	return nil
}

// isLoopback reports whether addr's host is a loopback address or "localhost".
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
