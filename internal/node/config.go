package node

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
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
//   - stream_addr: host:port the stream server listens on (UDP for the QUIC sessions, and
//     TCP at the same port for the data plane of transport tls or tcp).
//     Default 127.0.0.1:7400; give a routable address or ":7400" to reach other nodes.
//   - admin_addr: host:port of the admin HTTP API (status, streams, throughput, metrics,
//     operations). Default 127.0.0.1:7401. Every request needs the admin token; keep it on
//     loopback all the same (the token travels in clear text); the node warns when it is not.
//   - admin_token_file: the admin token, created with mode 0600 on first start; default
//     admin-PORT.token under $XDG_CONFIG_HOME/sluice (~/.config/sluice), where the CLI finds it.
//   - client_fetch_keyspaces: the keyspaces a client certificate (sluice cert client) may
//     fetch; none by default. Node certificates fetch every keyspace.
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
//   - transport: the data plane of the bulk bytes. "quic" (default: needs nothing but the one
//     UDP port); "tls" (TLS 1.3 over TCP with the node's certificate and the cluster CA, as
//     mutually authenticated as QUIC: the recommended fast path); "tcp" (plain, unencrypted
//     TCP with sendfile and splice: trusted networks only). A fetch uses tls or tcp only
//     when both nodes run the same one; otherwise its data goes over QUIC.
//   - tcp_congestion: TCP congestion control of the tls/tcp data connections ("bbr",
//     "cubic", ... as the kernel offers them); empty (default) = the kernel's default.
//
// Membership (optional: without gossip_addr the node runs standalone, without a ring):
//
//   - gossip_addr: host:port gossip listens on (UDP and TCP) and is reached at; it turns
//     membership on. Port 0 picks a free port (tests).
//   - seeds: host:port gossip addresses of existing members; none (or only itself) forms a
//     new cluster.
//   - num_tokens: tokens the node claims, default 16.
//   - initial_tokens: explicit Murmur3 tokens (their count overrides num_tokens); a node that
//     will be moved must have exactly one.
//   - bootstrap: a new node (no saved membership state) allocates balanced tokens against the
//     ring it sees and streams its ranges from their current replicas before it becomes
//     NORMAL. Without it a new node takes random tokens seeded by its name and is NORMAL at
//     once, as the first nodes of a cluster are.
//   - replace_address: the name of a dead member this new node replaces (Cassandra's
//     replace_address_first_boot): it takes that member's tokens, streams the ranges they
//     replicate from the surviving replicas without announcing a state, then becomes NORMAL
//     with them, and the replaced member leaves the ring. Not with bootstrap or
//     initial_tokens.
//   - dc, rack: the node's place for NetworkTopologyStrategy; default dc1 and rack1.
//   - cluster_key_file: the file of the AES key (16, 24 or 32 bytes, raw or in hex) that
//     encrypts and authenticates gossip; required with gossip_addr. Relative to the file. The
//     key admits to gossip only: a member counts in the ring once it proved its name with its
//     node certificate at its stream address.
//   - cluster_label: nodes with another label never merge; default "sluice".
//   - keyspaces: replication per keyspace, which bootstrap, decommission, move, cleanup and
//     ownership follow: {ks: {class: SimpleStrategy, replication_factor: 2}} or
//     {ks: {class: NetworkTopologyStrategy, dc1: 2, dc2: 1}}. Every node must have the same
//     map; tables of keyspaces not listed are left alone by every operation.
//
// Cassandra sidecar (optional; internal/cassandra documents every field):
//
//   - cassandra: the live Cassandra node this sluice sits beside: native_address,
//     data_file_directories, nodetool (an argv prefix), and optionally staging_dirs (or the
//     single staging_dir of earlier configurations), username, password_file, tls {ca, cert,
//     key, server_name}, refresh_interval, timeout. With it the
//     ring is Cassandra's (read over CQL, GET /v1/cassandra/ring), the node serves the
//     sstables of data_file_directories (data_dirs defaults to them and may only repeat them)
//     and imports into the live node only through nodetool import (POST /v1/cassandra/import).
//     sluice's own token ring does not describe Cassandra's: bootstrap, replace_address,
//     initial_tokens and keyspaces are refused with it.
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
	// TCPCongestion: see tcp_congestion above.
	TCPCongestion string `yaml:"tcp_congestion"`
	// FillAfterReceive: a compressed partial is received as the sender laid it out, then
	// filled into a copy (stream.Config.FillAfterReceive), instead of filled as it arrives.
	FillAfterReceive bool `yaml:"fill_after_receive"`

	GossipAddr     string                 `yaml:"gossip_addr"`
	Seeds          []string               `yaml:"seeds"`
	NumTokens      int                    `yaml:"num_tokens"`
	InitialTokens  []int64                `yaml:"initial_tokens"`
	Bootstrap      bool                   `yaml:"bootstrap"`
	ReplaceAddress string                 `yaml:"replace_address"`
	DC             string                 `yaml:"dc"`
	Rack           string                 `yaml:"rack"`
	ClusterKeyFile string                 `yaml:"cluster_key_file"`
	ClusterLabel   string                 `yaml:"cluster_label"`
	Keyspaces      map[string]Replication `yaml:"keyspaces"`

	// ClientFetchKeyspaces are the keyspaces a client certificate (sluice cert client) may
	// fetch from this node; node certificates fetch everything.
	ClientFetchKeyspaces []string `yaml:"client_fetch_keyspaces"`
	// AdminTokenFile holds the admin API's bearer token, created (mode 0600) on first start.
	// Default: admin-<port>.token in the user's configuration directory (sluice/ under
	// $XDG_CONFIG_HOME or ~/.config), where the CLI on the same host finds it.
	AdminTokenFile string `yaml:"admin_token_file"`

	// Cassandra makes the node the sidecar of a live Cassandra node; nil: no such node.
	Cassandra *cassandra.Config `yaml:"cassandra"`
}

// Sidecar reports whether the configuration has a cassandra section.
func (c Config) Sidecar() bool { return c.Cassandra != nil }

// Membership reports whether the configuration turns membership on (gossip_addr is set).
func (c Config) Membership() bool { return c.GossipAddr != "" }

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
	TransportTLS  Transport = "tls"
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
	DefaultNumTokens        = 16
	DefaultDC               = "dc1"
	DefaultRack             = "rack1"
	DefaultClusterLabel     = "sluice"
	// maxNumTokens is the most tokens a member may hold: peers refuse larger sets.
	maxNumTokens = gossip.MaxTokensPerNode
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
	c.ClusterKeyFile = resolve(base, c.ClusterKeyFile)
	if c.Cassandra != nil {
		c.Cassandra.Resolve(base)
	}
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
	if c.Cassandra != nil {
		cc := c.Cassandra.WithDefaults()
		c.Cassandra = &cc
		if len(c.DataDirs) == 0 {
			// The sidecar serves the live node's sstables.
			c.DataDirs = append([]string(nil), cc.DataFileDirectories...)
		}
	}
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
	if c.Membership() {
		// Membership defaults only apply to a node that has membership, so a standalone
		// configuration stays as it was written.
		if c.NumTokens == 0 {
			c.NumTokens = DefaultNumTokens
		}
		if len(c.InitialTokens) > 0 {
			c.NumTokens = len(c.InitialTokens)
		}
		if c.DC == "" {
			c.DC = DefaultDC
		}
		if c.Rack == "" {
			c.Rack = DefaultRack
		}
		if c.ClusterLabel == "" {
			c.ClusterLabel = DefaultClusterLabel
		}
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
	case c.Transport != TransportQUIC && c.Transport != TransportTCP && c.Transport != TransportTLS:
		return configErrorf("transport", "%q: want quic, tls or tcp", c.Transport)
	case c.TCPCongestion != "" && c.Transport == TransportQUIC:
		return configErrorf("tcp_congestion", "%q: needs transport tls or tcp", c.TCPCongestion)
	}
	for _, ks := range sortedKeys(c.Keyspaces) {
		if err := cqlname.Check("keyspace", ks); err != nil {
			return configErrorf("keyspaces", "%v", err)
		}
		if _, err := c.Keyspaces[ks].Strategy(); err != nil {
			return configErrorf("keyspaces."+ks, "%v", err)
		}
	}
	for _, ks := range c.ClientFetchKeyspaces {
		if err := cqlname.Check("keyspace", ks); err != nil {
			return configErrorf("client_fetch_keyspaces", "%v", err)
		}
	}
	if c.Cassandra != nil {
		if err := c.validateCassandra(); err != nil {
			return err
		}
	}
	if !c.Membership() {
		if len(c.Seeds) > 0 || c.Bootstrap || c.ClusterKeyFile != "" || c.ReplaceAddress != "" {
			return configErrorf("gossip_addr", "required with seeds, bootstrap, replace_address or cluster_key_file")
		}
		return nil
	}
	if err := validateAddr("gossip_addr", c.GossipAddr); err != nil {
		return err
	}
	for i, s := range c.Seeds {
		if err := validateAddr(fmt.Sprintf("seeds[%d]", i), s); err != nil {
			return err
		}
	}
	switch {
	case c.NumTokens < 1 || c.NumTokens > maxNumTokens:
		return configErrorf("num_tokens", "%d: want 1 to %d", c.NumTokens, maxNumTokens)
	case c.ClusterKeyFile == "":
		return configErrorf("cluster_key_file", "required with gossip_addr")
	case len(c.ClusterLabel) > 255:
		return configErrorf("cluster_label", "longer than 255 bytes")
	}
	if c.ReplaceAddress != "" {
		switch {
		case c.Bootstrap || len(c.InitialTokens) > 0:
			return configErrorf("replace_address", "not with bootstrap or initial_tokens: the replaced node's tokens are taken")
		case c.ReplaceAddress == c.Name:
			return configErrorf("replace_address", "%q is this node", c.ReplaceAddress)
		}
	}
	seenTok := map[int64]bool{}
	for _, t := range c.InitialTokens {
		if t == math.MinInt64 {
			// No key maps to the minimum token, so it cannot bound a range.
			return configErrorf("initial_tokens", "%d is the minimum token, which no node may hold", t)
		}
		if seenTok[t] {
			return configErrorf("initial_tokens", "%d listed twice", t)
		}
		seenTok[t] = true
	}
	return nil
}

// validateCassandra checks the cassandra section (defaults applied) and what it excludes.
func (c Config) validateCassandra() error {
	if err := c.Cassandra.Validate(); err != nil {
		var fe *cassandra.FieldError
		if errors.As(err, &fe) {
			return configErrorf("cassandra."+fe.Field, "%s", fe.Reason)
		}
		return configErrorf("cassandra", "%v", err)
	}
	want := map[string]bool{}
	for _, d := range c.Cassandra.DataFileDirectories {
		want[filepath.Clean(d)] = true
	}
	for _, d := range c.DataDirs {
		if !want[filepath.Clean(d)] {
			return configErrorf("data_dirs", "%q is not one of cassandra.data_file_directories: a sidecar serves the live node's data; leave data_dirs out", d)
		}
	}
	if len(c.DataDirs) != len(want) {
		return configErrorf("data_dirs", "lists %d of the %d cassandra.data_file_directories; leave data_dirs out", len(c.DataDirs), len(want))
	}
	switch {
	case c.Bootstrap:
		return configErrorf("bootstrap", "not with cassandra: the ring is Cassandra's, and Cassandra bootstraps its node")
	case c.ReplaceAddress != "":
		return configErrorf("replace_address", "not with cassandra: the ring is Cassandra's")
	case len(c.InitialTokens) > 0:
		return configErrorf("initial_tokens", "not with cassandra: the ring is Cassandra's")
	case len(c.Keyspaces) > 0:
		return configErrorf("keyspaces", "not with cassandra: replication comes from Cassandra's system_schema.keyspaces")
	}
	return nil
}

// Replication is one keyspace's replication: class SimpleStrategy with replication_factor, or
// NetworkTopologyStrategy with a factor per DC. In YAML it is a flat map, as in CQL:
// {class: SimpleStrategy, replication_factor: 2} or {class: NetworkTopologyStrategy, dc1: 2}.
type Replication struct {
	Class             string
	ReplicationFactor int
	DCs               map[string]int
}

// Replication classes.
const (
	SimpleStrategy          = "SimpleStrategy"
	NetworkTopologyStrategy = "NetworkTopologyStrategy"
)

// UnmarshalYAML reads the flat CQL-like map.
func (r *Replication) UnmarshalYAML(n *yaml.Node) error {
	var m map[string]string
	if err := n.Decode(&m); err != nil {
		return err
	}
	*r = Replication{}
	for k, v := range m {
		if k == "class" {
			r.Class = strings.TrimPrefix(v, "org.apache.cassandra.locator.")
			continue
		}
		f, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("replication %s: %q is not a number", k, v)
		}
		if k == "replication_factor" {
			r.ReplicationFactor = f
			continue
		}
		if r.DCs == nil {
			r.DCs = map[string]int{}
		}
		r.DCs[k] = f
	}
	return nil
}

// MarshalYAML writes the flat map back.
func (r Replication) MarshalYAML() (any, error) {
	m := map[string]any{"class": r.Class}
	if r.Class == SimpleStrategy {
		m["replication_factor"] = r.ReplicationFactor
	}
	for dc, f := range r.DCs {
		m[dc] = f
	}
	return m, nil
}

// Strategy returns the ring strategy of the replication, or why it is invalid.
func (r Replication) Strategy() (ring.Strategy, error) {
	switch r.Class {
	case SimpleStrategy:
		if len(r.DCs) > 0 {
			return nil, fmt.Errorf("SimpleStrategy takes only replication_factor")
		}
		if r.ReplicationFactor < 1 {
			return nil, fmt.Errorf("SimpleStrategy: replication_factor %d: want at least 1", r.ReplicationFactor)
		}
		return ring.SimpleStrategy{RF: r.ReplicationFactor}, nil
	case NetworkTopologyStrategy:
		if r.ReplicationFactor != 0 {
			return nil, fmt.Errorf("NetworkTopologyStrategy takes a factor per DC, not replication_factor")
		}
		if len(r.DCs) == 0 {
			return nil, fmt.Errorf("NetworkTopologyStrategy: no DC listed")
		}
		rf := make(map[string]int, len(r.DCs))
		for dc, f := range r.DCs {
			if f < 0 {
				return nil, fmt.Errorf("NetworkTopologyStrategy: %s: negative factor %d", dc, f)
			}
			rf[dc] = f
		}
		return ring.NetworkTopologyStrategy{RF: rf}, nil
	}
	return nil, fmt.Errorf("class %q: want SimpleStrategy or NetworkTopologyStrategy", r.Class)
}

// LoadClusterKey reads a cluster key file: 16, 24 or 32 raw bytes, or their hex form
// (surrounding white space ignored). A file of 32, 48 or 64 hex digits is read as hex, so a
// raw key must not consist of hex digits only.
func LoadClusterKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster_key_file: %w", err)
	}
	if t := bytes.TrimSpace(b); len(t) == 32 || len(t) == 48 || len(t) == 64 {
		if k, err := hex.DecodeString(string(t)); err == nil {
			return k, nil
		}
	}
	switch len(b) {
	case 16, 24, 32:
		return b, nil
	}
	return nil, fmt.Errorf("cluster_key_file %s: want 16, 24 or 32 bytes, raw or in hex; the file has %d bytes", path, len(b))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
