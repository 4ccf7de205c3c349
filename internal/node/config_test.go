package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestTheExampleConfigLoadsAndValidates(t *testing.T) {
	c, err := LoadConfig("testdata/sluice.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Name:       "node-1",
		DataDirs:   []string{"/var/lib/sluice/data1", "/var/lib/sluice/data2"},
		StreamAddr: "10.0.0.1:7400",
		AdminAddr:  "127.0.0.1:7401",
		TLSDir:     filepath.Join("testdata", "tls"), // relative to the file
		Throughput: Throughput{OutboundBytesPerSecond: 100 << 20},
		Timeouts:   Timeouts{Idle: 60 * time.Second, Handshake: 10 * time.Second, Keepalive: 15 * time.Second},
		Memory:     Memory{MaxInFlightBytes: 256 << 20},
		Transport:  TransportQUIC,
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("loaded\n%+v\nwant\n%+v", c, want)
	}
	if err := c.withDefaults().validate(); err != nil {
		t.Fatal(err)
	}
	// The example spells out every default, so applying defaults changes nothing.
	if d := c.withDefaults(); !reflect.DeepEqual(d, want) {
		t.Fatalf("defaults changed an explicit config: %+v", d)
	}
}

// fill_after_receive reaches the stream layer a node's fetches use.
func TestFillAfterReceiveReachesTheStreamLayer(t *testing.T) {
	for _, v := range []bool{false, true} {
		c, err := ParseConfig(fmt.Appendf(nil, "name: n\ndata_dirs: [/d]\ntls_dir: /t\nfill_after_receive: %v\n", v))
		if err != nil {
			t.Fatal(err)
		}
		n := &Node{cfg: c}
		if got := StreamSettings(n.streamConfig()).FillAfterReceive; got != v {
			t.Errorf("fill_after_receive: %v gave stream FillAfterReceive %v", v, got)
		}
	}
}

func TestTheZeroValueOfEveryOptionalFieldIsItsDefault(t *testing.T) {
	c, err := ParseConfig([]byte("name: a\ndata_dirs: [/d]\ntls_dir: /tls\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Name: "a", DataDirs: []string{"/d"}, TLSDir: "/tls",
		StreamAddr: DefaultStreamAddr, AdminAddr: DefaultAdminAddr,
		Timeouts:  Timeouts{Idle: DefaultIdleTimeout, Handshake: DefaultHandshakeTimeout, Keepalive: DefaultKeepalive},
		Memory:    Memory{MaxInFlightBytes: DefaultMaxInFlightBytes},
		Transport: TransportQUIC,
	}
	if got := c.withDefaults(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if err := want.validate(); err != nil {
		t.Fatal(err)
	}
	if c, err := ParseConfig(nil); err != nil || !reflect.DeepEqual(c, Config{}) {
		t.Fatalf("empty document: %+v, %v", c, err)
	}
}

func TestParseConfigRejectsWhatItCannotRepresent(t *testing.T) {
	for _, doc := range []string{
		"nmae: a\n",              // misspelt field
		"timeouts: {idel: 5s}\n", // misspelt nested field
		"timeouts: {idle: 60}\n", // a bare number is not a duration
		"throughput: {inbound_bytes_per_second: fast}\n",
		"data_dirs: /one\n", // a list is required
		"name: [a]\n",
	} {
		if _, err := ParseConfig([]byte(doc)); err == nil {
			t.Errorf("%q: parsed", doc)
		}
	}
}

func TestValidateNamesTheBadField(t *testing.T) {
	good := func() Config {
		return Config{Name: "n1", DataDirs: []string{"/a", "/b"}, TLSDir: "/tls"}
	}
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"name", func(c *Config) { c.Name = "" }},
		{"name", func(c *Config) { c.Name = "no spaces" }},
		{"name", func(c *Config) { c.Name = "a/b" }},
		{"name", func(c *Config) { c.Name = ".." }},
		{"name", func(c *Config) { c.Name = strings.Repeat("n", 254) }},
		{"data_dirs", func(c *Config) { c.DataDirs = nil }},
		{"data_dirs[1]", func(c *Config) { c.DataDirs = []string{"/a", ""} }},
		{"data_dirs[1]", func(c *Config) { c.DataDirs = []string{"/a", "/a/"} }},
		{"stream_addr", func(c *Config) { c.StreamAddr = "localhost" }},
		{"stream_addr", func(c *Config) { c.StreamAddr = "localhost:http" }},
		{"admin_addr", func(c *Config) { c.AdminAddr = "127.0.0.1:70000" }},
		{"tls_dir", func(c *Config) { c.TLSDir = "" }},
		{"throughput.outbound_bytes_per_second", func(c *Config) { c.Throughput.OutboundBytesPerSecond = -1 }},
		{"throughput.inbound_bytes_per_second", func(c *Config) { c.Throughput.InboundBytesPerSecond = -1 }},
		{"timeouts.idle", func(c *Config) { c.Timeouts.Idle = -time.Second }},
		{"timeouts.handshake", func(c *Config) { c.Timeouts.Handshake = -time.Second }},
		{"timeouts.keepalive", func(c *Config) { c.Timeouts.Keepalive = -time.Second }},
		{"timeouts.keepalive", func(c *Config) { c.Timeouts.Keepalive = time.Minute; c.Timeouts.Idle = time.Minute }},
		{"memory.max_in_flight_bytes", func(c *Config) { c.Memory.MaxInFlightBytes = -1 }},
		{"memory.max_in_flight_bytes", func(c *Config) { c.Memory.MaxInFlightBytes = 1000 }},
		{"transport", func(c *Config) { c.Transport = "udp" }},
		{"tcp_congestion", func(c *Config) { c.TCPCongestion = "bbr" }}, // with transport quic
	} {
		c := good()
		tc.edit(&c)
		_, err := New(Options{Config: c})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("message %q does not name %s", err, tc.field)
		}
	}
	if _, err := New(Options{Config: good()}); err != nil {
		t.Fatal(err)
	}
}

func TestLoopbackDetection(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7401": true, "[::1]:7401": true, "localhost:1": true, "127.1.2.3:0": true,
		"0.0.0.0:7401": false, ":7401": false, "10.0.0.1:7401": false, "example.com:1": false,
	} {
		if got := isLoopback(addr); got != want {
			t.Errorf("%s: %v", addr, got)
		}
	}
}

func TestMembershipConfigParsesReplicationAndDefaults(t *testing.T) {
	c, err := ParseConfig([]byte("name: a\ndata_dirs: [/d]\ntls_dir: /tls\ngossip_addr: 127.0.0.1:7946\n" +
		"cluster_key_file: /k\nkeyspaces:\n  s: {class: SimpleStrategy, replication_factor: 3}\n" +
		"  n: {class: org.apache.cassandra.locator.NetworkTopologyStrategy, dc1: 2, dc2: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Replication{
		"s": {Class: SimpleStrategy, ReplicationFactor: 3},
		"n": {Class: NetworkTopologyStrategy, DCs: map[string]int{"dc1": 2, "dc2": 1}},
	}
	if !reflect.DeepEqual(c.Keyspaces, want) {
		t.Fatalf("keyspaces %+v", c.Keyspaces)
	}
	d := c.withDefaults()
	if d.NumTokens != DefaultNumTokens || d.DC != DefaultDC || d.Rack != DefaultRack || d.ClusterLabel != DefaultClusterLabel {
		t.Fatalf("defaults %+v", d)
	}
	if err := d.validate(); err != nil {
		t.Fatal(err)
	}
	d.InitialTokens = []int64{1, 2}
	if d = d.withDefaults(); d.NumTokens != 2 {
		t.Fatalf("explicit tokens set num_tokens to %d", d.NumTokens)
	}
}

func TestMembershipConfigErrorsNameTheField(t *testing.T) {
	base := func() Config {
		return Config{Name: "a", DataDirs: []string{"/d"}, TLSDir: "/t", GossipAddr: "127.0.0.1:1", ClusterKeyFile: "/k"}
	}
	for _, tc := range []struct {
		field string
		edit  func(c *Config)
	}{
		{"cluster_key_file", func(c *Config) { c.ClusterKeyFile = "" }},
		{"gossip_addr", func(c *Config) { c.GossipAddr = "nohost" }},
		{"gossip_addr", func(c *Config) { c.GossipAddr = ""; c.ClusterKeyFile = ""; c.Bootstrap = true }},
		{"seeds[1]", func(c *Config) { c.Seeds = []string{"a:1", "b"} }},
		{"num_tokens", func(c *Config) { c.NumTokens = -1 }},
		{"initial_tokens", func(c *Config) { c.InitialTokens = []int64{3, 3} }},
		{"initial_tokens", func(c *Config) { c.InitialTokens = []int64{-1 << 63} }},
		{"replace_address", func(c *Config) { c.ReplaceAddress = "n3"; c.Bootstrap = true }},
		{"replace_address", func(c *Config) { c.ReplaceAddress = "n3"; c.InitialTokens = []int64{5} }},
		{"replace_address", func(c *Config) { c.ReplaceAddress = c.Name }},
		{"gossip_addr", func(c *Config) { c.GossipAddr = ""; c.ClusterKeyFile = ""; c.ReplaceAddress = "n3" }},
		{"keyspaces.k", func(c *Config) { c.Keyspaces = map[string]Replication{"k": {Class: "Everywhere"}} }},
		{"keyspaces.k", func(c *Config) { c.Keyspaces = map[string]Replication{"k": {Class: SimpleStrategy}} }},
		{"keyspaces.k", func(c *Config) {
			c.Keyspaces = map[string]Replication{"k": {Class: NetworkTopologyStrategy, ReplicationFactor: 2}}
		}},
	} {
		c := base()
		tc.edit(&c)
		var ce *ConfigError
		if err := c.withDefaults().validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
}

func TestLoadClusterKeyTakesRawOrHexKeys(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		want    int // key length, 0 = error
	}{
		{strings.Repeat("k", 16), 16},
		{strings.Repeat("k", 24), 24},
		{strings.Repeat("k", 32), 32},
		{strings.Repeat("0f", 16) + "\n", 16},
		{strings.Repeat("0f", 32), 32},
		{strings.Repeat("k", 17), 0},
		{"", 0},
	} {
		p := filepath.Join(dir, "key")
		if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := LoadClusterKey(p)
		if (tc.want == 0) != (err != nil) || len(k) != tc.want && tc.want != 0 {
			t.Errorf("%q: key of %d bytes, %v; want %d", tc.content, len(k), err, tc.want)
		}
	}
	if _, err := LoadClusterKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing key file loaded")
	}
}

func TestTheClusterExampleConfigLoadsAndValidates(t *testing.T) {
	c, err := LoadConfig("testdata/sluice.cluster.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.withDefaults().validate(); err != nil {
		t.Fatal(err)
	}
	if !c.Membership() || !c.Bootstrap || c.ClusterKeyFile != filepath.Join("testdata", "cluster.key") || len(c.Keyspaces) != 2 || len(c.Seeds) != 2 {
		t.Fatalf("loaded %+v", c)
	}
}
