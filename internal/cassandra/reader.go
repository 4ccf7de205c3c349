package cassandra

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
)

// Reader reads the ring from the local Cassandra node over the native protocol. Every query
// goes to the local node alone (system.local is the answering node's own row, and the
// sidecar describes the ring as its node sees it); the driver still learns the other nodes
// (from the same tables and from the protocol's events) and tracks whether each is up, which
// is where a peer's State comes from. Its methods may be called concurrently; Close ends it.
type Reader struct {
	cfg     Config
	session *gocql.Session
	watch   *hostWatch
}

// Logger receives the driver's messages.
type Logger = gocql.StdLogger

// Dial connects to cfg.NativeAddress (with defaults applied and validated) and returns a
// Reader. log may be nil (the driver's messages are dropped). It fails when the node cannot
// be reached within cfg.Timeout or ctx, or when the driver's view of the cluster has no node
// at native_address (the address must be one the node announces: its rpc_address or
// broadcast_rpc_address).
func Dial(ctx context.Context, cfg Config, log Logger) (*Reader, error) {
	host, portText, err := net.SplitHostPort(cfg.NativeAddress)
	if err != nil {
		return nil, fmt.Errorf("cassandra.native_address: %w", err)
	}
	port, _ := strconv.Atoi(portText)
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("cassandra.native_address %s: %w", cfg.NativeAddress, err)
	}
	w := newHostWatch(ips, port)
	cc := gocql.NewCluster(cfg.NativeAddress)
	cc.Port = port
	cc.Timeout = cfg.Timeout
	cc.ConnectTimeout = cfg.Timeout
	cc.NumConns = 1
	cc.Consistency = gocql.One
	cc.ReconnectInterval = 10 * time.Second
	cc.PoolConfig.HostSelectionPolicy = w
	if log == nil {
		log = discard{}
	}
	cc.Logger = log
	if cfg.Username != "" {
		pw, err := cfg.Password()
		if err != nil {
			return nil, err
		}
		cc.Authenticator = gocql.PasswordAuthenticator{Username: cfg.Username, Password: pw}
	}
	if cfg.TLS.Enabled() {
		tc, err := tlsConfig(cfg.TLS)
		if err != nil {
			return nil, err
		}
		cc.SslOpts = &gocql.SslOptions{Config: tc, EnableHostVerification: true}
	}
	type result struct {
		s   *gocql.Session
		err error
	}
	done := make(chan result, 1)
	// CreateSession takes no context; ConnectTimeout bounds it.
	go func() {
		s, err := cc.CreateSession()
		done <- result{s, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		go func() {
			if r := <-done; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
	if res.err != nil {
		return nil, fmt.Errorf("cassandra at %s: %w", cfg.NativeAddress, res.err)
	}
	if !w.hasLocal() {
		known := w.addresses()
		res.s.Close()
		return nil, fmt.Errorf("cassandra at %s: the driver knows the nodes %s and none at native_address: give the address the node announces (its rpc_address or broadcast_rpc_address)",
			cfg.NativeAddress, strings.Join(known, ", "))
	}
	return &Reader{cfg: cfg, session: res.s, watch: w}, nil
}

func tlsConfig(t TLS) (*tls.Config, error) {
	pem, err := os.ReadFile(t.CA)
	if err != nil {
		return nil, fmt.Errorf("cassandra.tls.ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cassandra.tls.ca %s: no PEM certificate", t.CA)
	}
	tc := &tls.Config{RootCAs: pool, ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
	if t.Cert != "" {
		c, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("cassandra.tls.cert/key: %w", err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return tc, nil
}

// Changes delivers a value (coalesced) whenever the driver reports a change of topology,
// liveness or schema: the ring is worth reading again. The channel is never closed.
func (r *Reader) Changes() <-chan struct{} { return r.watch.changed }

// Close closes the driver's connections.
func (r *Reader) Close() { r.session.Close() }

// Read reads the ring: the local node (system.local), its peers (system.peers_v2, or
// system.peers on a node older than 4.0), every keyspace's replication and every table's id.
// Peers take their State from the driver; the local node, which just answered, is Up.
func (r *Reader) Read(ctx context.Context) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	s := Snapshot{ReadAt: time.Now()}
	local, err := r.readLocal(ctx, &s)
	if err != nil {
		return Snapshot{}, err
	}
	s.Nodes = append(s.Nodes, local)
	peers, err := r.readPeers(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	for _, p := range peers {
		if strings.EqualFold(p.HostID, local.HostID) {
			continue
		}
		p.State = r.watch.state(p.HostID)
		s.Nodes = append(s.Nodes, p)
	}
	if err := r.readSchema(ctx, &s); err != nil {
		return Snapshot{}, err
	}
	sortSnapshot(&s)
	return s, nil
}

func (r *Reader) query(ctx context.Context, stmt string) *gocql.Query {
	return r.session.Query(stmt).WithContext(ctx).Idempotent(true)
}

func (r *Reader) readLocal(ctx context.Context, s *Snapshot) (Node, error) {
	var (
		hostID                                  gocql.UUID
		broadcast, listen, rpc                  net.IP
		dc, rack, release, cluster, partitioner string
		tokens                                  []string
	)
	err := r.query(ctx, `SELECT cluster_name, partitioner, host_id, data_center, rack, tokens, broadcast_address, listen_address, rpc_address, release_version FROM system.local WHERE key = 'local'`).
		Scan(&cluster, &partitioner, &hostID, &dc, &rack, &tokens, &broadcast, &listen, &rpc, &release)
	if errors.Is(err, gocql.ErrNotFound) {
		return Node{}, ErrNoLocal
	}
	if err != nil {
		return Node{}, fmt.Errorf("cassandra at %s: reading system.local: %w", r.cfg.NativeAddress, err)
	}
	if err := checkPartitioner(partitioner); err != nil {
		return Node{}, err
	}
	s.ClusterName, s.Partitioner = cluster, partitioner
	toks, err := ParseTokens(tokens)
	if err != nil {
		return Node{}, fmt.Errorf("system.local: %w", err)
	}
	n := Node{HostID: hostID.String(), Address: ipString(broadcast), ListenAddress: ipString(listen),
		NativeAddress: ipString(rpc), DC: dc, Rack: rack, Tokens: toks, State: Up, Local: true, ReleaseVersion: release}
	if _, p, err := net.SplitHostPort(r.cfg.NativeAddress); err == nil {
		n.NativePort, _ = strconv.Atoi(p)
	}
	if n.Address == "" {
		n.Address = n.ListenAddress
	}
	return n, nil
}

func ipString(ip net.IP) string {
	if ip == nil {
		return ""
	}
	return ip.String()
}

// readPeers reads system.peers_v2, or system.peers where peers_v2 does not exist.
func (r *Reader) readPeers(ctx context.Context) ([]Node, error) {
	out, err := r.scanPeers(ctx, `SELECT peer, host_id, data_center, rack, tokens, native_address, native_port, release_version FROM system.peers_v2`, true)
	if err != nil && isUnconfigured(err) {
		out, err = r.scanPeers(ctx, `SELECT peer, host_id, data_center, rack, tokens, rpc_address, release_version FROM system.peers`, false)
	}
	return out, err
}

func isUnconfigured(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "unconfigured table") || strings.Contains(s, "peers_v2")
}

func (r *Reader) scanPeers(ctx context.Context, stmt string, v2 bool) ([]Node, error) {
	it := r.query(ctx, stmt).Iter()
	var out []Node
	for {
		var (
			peer, native      net.IP
			hostID            gocql.UUID
			dc, rack, release string
			tokens            []string
			nativePort        int
		)
		dest := []any{&peer, &hostID, &dc, &rack, &tokens, &native}
		if v2 {
			dest = append(dest, &nativePort)
		}
		dest = append(dest, &release)
		if !it.Scan(dest...) {
			break
		}
		toks, err := ParseTokens(tokens)
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("system.peers row of %s: %w", ipString(peer), err)
		}
		out = append(out, Node{HostID: hostID.String(), Address: ipString(peer), NativeAddress: ipString(native),
			NativePort: nativePort, DC: dc, Rack: rack, Tokens: toks, ReleaseVersion: release})
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cassandra at %s: reading peers: %w", r.cfg.NativeAddress, err)
	}
	return out, nil
}

func (r *Reader) readSchema(ctx context.Context, s *Snapshot) error {
	it := r.query(ctx, `SELECT keyspace_name, replication FROM system_schema.keyspaces`).Iter()
	for {
		var k Keyspace
		if !it.Scan(&k.Name, &k.Replication) {
			break
		}
		s.Keyspaces = append(s.Keyspaces, k)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("cassandra at %s: reading system_schema.keyspaces: %w", r.cfg.NativeAddress, err)
	}
	it = r.query(ctx, `SELECT keyspace_name, table_name, id FROM system_schema.tables`).Iter()
	for {
		var t Table
		var id gocql.UUID
		if !it.Scan(&t.Keyspace, &t.Name, &id) {
			break
		}
		t.ID, _ = TableID(id.String())
		s.Tables = append(s.Tables, t)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("cassandra at %s: reading system_schema.tables: %w", r.cfg.NativeAddress, err)
	}
	return nil
}

type discard struct{}

func (discard) Print(...any)          {}
func (discard) Printf(string, ...any) {}
func (discard) Println(...any)        {}

// hostWatch is the driver's host selection policy: it sends every query to the local node
// (the one at native_address), records the hosts the driver adds so that their liveness can
// be read, and signals changes. The driver calls it from its own goroutines; it never blocks.
type hostWatch struct {
	inner   gocql.HostSelectionPolicy
	ips     map[string]bool // native_address's host, resolved
	port    int
	changed chan struct{}

	mu    sync.Mutex
	hosts map[string]*gocql.HostInfo // by lower-case host id
}

var _ gocql.HostSelectionPolicy = (*hostWatch)(nil)

func newHostWatch(ips []net.IPAddr, port int) *hostWatch {
	w := &hostWatch{inner: gocql.RoundRobinHostPolicy(), ips: map[string]bool{}, port: port,
		changed: make(chan struct{}, 1), hosts: map[string]*gocql.HostInfo{}}
	for _, ip := range ips {
		w.ips[ip.IP.String()] = true
	}
	return w
}

func (w *hostWatch) signal() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *hostWatch) isLocal(h *gocql.HostInfo) bool {
	return h != nil && w.ips[h.ConnectAddress().String()] && (h.Port() == 0 || h.Port() == w.port)
}

func (w *hostWatch) hasLocal() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.hosts {
		if w.isLocal(h) {
			return true
		}
	}
	return false
}

func (w *hostWatch) addresses() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, h := range w.hosts {
		out = append(out, h.ConnectAddressAndPort())
	}
	return out
}

func (w *hostWatch) record(h *gocql.HostInfo) {
	if id := strings.ToLower(h.HostID()); id != "" {
		w.mu.Lock()
		w.hosts[id] = h
		w.mu.Unlock()
	}
}

// state is the driver's view of the host with id.
func (w *hostWatch) state(id string) HostState {
	w.mu.Lock()
	h := w.hosts[strings.ToLower(id)]
	w.mu.Unlock()
	switch {
	case h == nil:
		return Unknown
	case h.IsUp():
		return Up
	}
	return Down
}

func (w *hostWatch) AddHost(h *gocql.HostInfo) { w.inner.AddHost(h); w.record(h); w.signal() }
func (w *hostWatch) RemoveHost(h *gocql.HostInfo) {
	w.inner.RemoveHost(h)
	w.mu.Lock()
	delete(w.hosts, strings.ToLower(h.HostID()))
	w.mu.Unlock()
	w.signal()
}
func (w *hostWatch) HostUp(h *gocql.HostInfo)   { w.inner.HostUp(h); w.record(h); w.signal() }
func (w *hostWatch) HostDown(h *gocql.HostInfo) { w.inner.HostDown(h); w.record(h); w.signal() }
func (w *hostWatch) SetPartitioner(p string)    { w.inner.SetPartitioner(p) }
func (w *hostWatch) KeyspaceChanged(e gocql.KeyspaceUpdateEvent) {
	w.inner.KeyspaceChanged(e)
	w.signal()
}
func (w *hostWatch) Init(s *gocql.Session)          { w.inner.Init(s) }
func (w *hostWatch) IsLocal(h *gocql.HostInfo) bool { return w.isLocal(h) }

// Pick offers only the local node, among the hosts the driver holds as up.
func (w *hostWatch) Pick(q gocql.ExecutableQuery) gocql.NextHost {
	next := w.inner.Pick(q)
	return func() gocql.SelectedHost {
		for {
			sh := next()
			if sh == nil || w.isLocal(sh.Info()) {
				return sh
			}
		}
	}
}
