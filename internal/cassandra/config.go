package cassandra

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is the cassandra: section of sluice.yaml: the live Cassandra node this sluice is the
// sidecar of. The zero value of every optional field means its default (WithDefaults). Every
// field, by its YAML name:
//
//   - native_address: host:port of the local Cassandra node's CQL (native protocol) port,
//     required. The ring is read from this node alone: system.local is its own row.
//   - data_file_directories: the node's data_file_directories, as in cassandra.yaml, at least
//     one. The sidecar serves their sstables (read-only, through hard-link holds) and checks
//     that imports land in them.
//   - nodetool: the argv prefix that runs nodetool against that node, e.g.
//     [nodetool, -h, 127.0.0.1, -p, "7199"]; the import arguments are appended. Required
//     unless jmx_address is set (then imports go through the JMX client and nodetool is not
//     run).
//   - jmx_address: host:port of the node's JMX port (e.g. 127.0.0.1:7199). When set, imports
//     go through sluice's persistent JMX client (JMX, jmx.go): one small JVM, started once by
//     the sidecar and restarted if it dies, calls importNewSSTables for each import instead of
//     a nodetool JVM per import. Unset: nodetool import.
//   - jmx_username, jmx_password_file: JMX authentication (the file holds the password;
//     surrounding white space is ignored). Both or neither; only with jmx_address.
//   - java: the argv prefix that runs a Java 11+ runtime (a JRE suffices) for the JMX client,
//     default [java, -XX:+UseSerialGC, -Xmx64m, -XX:TieredStopAtLevel=1]; the client's
//     class path, class and service URL are appended. Only with jmx_address.
//   - staging_dirs: where received sstables wait for nodetool import, one per file system of
//     the data directories (JBOD: one per disk). Cassandra's importer puts each sstable in the
//     data directory its first token falls to (its disk boundaries, DiskBoundaries); sluice
//     stages it in the staging directory on that data directory's file system, so that the
//     import is a rename. Each must be writable by the Cassandra process, which moves the
//     files out of it. The first also holds the load journal and the record of imported
//     loads. Default: sluice-staging beside each data file directory (once per parent).
//   - staging_dir: the single staging directory of earlier configurations: the same as
//     staging_dirs: [staging_dir]. With staging_dirs, it may only repeat its first entry.
//     After WithDefaults it is always staging_dirs' first entry.
//   - username, password_file: the native protocol's PasswordAuthenticator credentials (the
//     file holds the password; surrounding white space is ignored). Both or neither.
//   - tls.ca, tls.cert, tls.key: client encryption of the native protocol: the CA that signed
//     the node's certificate (turns TLS on, with host verification against native_address's
//     host or tls.server_name), and a client certificate and key for client_encryption_options'
//     require_client_auth (both or neither).
//   - refresh_interval: how often the ring is read again (default 30s); schema and topology
//     events the driver delivers also trigger a read.
//   - timeout: bound on connecting and on each query (default 10s).
type Config struct {
	NativeAddress       string        `yaml:"native_address"`
	DataFileDirectories []string      `yaml:"data_file_directories"`
	Nodetool            []string      `yaml:"nodetool"`
	JMXAddress          string        `yaml:"jmx_address"`
	JMXUsername         string        `yaml:"jmx_username"`
	JMXPasswordFile     string        `yaml:"jmx_password_file"`
	Java                []string      `yaml:"java"`
	StagingDir          string        `yaml:"staging_dir"`
	StagingDirs         []string      `yaml:"staging_dirs"`
	Username            string        `yaml:"username"`
	PasswordFile        string        `yaml:"password_file"`
	TLS                 TLS           `yaml:"tls"`
	RefreshInterval     time.Duration `yaml:"refresh_interval"`
	Timeout             time.Duration `yaml:"timeout"`
}

// TLS is the native protocol's client encryption; the zero value is plain text.
type TLS struct {
	CA         string `yaml:"ca"`
	Cert       string `yaml:"cert"`
	Key        string `yaml:"key"`
	ServerName string `yaml:"server_name"`
}

// Enabled reports whether the native protocol runs over TLS.
func (t TLS) Enabled() bool { return t.CA != "" }

// Defaults of the optional fields.
const (
	DefaultRefreshInterval = 30 * time.Second
	DefaultTimeout         = 10 * time.Second
	// DefaultStagingName is the staging directory's name beside the first data directory.
	DefaultStagingName = "sluice-staging"
)

// DefaultJava is the java argv prefix of the JMX client: a small heap and the serial
// collector and C1 only, as befits a client that makes one remote call per import.
var DefaultJava = []string{"java", "-XX:+UseSerialGC", "-Xmx64m", "-XX:TieredStopAtLevel=1"}

// FieldError names the field of the cassandra section that failed validation, by its YAML
// path below the section ("native_address", "tls.cert").
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func fieldErrorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// WithDefaults returns c with every zero optional field set to its default. The slices are
// copies.
func (c Config) WithDefaults() Config {
	c.DataFileDirectories = append([]string(nil), c.DataFileDirectories...)
	c.Nodetool = append([]string(nil), c.Nodetool...)
	c.Java = append([]string(nil), c.Java...)
	if len(c.Java) == 0 && c.JMXAddress != "" {
		c.Java = append([]string(nil), DefaultJava...)
	}
	c.StagingDirs = append([]string(nil), c.StagingDirs...)
	switch {
	case len(c.StagingDirs) > 0:
	case c.StagingDir != "":
		c.StagingDirs = []string{c.StagingDir}
	default:
		seen := map[string]bool{}
		for _, d := range c.DataFileDirectories {
			if d == "" {
				continue
			}
			p := filepath.Join(filepath.Dir(filepath.Clean(d)), DefaultStagingName)
			if !seen[p] {
				seen[p] = true
				c.StagingDirs = append(c.StagingDirs, p)
			}
		}
	}
	if c.StagingDir == "" && len(c.StagingDirs) > 0 {
		c.StagingDir = c.StagingDirs[0]
	}
	if c.RefreshInterval == 0 {
		c.RefreshInterval = DefaultRefreshInterval
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// Resolve makes the section's relative paths relative to base (the configuration file's
// directory). The nodetool argv is left alone: it is a command line, not a path.
func (c *Config) Resolve(base string) {
	for i, d := range c.DataFileDirectories {
		c.DataFileDirectories[i] = resolve(base, d)
	}
	for i, d := range c.StagingDirs {
		c.StagingDirs[i] = resolve(base, d)
	}
	for _, p := range []*string{&c.StagingDir, &c.PasswordFile, &c.JMXPasswordFile, &c.TLS.CA, &c.TLS.Cert, &c.TLS.Key} {
		*p = resolve(base, *p)
	}
}

func resolve(base, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}

// Validate checks a section with defaults applied and names the first bad field. It touches
// neither the file system nor the network.
func (c Config) Validate() error {
	host, port, err := net.SplitHostPort(c.NativeAddress)
	switch {
	case c.NativeAddress == "":
		return fieldErrorf("native_address", "required (host:port of the node's CQL port, e.g. 127.0.0.1:9042)")
	case err != nil || host == "":
		return fieldErrorf("native_address", "%q: want host:port", c.NativeAddress)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fieldErrorf("native_address", "%q: bad port %q", c.NativeAddress, port)
	}
	if len(c.DataFileDirectories) == 0 {
		return fieldErrorf("data_file_directories", "at least one directory required (cassandra.yaml's data_file_directories)")
	}
	seen := map[string]bool{}
	for i, d := range c.DataFileDirectories {
		field := fmt.Sprintf("data_file_directories[%d]", i)
		switch clean := filepath.Clean(d); {
		case d == "":
			return fieldErrorf(field, "empty path")
		case !filepath.IsAbs(d):
			return fieldErrorf(field, "%q: want an absolute path", d)
		case seen[clean]:
			return fieldErrorf(field, "%q listed twice", d)
		default:
			seen[clean] = true
		}
	}
	if c.JMXAddress != "" {
		h, p, err := net.SplitHostPort(c.JMXAddress)
		if err != nil || h == "" {
			return fieldErrorf("jmx_address", "%q: want host:port", c.JMXAddress)
		}
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return fieldErrorf("jmx_address", "%q: bad port %q", c.JMXAddress, p)
		}
		if len(c.Java) == 0 || strings.TrimSpace(c.Java[0]) == "" {
			return fieldErrorf("java", "required with jmx_address: the argv prefix that runs java, e.g. [java]")
		}
	}
	if (c.JMXUsername == "") != (c.JMXPasswordFile == "") {
		return fieldErrorf("jmx_password_file", "jmx_username and jmx_password_file go together")
	}
	if c.JMXUsername != "" && c.JMXAddress == "" {
		return fieldErrorf("jmx_username", "only with jmx_address (nodetool takes its credentials on its argv)")
	}
	if c.JMXAddress == "" && (len(c.Nodetool) == 0 || strings.TrimSpace(c.Nodetool[0]) == "") {
		return fieldErrorf("nodetool", "required without jmx_address: the argv prefix that runs nodetool against the node, e.g. [nodetool, -h, 127.0.0.1, -p, \"7199\"]")
	}
	for _, a := range c.Nodetool {
		if a == "--no-verify-tokens" || a == "--no-tokens" || a == "-t" || a == "--quick" || a == "-q" || a == "--no-verify" || a == "-v" {
			return fieldErrorf("nodetool", "%q: the sidecar's imports keep Cassandra's verification on", a)
		}
	}
	if err := c.checkStaging("staging_dir", c.StagingDir); err != nil {
		return err
	}
	if len(c.StagingDirs) == 0 {
		return fieldErrorf("staging_dirs", "at least one directory required")
	}
	for i, d := range c.StagingDirs {
		field := fmt.Sprintf("staging_dirs[%d]", i)
		if err := c.checkStaging(field, d); err != nil {
			return err
		}
		for _, o := range c.StagingDirs[:i] {
			if overlaps(d, o) {
				return fieldErrorf(field, "%q overlaps staging directory %q", d, o)
			}
		}
	}
	if filepath.Clean(c.StagingDir) != filepath.Clean(c.StagingDirs[0]) {
		return fieldErrorf("staging_dir", "%q with staging_dirs %q: give staging_dirs alone (its first entry is the one staging_dir named)", c.StagingDir, c.StagingDirs)
	}
	if (c.Username == "") != (c.PasswordFile == "") {
		return fieldErrorf("password_file", "username and password_file go together")
	}
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		return fieldErrorf("tls.key", "tls.cert and tls.key go together")
	}
	if c.TLS.Cert != "" && c.TLS.CA == "" {
		return fieldErrorf("tls.ca", "required with tls.cert: the CA that signed the node's certificate")
	}
	if c.TLS.ServerName != "" && c.TLS.CA == "" {
		return fieldErrorf("tls.ca", "required with tls.server_name")
	}
	switch {
	case c.RefreshInterval < time.Second:
		return fieldErrorf("refresh_interval", "%v: want at least 1s", c.RefreshInterval)
	case c.Timeout <= 0:
		return fieldErrorf("timeout", "%v: want a positive duration", c.Timeout)
	}
	return nil
}

// checkStaging checks one staging directory: absolute, and neither inside a data file
// directory nor holding one.
func (c Config) checkStaging(field, p string) error {
	if p == "" || !filepath.IsAbs(p) {
		return fieldErrorf(field, "%q: want an absolute path", p)
	}
	for _, d := range c.DataFileDirectories {
		if overlaps(p, d) {
			return fieldErrorf(field, "%q overlaps data file directory %q: staging must be beside the live data, not in it", p, filepath.Clean(d))
		}
	}
	return nil
}

// overlaps reports whether a and b are the same directory or one holds the other.
func overlaps(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	sep := string(filepath.Separator)
	return a == b || strings.HasPrefix(a, b+sep) || strings.HasPrefix(b, a+sep)
}

// Password reads password_file ("" without one).
func (c Config) Password() (string, error) {
	if c.PasswordFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("cassandra.password_file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
