package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/internal/node"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// Options configures a cluster. The zero value of every field but Nodes means its default.
type Options struct {
	// Nodes is the number of initial members, started NORMAL with explicit tokens.
	Nodes int
	// RF is the replication factor of the keyspace, per DC; default 3. With one DC and one
	// rack the keyspace uses SimpleStrategy, otherwise NetworkTopologyStrategy.
	RF int
	// DCs is the number of data centres the initial nodes are spread over (node i in DC
	// i mod DCs, named dc1, dc2, ...); default 1.
	DCs int
	// ReplicaDCs is the number of DCs the keyspace replicates to, default DCs. More than DCs
	// leaves room for a DC added later (the rebuild drill): a DC without nodes holds nothing.
	ReplicaDCs int
	// Racks is the number of racks per DC (rack-aware NetworkTopologyStrategy); default 1.
	Racks int
	// SSTables is the number of flush-like sstables each initial node is seeded with (default
	// 4): each spans all of the node's replicated ranges, and each after the first overwrites
	// and deletes some rows of the earlier ones.
	SSTables int
	// Net is NetLoopback (default) or NetNamespaces: every node process in its own network
	// namespace with its own address on a bridge (root only; implies Processes).
	Net string
	// Processes runs every node as its own process (Exec) instead of in this one.
	Processes bool
	// DataPerNode is the sstable bytes (uncompressed) each initial node holds after seeding;
	// 0 seeds nothing.
	DataPerNode int64
	// NumTokens is each node's token count; default 16. A cluster for move needs 1.
	NumTokens int
	// Dir holds everything: tls/, cluster.key, seed/, nodes/NAME/{data,node.log,sluice.yaml}.
	// New defaults it to t.TempDir(); Start requires it.
	Dir string
	// Keyspace and Table name the seeded table; default "sluice" and "stress".
	Keyspace, Table string
	// Seed makes the generated data and the initial tokens reproducible; default 42.
	Seed uint64
	// Proxies puts a Proxy in front of every node's stream port and advertises the proxy's
	// address, so that datagram faults can be injected between nodes.
	Proxies bool
	// SeedEverywhere places the whole data set on every initial node instead of only its
	// replicas (the starting point of a cleanup drill).
	SeedEverywhere bool
	// SeedMissing names an initial node seeded with nothing of every other one of its replica
	// ranges: a replica that lost data, the starting point of a repair drill.
	SeedMissing string
	// SeedStale names an initial node that missed the last flush (the newest sstable's
	// overwrites and deletions) in every other one of its replica ranges: a replica that
	// disagrees, the starting point of the repair-overlapping drill.
	SeedStale string
	// AllowDuplicates accepts a partition held more than once by one replica in Check (repair
	// streams whole mismatched ranges both ways; the copies reconcile on read).
	AllowDuplicates bool
	// Exec builds the command of a node process from NodeMain's arguments; default: this
	// executable with "testcluster node" and the arguments (the sluice binary).
	Exec func(args []string) *exec.Cmd
	// Detach leaves node processes running when this process exits (sluice testcluster up);
	// otherwise they are killed with it.
	Detach bool
	// Logf, when set, receives one line per step.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.RF == 0 {
		o.RF = 3
	}
	if o.NumTokens == 0 {
		o.NumTokens = 16
	}
	if o.DCs == 0 {
		o.DCs = 1
	}
	if o.ReplicaDCs < o.DCs {
		o.ReplicaDCs = o.DCs
	}
	if o.Racks == 0 {
		o.Racks = 1
	}
	if o.SSTables == 0 {
		o.SSTables = 4
	}
	if o.Net == "" {
		o.Net = NetLoopback
	}
	if o.Net == NetNamespaces {
		o.Processes = true
	}
	if o.Keyspace == "" {
		o.Keyspace = "sluice"
	}
	if o.Table == "" {
		o.Table = "stress"
	}
	if o.Seed == 0 {
		o.Seed = 42
	}
	if o.Exec == nil {
		o.Exec = defaultExec
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Network modes of Options.Net.
const (
	NetLoopback   = "loopback"
	NetNamespaces = "netns"
)

func defaultExec(args []string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe, append([]string{"testcluster", "node"}, args...)...)
}

// Cluster is a running cluster. Its methods may be called concurrently.
type Cluster struct {
	opts    Options
	dir     string
	tlsDir  string
	keyFile string

	net      *netns // nil on loopback
	strategy ring.Strategy

	mu    sync.Mutex
	nodes map[string]*Node
	order []string
	seed  string  // gossip address of the first node
	loss  float64 // SetLoss's fraction, applied to nodes added later

	// Data is what Seed generated, nil before.
	Data *SeedData
}

// New starts a cluster for a test and stops it when the test ends; it fails the test on any
// error.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, opts)
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Start makes the CA, the certificates and the cluster key under opts.Dir, seeds the initial
// nodes' data directories when DataPerNode is set, starts the nodes and waits until each sees
// all of them NORMAL. On error the returned cluster (if not nil) must still be closed.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts = opts.withDefaults()
	if opts.Nodes < 1 {
		return nil, fmt.Errorf("testcluster: Nodes %d: want at least 1", opts.Nodes)
	}
	if opts.Dir == "" {
		return nil, errors.New("testcluster: Dir is required")
	}
	switch opts.Net {
	case NetLoopback, NetNamespaces:
	default:
		return nil, fmt.Errorf("testcluster: net %q: want %s or %s", opts.Net, NetLoopback, NetNamespaces)
	}
	if opts.SSTables < 1 || opts.RF < 1 || opts.DCs < 1 || opts.Racks < 1 {
		return nil, fmt.Errorf("testcluster: sstables, rf, dcs and racks must be at least 1")
	}
	c := &Cluster{opts: opts, dir: opts.Dir, tlsDir: filepath.Join(opts.Dir, "tls"),
		keyFile: filepath.Join(opts.Dir, "cluster.key"), nodes: map[string]*Node{}}
	st, err := c.replication().Strategy()
	if err != nil {
		return nil, err
	}
	c.strategy = st
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	if opts.Net == NetNamespaces {
		if c.net, err = newNetns(); err != nil {
			return c, err
		}
	}
	if err := tlsx.WriteCA(c.tlsDir, true); err != nil {
		return c, err
	}
	key := make([]byte, 16)
	for i := range key {
		key[i] = byte(rand.Uint32())
	}
	if err := os.WriteFile(c.keyFile, []byte(fmt.Sprintf("%x\n", key)), 0o600); err != nil {
		return c, err
	}
	specs := make([]NodeSpec, opts.Nodes)
	var members []ring.Member
	for i := range specs {
		dc, rack := c.Placement(i)
		specs[i] = NodeSpec{Name: fmt.Sprintf("n%d", i+1), InitialTokens: c.initialTokens(i), DC: dc, Rack: rack}
		ts := make([]token.Token, len(specs[i].InitialTokens))
		for j, v := range specs[i].InitialTokens {
			ts[j] = token.Token{Kind: token.KindMurmur3, Long: v}
		}
		members = append(members, ring.Member{Node: ring.Node{Name: specs[i].Name, DC: dc, Rack: rack},
			State: ring.Normal, Tokens: ts})
	}
	r0, err := ring.NewRing(members...)
	if err != nil {
		return c, err
	}
	if opts.DataPerNode > 0 {
		dirs := map[string]string{}
		for _, s := range specs {
			dirs[s.Name] = c.dataDir(s.Name)
		}
		t0 := time.Now()
		if c.Data, err = c.seedData(ctx, r0, dirs); err != nil {
			return c, err
		}
		opts.Logf("seeded %d partitions: %d sstables per node (%.1f MiB on disk per node on average) in %v", len(c.Data.Keys),
			opts.SSTables, float64(c.Data.BytesOnDisk)/float64(opts.Nodes)/(1<<20), time.Since(t0).Round(time.Millisecond))
	}
	for _, s := range specs {
		if _, err := c.AddNode(ctx, s); err != nil {
			return c, err
		}
	}
	if err := c.WaitNormal(ctx, 60*time.Second, c.Names()...); err != nil {
		return c, err
	}
	return c, nil
}

// initialTokens are node i's tokens: evenly spaced single tokens, or NumTokens random ones.
func (c *Cluster) initialTokens(i int) []int64 {
	if c.opts.NumTokens == 1 {
		step := uint64(math.MaxUint64) / uint64(c.opts.Nodes)
		return []int64{math.MinInt64 + int64(step/2+uint64(i)*step)}
	}
	ts := ring.RandomTokens(rand.New(rand.NewPCG(c.opts.Seed+uint64(i), 1)), c.opts.NumTokens)
	out := make([]int64, len(ts))
	for j, t := range ts {
		out[j] = t.Long
	}
	return out
}

// Placement is the DC and rack of the i-th node (from 0): DCs alternate, and within a DC
// the racks do.
func (c *Cluster) Placement(i int) (dc, rack string) {
	return fmt.Sprintf("dc%d", i%c.opts.DCs+1), fmt.Sprintf("rack%d", (i/c.opts.DCs)%c.opts.Racks+1)
}

// replication is the keyspace's: SimpleStrategy for one DC of one rack, otherwise
// NetworkTopologyStrategy with RF in each of ReplicaDCs DCs.
func (c *Cluster) replication() node.Replication {
	if c.opts.ReplicaDCs == 1 && c.opts.Racks == 1 {
		return node.Replication{Class: node.SimpleStrategy, ReplicationFactor: c.opts.RF}
	}
	dcs := map[string]int{}
	for d := range c.opts.ReplicaDCs {
		dcs[fmt.Sprintf("dc%d", d+1)] = c.opts.RF
	}
	return node.Replication{Class: node.NetworkTopologyStrategy, DCs: dcs}
}

// Strategy is the keyspace's replication strategy.
func (c *Cluster) Strategy() ring.Strategy { return c.strategy }

// Dir is the cluster's directory.
func (c *Cluster) Dir() string { return c.dir }

// Options are the cluster's options with defaults applied.
func (c *Cluster) Options() Options { return c.opts }

func (c *Cluster) nodeDir(name string) string { return filepath.Join(c.dir, "nodes", name) }
func (c *Cluster) dataDir(name string) string { return filepath.Join(c.nodeDir(name), "data") }

// Names lists the nodes in the order they were added.
func (c *Cluster) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.order)
}

// Node returns the named node.
func (c *Cluster) Node(name string) (*Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownNode, name)
	}
	return n, nil
}

// MustNode is Node for names known to exist.
func (c *Cluster) MustNode(name string) *Node {
	n, err := c.Node(name)
	if err != nil {
		panic(err)
	}
	return n
}

// NodeSpec describes a node to add.
type NodeSpec struct {
	Name string
	// Bootstrap makes a new node allocate tokens and stream its ranges before it is NORMAL.
	Bootstrap bool
	// InitialTokens are explicit tokens; none means NumTokens allocated or random.
	InitialTokens []int64
	// DataDir replaces Dir/nodes/NAME/data (a small loop-mounted file system, say).
	DataDir string
	// InboundBytesPerSecond limits the node's receiving until it is restarted, so that a
	// fault lands while it is still streaming; 0 = unlimited.
	InboundBytesPerSecond int64
	// DC and Rack place the node; default: Placement of its position in the cluster.
	DC, Rack string
	// Replace names a dead member whose tokens the node takes over, streaming its ranges
	// from the surviving replicas (Cassandra's replace_address).
	Replace string
}

// AddNode issues the node's certificate, picks its ports, writes its configuration, starts it
// and waits until it has joined gossip.
func (c *Cluster) AddNode(ctx context.Context, spec NodeSpec) (*Node, error) {
	c.mu.Lock()
	if _, ok := c.nodes[spec.Name]; ok {
		c.mu.Unlock()
		return nil, fmt.Errorf("testcluster: node %s exists", spec.Name)
	}
	seed := c.seed
	pos := len(c.order)
	c.mu.Unlock()
	if spec.DC == "" {
		spec.DC, spec.Rack = c.Placement(pos)
	}
	if spec.Rack == "" {
		spec.Rack = node.DefaultRack
	}
	if spec.DataDir == "" {
		spec.DataDir = c.dataDir(spec.Name)
	}
	if err := os.MkdirAll(c.nodeDir(spec.Name), 0o755); err != nil {
		return nil, err
	}
	var ports [3]string
	var hosts []string // the certificate's: loopback by default
	var err error
	if c.net != nil {
		ip, err := c.net.addNode(spec.Name)
		if err != nil {
			return nil, err
		}
		ports = [3]string{ip + ":7400", ip + ":7401", ip + ":7402"}
		// Peers reach it through a proxy on the bridge's address when there are proxies.
		hosts = []string{ip, c.net.hostIP(), "127.0.0.1"}
	} else if ports, err = freePorts(); err != nil {
		return nil, err
	}
	if err := tlsx.WriteNode(c.tlsDir, spec.Name, hosts, true); err != nil {
		return nil, err
	}
	cfg := node.Config{
		Name: spec.Name, DataDirs: []string{spec.DataDir}, TLSDir: c.tlsDir,
		StreamAddr: ports[0], AdminAddr: ports[1], GossipAddr: ports[2],
		ClusterKeyFile: c.keyFile, ClusterLabel: "testcluster", NumTokens: c.opts.NumTokens,
		InitialTokens: spec.InitialTokens, Bootstrap: spec.Bootstrap,
		DC: spec.DC, Rack: spec.Rack, ReplaceAddress: spec.Replace,
		Keyspaces:  map[string]node.Replication{c.opts.Keyspace: c.replication()},
		Throughput: adminapi.Throughput{InboundBytesPerSecond: spec.InboundBytesPerSecond},
		// Short timeouts so that a killed or cut-off peer fails a session within seconds.
		Timeouts: node.Timeouts{Idle: 10 * time.Second, Keepalive: 2 * time.Second, Handshake: 5 * time.Second},
	}
	if seed != "" {
		cfg.Seeds = []string{seed}
	}
	n := &Node{c: c, Name: spec.Name, Spec: spec, cfg: cfg, logPath: filepath.Join(c.nodeDir(spec.Name), "node.log")}
	if c.opts.Proxies {
		host := "127.0.0.1"
		if c.net != nil {
			host = c.net.hostIP()
		}
		if n.proxy, err = NewProxyOn(host, cfg.StreamAddr); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	c.nodes[spec.Name] = n
	c.order = append(c.order, spec.Name)
	if c.seed == "" {
		c.seed = cfg.GossipAddr
	}
	loss := c.loss
	c.mu.Unlock()
	if loss > 0 {
		if err := c.applyLoss(n, loss); err != nil {
			return n, err
		}
	}
	if err := n.start(ctx); err != nil {
		return n, err
	}
	c.opts.Logf("%s up: admin %s stream %s gossip %s", spec.Name, cfg.AdminAddr, n.StreamAddr(), cfg.GossipAddr)
	return n, nil
}

// freePorts returns a stream (UDP), admin (TCP) and gossip (UDP and TCP) address on loopback,
// each free a moment ago. Fixed ports keep a node's addresses across restarts.
func freePorts() ([3]string, error) {
	var out [3]string
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return out, err
	}
	closers = append(closers, pc)
	out[0] = pc.LocalAddr().String()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return out, err
	}
	closers = append(closers, l)
	out[1] = l.Addr().String()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return out, err
		}
		closers = append(closers, l)
		pc, err := net.ListenPacket("udp", l.Addr().String())
		if err != nil {
			continue
		}
		closers = append(closers, pc)
		out[2] = l.Addr().String()
		return out, nil
	}
	return out, errors.New("testcluster: no port free in both UDP and TCP")
}

// WaitNormal waits until every named node is up and sees exactly the named nodes as the
// ring's members, all NORMAL (members that left are ignored), with every token set known.
func (c *Cluster) WaitNormal(ctx context.Context, d time.Duration, names ...string) error {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, name := range names {
		n, err := c.Node(name)
		if err != nil {
			return err
		}
		err = waitFor(ctx, d, name+" to see "+strings.Join(names, ",")+" NORMAL", func() (bool, error) {
			v, err := n.Ring(ctx)
			if err != nil {
				return false, err
			}
			return seesExactly(v, want), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func seesExactly(v adminapi.RingView, want map[string]bool) bool {
	if v.Error != "" {
		// A member's token set is still in flight: operations would fail on this ring.
		return false
	}
	seen := 0
	for _, m := range v.Members {
		if m.State == ring.Left.String() || m.Liveness == "left" || m.ReplacedBy != "" {
			continue
		}
		if !want[m.Name] || m.State != ring.Normal.String() || !m.Up {
			return false
		}
		seen++
	}
	return seen == len(want)
}

// Close stops every node (gracefully, then by force) and every proxy, and removes the
// network namespaces and the bridge.
func (c *Cluster) Close() error {
	var errs []error
	for _, name := range c.Names() {
		n := c.MustNode(name)
		errs = append(errs, n.Stop())
		if n.proxy != nil {
			errs = append(errs, n.proxy.Close())
		}
	}
	if c.net != nil && !c.opts.Detach {
		errs = append(errs, c.net.close())
		c.net = nil
	}
	return errors.Join(errs...)
}

// Cut takes the node's network link down (netns) or cuts its stream proxy (loopback with
// Proxies): with netns gossip and streams are cut together.
func (c *Cluster) Cut(name string) error { return c.setLink(name, false) }

// Heal undoes Cut.
func (c *Cluster) Heal(name string) error { return c.setLink(name, true) }

// LossByNft reports whether SetLoss drops packets in the nodes' network namespaces (netns
// with nft(8) installed) rather than in stream proxies: Options.Proxies is not needed then.
func LossByNft(net string) bool { return net == NetNamespaces && nftAvailable() }

// SetLoss drops the fraction (0 to 1) of the datagrams between every pair of nodes, those
// added later included: real packet loss in each node's network namespace (nft's numgen
// random on what it receives from other nodes, gossip and streams alike) when LossByNft, else
// in the stream proxies (both directions, streams only).
func (c *Cluster) SetLoss(fraction float64) error {
	c.mu.Lock()
	c.loss = fraction
	c.mu.Unlock()
	for _, name := range c.Names() {
		if err := c.applyLoss(c.MustNode(name), fraction); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) applyLoss(n *Node, fraction float64) error {
	if c.net != nil && nftAvailable() {
		return c.net.setLoss(n.Name, fraction)
	}
	if n.proxy == nil {
		return fmt.Errorf("testcluster: %s has no proxy to drop datagrams in", n.Name)
	}
	n.proxy.SetLoss(fraction)
	return nil
}

func (c *Cluster) setLink(name string, up bool) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if c.net != nil {
		return c.net.setLink(name, up)
	}
	if n.proxy == nil {
		return fmt.Errorf("testcluster: %s has no proxy to cut", name)
	}
	if up {
		n.proxy.Heal()
	} else {
		n.proxy.Cut()
	}
	return nil
}
