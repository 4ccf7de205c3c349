package cassandra

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestConfigDefaultsAndValidate(t *testing.T) {
	base := Config{NativeAddress: "127.0.0.1:9042", DataFileDirectories: []string{"/var/lib/cassandra/data"},
		Nodetool: []string{"nodetool", "-h", "127.0.0.1"}}
	c := base.WithDefaults()
	if c.StagingDir != "/var/lib/cassandra/sluice-staging" || c.RefreshInterval != DefaultRefreshInterval || c.Timeout != DefaultTimeout {
		t.Errorf("defaults: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"native_address", func(c *Config) { c.NativeAddress = "" }},
		{"native_address", func(c *Config) { c.NativeAddress = "127.0.0.1" }},
		{"native_address", func(c *Config) { c.NativeAddress = "127.0.0.1:0" }},
		{"data_file_directories", func(c *Config) { c.DataFileDirectories = nil }},
		{"data_file_directories[0]", func(c *Config) { c.DataFileDirectories = []string{"data"} }},
		{"data_file_directories[1]", func(c *Config) { c.DataFileDirectories = []string{"/d", "/d/"} }},
		{"nodetool", func(c *Config) { c.Nodetool = nil }},
		{"nodetool", func(c *Config) { c.Nodetool = []string{"nodetool", "--no-verify-tokens"} }},
		{"staging_dir", func(c *Config) { c.StagingDir = "/var/lib/cassandra/data/staging" }},
		{"staging_dir", func(c *Config) { c.StagingDir = "/var/lib/cassandra" }},
		{"staging_dir", func(c *Config) { c.StagingDir = "staging" }},
		{"password_file", func(c *Config) { c.Username = "sluice" }},
		{"tls.key", func(c *Config) { c.TLS = TLS{CA: "/ca", Cert: "/c"} }},
		{"tls.ca", func(c *Config) { c.TLS = TLS{Cert: "/c", Key: "/k"} }},
		{"refresh_interval", func(c *Config) { c.RefreshInterval = time.Millisecond }},
		{"timeout", func(c *Config) { c.Timeout = -time.Second }},
		{"jmx_address", func(c *Config) { c.JMXAddress = "127.0.0.1" }},
		{"jmx_address", func(c *Config) { c.JMXAddress = "127.0.0.1:0" }},
		{"jmx_password_file", func(c *Config) { c.JMXAddress, c.Java, c.JMXUsername = "127.0.0.1:7199", DefaultJava, "u" }},
		{"jmx_username", func(c *Config) { c.JMXUsername, c.JMXPasswordFile = "u", "/pw" }},
		{"java", func(c *Config) { c.JMXAddress, c.Java = "127.0.0.1:7199", []string{""} }},
	} {
		c := base.WithDefaults()
		tc.edit(&c)
		err := c.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("want an error naming %s, got %v", tc.field, err)
		}
	}
}

// With jmx_address, imports go through the JMX client: nodetool may be left out, and java
// defaults to a small client JVM.
func TestConfigJMX(t *testing.T) {
	c := Config{NativeAddress: "127.0.0.1:9042", DataFileDirectories: []string{"/var/lib/cassandra/data"}, JMXAddress: "127.0.0.1:7199"}.WithDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Java) == 0 || c.Java[0] != "java" {
		t.Errorf("java %q", c.Java)
	}
	if d := (Config{NativeAddress: "127.0.0.1:9042"}).WithDefaults(); d.Java != nil {
		t.Errorf("java %q without jmx_address", d.Java)
	}
	if j := NewJMX(c); j == nil || j.Address != "127.0.0.1:7199" || j.Java[0] != "java" {
		t.Fatalf("%+v", j)
	}
	if j := NewJMX(Config{}); j != nil {
		t.Errorf("no jmx_address: %+v", j)
	}
}

func TestConfigResolve(t *testing.T) {
	c := Config{DataFileDirectories: []string{"data", "/abs"}, PasswordFile: "pw", JMXPasswordFile: "jmx.pw", TLS: TLS{CA: "ca.crt"}, Nodetool: []string{"bin/nodetool"}}
	c.Resolve("/etc/sluice")
	if c.DataFileDirectories[0] != filepath.Join("/etc/sluice", "data") || c.DataFileDirectories[1] != "/abs" ||
		c.PasswordFile != "/etc/sluice/pw" || c.JMXPasswordFile != "/etc/sluice/jmx.pw" || c.TLS.CA != "/etc/sluice/ca.crt" || c.Nodetool[0] != "bin/nodetool" {
		t.Errorf("%+v", c)
	}
}

// Several data directories: a staging directory beside each (once per parent), the first
// also staging_dir; staging_dir alone is staging_dirs of one; the two together only agree.
func TestConfigStagingDirs(t *testing.T) {
	base := Config{NativeAddress: "127.0.0.1:9042", Nodetool: []string{"nodetool"},
		DataFileDirectories: []string{"/mnt/d1/cassandra/data", "/mnt/d2/cassandra/data", "/mnt/d2/cassandra/data2"}}
	c := base.WithDefaults()
	if want := []string{"/mnt/d1/cassandra/sluice-staging", "/mnt/d2/cassandra/sluice-staging"}; !slices.Equal(c.StagingDirs, want) || c.StagingDir != want[0] {
		t.Errorf("defaults: %q %q", c.StagingDirs, c.StagingDir)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	old := base
	old.StagingDir = "/srv/staging"
	if c := old.WithDefaults(); !slices.Equal(c.StagingDirs, []string{"/srv/staging"}) || c.Validate() != nil {
		t.Errorf("staging_dir alone: %q %v", c.StagingDirs, c.Validate())
	}
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"staging_dir", func(c *Config) { c.StagingDir, c.StagingDirs = "/srv/a", []string{"/srv/b", "/srv/a"} }},
		{"staging_dirs[1]", func(c *Config) { c.StagingDirs = []string{"/srv/a", "relative"} }},
		{"staging_dirs[1]", func(c *Config) { c.StagingDirs = []string{"/srv/a", "/mnt/d2/cassandra/data/x"} }},
		{"staging_dirs[1]", func(c *Config) { c.StagingDirs = []string{"/srv/a", "/srv/a/b"} }},
	} {
		c := base
		tc.edit(&c)
		c = c.WithDefaults()
		var fe *FieldError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("want an error naming %s, got %v", tc.field, err)
		}
	}
	ok := base
	ok.StagingDir, ok.StagingDirs = "/srv/a", []string{"/srv/a", "/srv/b"}
	if err := ok.WithDefaults().Validate(); err != nil {
		t.Errorf("staging_dir repeating staging_dirs' first: %v", err)
	}
	r := Config{StagingDirs: []string{"s1", "/s2"}}
	r.Resolve("/etc/sluice")
	if !slices.Equal(r.StagingDirs, []string{"/etc/sluice/s1", "/s2"}) {
		t.Errorf("resolve: %q", r.StagingDirs)
	}
}
