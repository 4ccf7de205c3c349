package gossip

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	keyA = []byte("0123456789abcdef0123456789abcdef")
	keyB = []byte("fedcba9876543210fedcba9876543210")
)

func validConfig() Config {
	return Config{Name: "n1", BindAddr: "127.0.0.1:0", ClusterKey: keyA, Label: "sluice-test"}
}

func TestConfigValidateNamesTheBadField(t *testing.T) {
	for _, tc := range []struct {
		field string
		mod   func(*Config)
	}{
		{"Name", func(c *Config) { c.Name = "" }},
		{"Name", func(c *Config) { c.Name = strings.Repeat("n", maxNameLen+1) }},
		{"BindAddr", func(c *Config) { c.BindAddr = "127.0.0.1" }},
		{"BindAddr", func(c *Config) { c.BindAddr = "127.0.0.1:99999" }},
		{"AdvertiseAddr", func(c *Config) { c.AdvertiseAddr = "10.0.0.1:0" }},
		{"Seeds[1]", func(c *Config) { c.Seeds = []string{"a:1", ""} }},
		{"ClusterKey", func(c *Config) { c.ClusterKey = nil }},
		{"ClusterKey", func(c *Config) { c.ClusterKey = []byte("short") }},
		{"ExtraKeys[0]", func(c *Config) { c.ExtraKeys = [][]byte{[]byte("bad")} }},
		{"Label", func(c *Config) { c.Label = "" }},
		{"Label", func(c *Config) { c.Label = strings.Repeat("l", 256) }},
		{"Meta", func(c *Config) { c.Meta.StreamAddr = strings.Repeat("s", 600) }},
		{"Meta", func(c *Config) { c.Meta.State = 99 }},
		{"GossipInterval", func(c *Config) { c.GossipInterval = -time.Second }},
		{"ProbeTimeout", func(c *Config) { c.ProbeInterval, c.ProbeTimeout = time.Second, 2*time.Second }},
		{"SuspicionMult", func(c *Config) { c.SuspicionMult = -1 }},
		{"EventBuffer", func(c *Config) { c.EventBuffer = -1 }},
	} {
		c := validConfig()
		tc.mod(&c)
		_, err := New(c)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), ": "+tc.field+": ") {
			t.Errorf("%s: err = %v", tc.field, err)
		}
	}
}

func TestConfigZeroValuesMeanDefaults(t *testing.T) {
	c := Config{Name: "n", ClusterKey: keyA, Label: "l"}.withDefaults()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if c.BindAddr != "0.0.0.0:7946" || c.GossipInterval != 200*time.Millisecond || c.ProbeInterval != time.Second ||
		c.ProbeTimeout != 500*time.Millisecond || c.SuspicionMult != 4 || c.PushPullInterval != 30*time.Second ||
		c.JoinRetry != time.Second || c.EventBuffer != 64 {
		t.Fatalf("defaults: %+v", c)
	}
	mc := c.memberlistConfig(nil)
	if mc.Name != "n" || mc.BindAddr != "0.0.0.0" || mc.BindPort != 7946 || mc.Label != "l" {
		t.Fatalf("memberlist config: name %q bind %s:%d label %q", mc.Name, mc.BindAddr, mc.BindPort, mc.Label)
	}
}

func TestNewCopiesKeys(t *testing.T) {
	c := validConfig()
	key := append([]byte(nil), keyA...)
	c.ClusterKey = key
	g, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	key[0] ^= 0xff
	if string(g.keyring.GetPrimaryKey()) != string(keyA) {
		t.Fatal("keyring aliases the caller's key")
	}
	if err := g.Shutdown(); err != nil {
		t.Fatal(err)
	}
}
