package interop

// The one place the live tests configure, start and stop a Cassandra node and a sluice
// sidecar, and open a CQL session.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// cassandraConf is the cassandra.yaml of one live Cassandra 5.0 node, data under Dir.
type cassandraConf struct {
	Cluster         string
	Dir             string
	Host            string // listen_address and rpc_address; "" is 127.0.0.1
	Seed            string // the seed's host; "" is 127.0.0.1
	Storage, Native int
	NumTokens       int    // 0 is 16
	InitialToken    string // "" leaves it out
	Snitch          string // "" is SimpleSnitch
	Bootstrap       *bool  // auto_bootstrap; nil leaves it out (Cassandra's default, true)
	Extra           string // further lines
}

func (c cassandraConf) yaml() string {
	host, seed, snitch, tokens := cmp.Or(c.Host, "127.0.0.1"), cmp.Or(c.Seed, "127.0.0.1"), cmp.Or(c.Snitch, "SimpleSnitch"), c.NumTokens
	if tokens == 0 {
		tokens = 16
	}
	y := fmt.Sprintf(`cluster_name: %[1]s
num_tokens: %[2]d
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
data_file_directories: [%[3]s/data]
commitlog_directory: %[3]s/commitlog
saved_caches_directory: %[3]s/saved_caches
hints_directory: %[3]s/hints
cdc_raw_directory: %[3]s/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
endpoint_snitch: %[4]s
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "%[5]s:%[6]d"
listen_address: %[7]s
rpc_address: %[7]s
storage_port: %[6]d
native_transport_port: %[8]d
start_native_transport: true
storage_compatibility_mode: NONE
concurrent_compactors: 1
auto_snapshot: false
`, c.Cluster, tokens, c.Dir, snitch, seed, c.Storage, host, c.Native)
	if c.InitialToken != "" {
		y += "initial_token: " + c.InitialToken + "\n"
	}
	if c.Bootstrap != nil {
		y += fmt.Sprintf("auto_bootstrap: %v\n", *c.Bootstrap)
	}
	return y + c.Extra
}

// rackDC writes dir/cassandra-rackdc.properties (GossipingPropertyFileSnitch's place of the
// node) and returns the JVM property that names it.
func rackDC(t *testing.T, dir, dc, rack string) string {
	t.Helper()
	props := filepath.Join(dir, "cassandra-rackdc.properties")
	if err := os.WriteFile(props, []byte("dc="+dc+"\nrack="+rack+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return "-Dcassandra-rackdc.properties=file://" + props
}

// gossipSettle is the JVM property that has a node start without waiting for gossip to settle.
const gossipSettle = "-Dcassandra.skip_wait_for_gossip_to_settle=0"

// cassandraArgv is the command line of a CassandraDaemon (cassandra.sh java: the same jars as
// the harness) with dir/cassandra.yaml, JMX on loopback at jmx, and props.
func cassandraArgv(dir string, jmx int, props ...string) []string {
	argv := []string{filepath.Join(repo, "interop", "cassandra.sh"), "java",
		"-Dcassandra.config=file://" + filepath.Join(dir, "cassandra.yaml"), "-Dcassandra-foreground=yes",
		fmt.Sprintf("-Dcassandra.jmx.local.port=%d", jmx), "-Dcassandra.storagedir=" + dir, "-Dcassandra.ring_delay_ms=1000"}
	return append(append(argv, props...), "org.apache.cassandra.service.CassandraDaemon")
}

// writeCassandraYAML writes dir/cassandra.yaml (creating dir).
func writeCassandraYAML(t *testing.T, dir, yaml string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cassandra.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startCassandra starts one CassandraDaemon on 127.0.0.1 with the configuration yaml in dir
// (without waiting for gossip to settle), and stops it when the test ends. It returns once
// the CQL and JMX ports are open.
func startCassandra(t *testing.T, dir, yaml string, native, jmx int, props ...string) *proc {
	t.Helper()
	return startCassandraOn(t, dir, yaml, "127.0.0.1", native, jmx, props...)
}

// startCassandraOn is startCassandra for a node whose CQL port listens on host (JMX listens
// on loopback, 127.0.0.1).
func startCassandraOn(t *testing.T, dir, yaml, host string, native, jmx int, props ...string) *proc {
	t.Helper()
	holdAddresses(t, host)
	writeCassandraYAML(t, dir, yaml)
	p := cassandraProc(t, "Cassandra "+host, dir, jmx, append([]string{gossipSettle}, props...)...)
	start := time.Now()
	p.start(t)
	p.waitCassandra(t, host, native, jmx, 4*time.Minute, 0)
	t.Logf("Cassandra 5.0 up in %.1fs", time.Since(start).Seconds())
	return p
}

// Live Cassandra nodes bind fixed loopback addresses (127.0.0.x for the drills, 127.0.2.x for
// the benchmarks), so two test processes that start them at once (a developer's run beside
// CI's, two engineers' helpers) collide. holdAddresses takes, for host's /24, the exclusive
// flock /tmp/sluice-cassandra-A.B.C.lock (waiting for it) and keeps it until this process
// exits: tests of one process run one at a time and share it.
func holdAddresses(t *testing.T, host string) {
	t.Helper()
	ip := net.ParseIP(host).To4()
	if ip == nil {
		t.Fatalf("holdAddresses: %q is not an IPv4 address", host)
	}
	holdLock(t, fmt.Sprintf("/tmp/sluice-cassandra-%d.%d.%d.lock", ip[0], ip[1], ip[2]))
}

var (
	heldMu sync.Mutex
	held   = map[string]*os.File{}
)

// holdLock takes the exclusive flock on path once per process (waiting for another process
// to release it) and keeps it until the process exits.
func holdLock(t *testing.T, path string) {
	t.Helper()
	heldMu.Lock()
	defer heldMu.Unlock()
	if held[path] != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Logf("waiting for %s: another process runs live Cassandra nodes on these addresses", path)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
	}
	held[path] = f
}

// cassandraProc is the process of the node configured in dir (not started), stopped with
// SIGTERM (30 s, then SIGKILL) when the test ends, its log shown if the test failed.
func cassandraProc(t *testing.T, name, dir string, jmx int, props ...string) *proc {
	t.Helper()
	p := &proc{name: name, env: os.Environ(), argv: cassandraArgv(dir, jmx, props...)}
	t.Cleanup(func() {
		p.stop(syscall.SIGTERM, 30*time.Second)
		if t.Failed() {
			t.Logf("%s log:\n%s", p.name, tail(p.log(), 6000))
		}
	})
	return p
}

// waitCassandra waits (limit at most) for the node's CQL port on host and its JMX port. A
// node that exits meanwhile fails the test, unless it gave up on a seed that was slow to
// answer gossip (a joining node on a loaded machine): it is started again, retries times at
// most.
func (p *proc) waitCassandra(t *testing.T, host string, native, jmx int, limit time.Duration, retries int) {
	t.Helper()
	start := time.Now()
	for !addrOpen(net.JoinHostPort(host, strconv.Itoa(native))) || !portOpen(jmx) {
		if !p.running() {
			if retries > 0 && strings.Contains(p.log(), "Unable to contact any seeds") {
				retries--
				t.Logf("%s could not reach its seed; starting it again", p.name)
				p.start(t)
				continue
			}
			t.Fatalf("%s exited while starting:\n%s", p.name, tail(p.log(), 4000))
		}
		if time.Since(start) > limit {
			t.Fatalf("%s did not open its CQL and JMX ports in %v:\n%s", p.name, limit, tail(p.log(), 4000))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// sidecarConf is the sluice.yaml of a sidecar beside the Cassandra node at Host: its stream
// and admin addresses and token file, its gossip (none without Gossip) and the cassandra:
// section (imports through NodetoolJSON, or through the JMX client at JMX when set).
type sidecarConf struct {
	Name, TLSDir          string
	Stream, Admin, Token  string
	Transport             string // "" is the default (quic)
	Gossip, Seed, KeyFile string
	Host                  string
	Native                int
	Data, Staging         string
	NodetoolJSON          string
	JMX                   int
	Refresh               string // refresh_interval; "" leaves it out
}

func (c sidecarConf) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ntls_dir: %s\nstream_addr: %s\nadmin_addr: %s\nadmin_token_file: %s\n", c.Name, c.TLSDir, c.Stream, c.Admin, c.Token)
	if c.Transport != "" {
		fmt.Fprintf(&b, "transport: %s\n", c.Transport)
	}
	if c.Gossip != "" {
		fmt.Fprintf(&b, "gossip_addr: %s\nseeds: [%s]\ncluster_key_file: %s\n", c.Gossip, c.Seed, c.KeyFile)
	}
	fmt.Fprintf(&b, "cassandra:\n  native_address: %s:%d\n  data_file_directories: [%s]\n", c.Host, c.Native, c.Data)
	if c.NodetoolJSON != "" {
		fmt.Fprintf(&b, "  nodetool: %s\n", c.NodetoolJSON)
	}
	fmt.Fprintf(&b, "  staging_dir: %s\n", c.Staging)
	if c.Refresh != "" {
		fmt.Fprintf(&b, "  refresh_interval: %s\n", c.Refresh)
	}
	if c.JMX != 0 {
		fmt.Fprintf(&b, "  jmx_address: 127.0.0.1:%d\n", c.JMX)
	}
	return b.String()
}

// nodetoolJSON is a nodetool command line (cassandra.sh java NodeTool against JMX on loopback
// at jmx) as the JSON list sluice.yaml takes.
func nodetoolJSON(jmx int) string {
	b, _ := json.Marshal(nodetoolArgv(jmx))
	return string(b)
}

func nodetoolArgv(jmx int) []string {
	return []string{filepath.Join(repo, "interop", "cassandra.sh"), "java", "org.apache.cassandra.tools.NodeTool",
		"-h", "127.0.0.1", "-p", strconv.Itoa(jmx)}
}

// startSidecar writes conf to dir/sluice.yaml and runs `sluice run` with it (sidecarProc).
func startSidecar(t *testing.T, dir string, conf sidecarConf, env []string, args ...string) *proc {
	t.Helper()
	p := sidecarProc(t, dir, conf, env, args...)
	p.start(t)
	return p
}

// sidecarProc writes conf to dir/sluice.yaml and returns the process of `sluice run` with it
// (env added to the environment; args after the configuration), not started; it is stopped
// with SIGINT (15 s, then SIGKILL) when the test ends, its log shown if the test failed.
func sidecarProc(t *testing.T, dir string, conf sidecarConf, env []string, args ...string) *proc {
	t.Helper()
	path := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(path, []byte(conf.yaml()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: "sidecar " + conf.Name, env: append(os.Environ(), env...),
		argv: append([]string{bin, "run", "--config", path, "--log-format", "json"}, args...)}
	t.Cleanup(func() {
		p.stop(syscall.SIGINT, 15*time.Second)
		if t.Failed() {
			t.Logf("%s log:\n%s", p.name, tail(p.log(), 8000))
		}
	})
	return p
}

// cqlSession connects cc (retrying for a minute while the node is not ready) and closes the
// session when the test ends.
func cqlSession(t *testing.T, cc *gocql.ClusterConfig) *gocql.Session {
	t.Helper()
	var s *gocql.Session
	var err error
	for deadline := time.Now().Add(time.Minute); ; {
		if s, err = cc.CreateSession(); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// proc is a process the test started and may stop (its process group: a JVM and whatever a
// sidecar runs, nodetool import included) and start again.
type proc struct {
	name    string
	argv    []string
	env     []string
	out     string // a file that takes the output instead of logs ("": logs)
	logFile string // the log a failure shows, when the process writes it itself ("": the output)
	logs    *lockedBuffer
	cmd     *exec.Cmd
	exited  chan error
}

// lockedBuffer is a process's output, safe to read while the process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	p.logs = &lockedBuffer{}
	p.cmd = exec.Command(p.argv[0], p.argv[1:]...)
	var w io.Writer = p.logs
	var f *os.File
	if p.out != "" {
		var err error
		if f, err = os.Create(p.out); err != nil {
			t.Fatal(err)
		}
		w = f
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	p.cmd.Env = p.env
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Once the process has exited, its output pipes close within this even if a descendant
	// that left its process group (a sidecar's JMX client) still holds them.
	p.cmd.WaitDelay = 10 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan error, 1)
	go func(c *exec.Cmd, ch chan error) {
		err := c.Wait()
		if f != nil {
			f.Close()
		}
		ch <- err
	}(p.cmd, p.exited)
}

// log is what the process logged so far (logFile, the out file or logs).
func (p *proc) log() string {
	if f := cmp.Or(p.logFile, p.out); f != "" {
		b, _ := os.ReadFile(f)
		return string(b)
	}
	if p.logs == nil {
		return ""
	}
	return p.logs.String()
}

// pid is the process's id (cassandra.sh execs java: a node's is the JVM's).
func (p *proc) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited.
func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		return false
	default:
		return true
	}
}

// stop signals the process group and waits (SIGKILL after grace).
func (p *proc) stop(sig syscall.Signal, grace time.Duration) {
	if !p.running() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case err := <-p.exited:
		p.exited <- err // running() must keep seeing it: a second stop (the cleanup's) returns at once
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Process.Kill()
		// WaitDelay (start) bounds the wait for output pipes a stray descendant still holds;
		// this bounds the rest, so that a test's cleanup cannot hang.
		select {
		case err := <-p.exited:
			p.exited <- err
		case <-time.After(30 * time.Second):
		}
	}
}

// portOpen reports whether a TCP connection to port on 127.0.0.1 succeeds.
func portOpen(port int) bool { return addrOpen(fmt.Sprintf("127.0.0.1:%d", port)) }

// addrOpen reports whether a TCP connection to addr succeeds.
func addrOpen(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
