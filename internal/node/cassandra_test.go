package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
)

func TestSidecarConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`
name: n1
tls_dir: /tls
cassandra:
  native_address: 127.0.0.1:9042
  data_file_directories: [/var/lib/cassandra/data]
  nodetool: [nodetool, -h, 127.0.0.1, -p, 7199]
  refresh_interval: 5s
`))
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Options{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	got := n.Config()
	if !got.Sidecar() || strings.Join(got.DataDirs, ",") != "/var/lib/cassandra/data" ||
		got.Cassandra.StagingDir != "/var/lib/cassandra/sluice-staging" || got.Cassandra.RefreshInterval != 5*time.Second ||
		strings.Join(got.Cassandra.Nodetool, " ") != "nodetool -h 127.0.0.1 -p 7199" {
		t.Errorf("%+v %+v", got, got.Cassandra)
	}
	if _, err := ParseConfig([]byte("cassandra:\n  native_adress: x\n")); err == nil {
		t.Error("a misspelt cassandra field was accepted")
	}

	base := func() Config {
		return Config{Name: "n1", TLSDir: "/tls", Cassandra: &cassandra.Config{NativeAddress: "127.0.0.1:9042",
			DataFileDirectories: []string{"/d1", "/d2"}, Nodetool: []string{"nodetool"}}}
	}
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"cassandra.native_address", func(c *Config) { c.Cassandra.NativeAddress = "" }},
		{"cassandra.nodetool", func(c *Config) { c.Cassandra.Nodetool = nil }},
		{"data_dirs", func(c *Config) { c.DataDirs = []string{"/elsewhere"} }},
		{"data_dirs", func(c *Config) { c.DataDirs = []string{"/d1"} }},
		{"bootstrap", func(c *Config) { c.GossipAddr, c.ClusterKeyFile, c.Bootstrap = "127.0.0.1:0", "/k", true }},
		{"initial_tokens", func(c *Config) { c.GossipAddr, c.ClusterKeyFile, c.InitialTokens = "127.0.0.1:0", "/k", []int64{1} }},
		{"keyspaces", func(c *Config) {
			c.Keyspaces = map[string]Replication{"ks": {Class: SimpleStrategy, ReplicationFactor: 1}}
		}},
	} {
		c := base()
		tc.edit(&c)
		_, err := New(Options{Config: c})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("want an error naming %s, got %v", tc.field, err)
		}
	}
	c2 := base()
	c2.DataDirs = []string{"/d2", "/d1/"}
	if _, err := New(Options{Config: c2}); err != nil {
		t.Errorf("data_dirs repeating data_file_directories: %v", err)
	}
}

// fakeRing is a ringReader over a snapshot a test sets.
type fakeRing struct {
	mu      sync.Mutex
	snap    cassandra.Snapshot
	err     error
	reads   int
	changes chan struct{}
}

func (f *fakeRing) Read(context.Context) (cassandra.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	s := f.snap
	s.ReadAt = time.Now()
	return s, f.err
}
func (f *fakeRing) Changes() <-chan struct{} { return f.changes }
func (f *fakeRing) Close()                   {}

func (f *fakeRing) set(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

const sidecarTableID = "00112233445566778899aabbccddeeff"

func sidecarSnapshot() cassandra.Snapshot {
	return cassandra.Snapshot{ClusterName: "c1", Partitioner: cassandra.Murmur3Partitioner,
		Nodes: []cassandra.Node{
			{HostID: "11111111-0000-0000-0000-000000000001", Address: "127.0.0.1", NativeAddress: "127.0.0.1", DC: "dc1", Rack: "r1",
				Tokens: []int64{-5, 10, 99}, State: cassandra.Up, Local: true},
			{HostID: "11111111-0000-0000-0000-000000000002", Address: "127.0.0.2", NativeAddress: "127.0.0.2", DC: "dc1", Rack: "r2",
				Tokens: []int64{50}, State: cassandra.Down},
		},
		Keyspaces: []cassandra.Keyspace{
			{Name: "ks", Replication: map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "2"}},
			{Name: "system", Replication: map[string]string{"class": "org.apache.cassandra.locator.LocalStrategy"}},
		},
		Tables: []cassandra.Table{{Keyspace: "ks", Name: "t", ID: sidecarTableID}},
	}
}

// sidecarNode runs a sidecar node over a fake ring and a fake nodetool that moves what it
// is given into the live table directory.
func sidecarNode(t *testing.T, ring *fakeRing) (*running, string) {
	t.Helper()
	data := t.TempDir()
	live := filepath.Join(data, "ks", "t-"+sidecarTableID)
	if err := os.MkdirAll(live, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: "n1", AdminAddr: "127.0.0.1:0", TLSDir: t.TempDir(),
		Cassandra: &cassandra.Config{NativeAddress: "127.0.0.1:9042", DataFileDirectories: []string{data},
			Nodetool: []string{"nodetool"}, StagingDir: filepath.Join(t.TempDir(), "staging")}}
	n, err := New(Options{Config: cfg, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	n.sidecar.dial = func(context.Context) (ringReader, error) { return ring, nil }
	n.sidecar.runNodetool = func(ctx context.Context, argv []string) (string, int, error) {
		dir := argv[len(argv)-1]
		ls, err := catalog.ListLive(dir)
		if err != nil {
			return err.Error(), 1, nil
		}
		for i, s := range ls {
			nd := descriptor.Descriptor{Dir: live, Version: s.Desc.Version, ID: fmt.Sprint(10 + i)}
			for _, c := range s.Comps {
				if err := os.Rename(s.Desc.Path(c), nd.Path(c)); err != nil {
					return err.Error(), 1, nil
				}
			}
		}
		return "", 0, nil
	}
	return runSidecar(t, n), live
}

// runSidecar runs a sidecar node made by New (its dial and nodetool faked) until the test
// ends, and waits until it is ready.
func runSidecar(t *testing.T, n *Node) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{node: n, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	select {
	case <-n.Ready():
	case err := <-r.done:
		t.Fatalf("Run: %v", err)
	}
	return r
}

func TestSidecarRingAndImport(t *testing.T) {
	ring := &fakeRing{snap: sidecarSnapshot(), changes: make(chan struct{}, 1)}
	r, live := sidecarNode(t, ring)

	var v adminapi.CassandraRing
	if code := call(t, http.MethodGet, r.url("/v1/cassandra/ring"), "", &v); code != 200 {
		t.Fatalf("GET /v1/cassandra/ring: %d %+v", code, v)
	}
	if len(v.Nodes) != 2 || v.Local != "11111111-0000-0000-0000-000000000001" || v.Cluster != "c1" {
		t.Fatalf("%+v", v)
	}
	local, peer := v.Nodes[0], v.Nodes[1]
	if !local.Local || local.TokenCount != 3 || len(local.Tokens) != 3 || local.State != "UP" || local.Sidecar != adminapi.SidecarUp || local.SidecarName != "n1" {
		t.Errorf("local %+v", local)
	}
	if peer.State != "DOWN" || peer.Sidecar != adminapi.SidecarUnknown || peer.Rack != "r2" {
		t.Errorf("peer %+v", peer)
	}
	if len(v.Keyspaces) != 2 || v.Keyspaces[0].Strategy != "SimpleStrategy{RF:2}" || v.Keyspaces[0].Tables != 1 || v.Keyspaces[1].Unsupported == "" {
		t.Errorf("keyspaces %+v", v.Keyspaces)
	}

	// Cassandra stops answering: the last read, marked stale.
	ring.set(errors.New("connection refused"))
	v = adminapi.CassandraRing{}
	if code := call(t, http.MethodGet, r.url("/v1/cassandra/ring"), "", &v); code != 200 || !strings.Contains(v.Stale, "connection refused") || len(v.Nodes) != 2 {
		t.Errorf("stale read: %d %+v", code, v)
	}
	ring.set(nil)

	src := t.TempDir()
	for seed := uint64(1); seed <= 2; seed++ {
		generate(t, src, "ks", "t", seed)
	}
	dir := gen.TableDir(src, "ks", "t")
	var res adminapi.CassandraImportResult
	body := fmt.Sprintf(`{"keyspace":"ks","table":"t","dir":%q}`, dir)
	if code := call(t, http.MethodPost, r.url("/v1/cassandra/import"), body, &res); code != 200 {
		t.Fatalf("POST /v1/cassandra/import: %d %+v", code, res)
	}
	ls, err := catalog.ListLive(live)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SSTables) != 2 || len(ls) != 2 || res.TableID != sidecarTableID || res.Node != v.Local {
		t.Errorf("imported %+v, live %d", res, len(ls))
	}
	for _, s := range res.SSTables {
		if filepath.Dir(s.Live) != live {
			t.Errorf("%+v", s)
		}
	}

	var e adminapi.ErrorResponse
	for _, tc := range []struct {
		body string
		code int
	}{
		{`{"keyspace":"ks","table":"nope","dir":"/x"}`, 400},
		{`{"keyspace":"k-s","table":"t","dir":"/x"}`, 400},
		{`{"keyspace":"ks","table":"t","dir":"relative"}`, 400},
		{fmt.Sprintf(`{"keyspace":"ks","table":"t","dir":%q}`, t.TempDir()), 400},
		{`{"keyspace":"ks","table":"t","dir":"/x","extra":1}`, 400},
	} {
		if code := call(t, http.MethodPost, r.url("/v1/cassandra/import"), tc.body, &e); code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.body, code, e.Error, tc.code)
		}
	}
}

func TestNotASidecar(t *testing.T) {
	r := start(t, Options{Config: testConfig(t)})
	var e adminapi.ErrorResponse
	if code := call(t, http.MethodGet, r.url("/v1/cassandra/ring"), "", &e); code != http.StatusConflict || !strings.Contains(e.Error, "cassandra section") {
		t.Errorf("%d %s", code, e.Error)
	}
	if code := call(t, http.MethodPost, r.url("/v1/cassandra/import"), `{"keyspace":"ks","table":"t","dir":"/x"}`, &e); code != http.StatusConflict {
		t.Errorf("%d %s", code, e.Error)
	}
}

// Before the first read, the ring endpoint says why there is none (503).
func TestSidecarNoRingYet(t *testing.T) {
	ring := &fakeRing{snap: sidecarSnapshot(), err: errors.New("connection refused"), changes: make(chan struct{}, 1)}
	r, _ := sidecarNode(t, ring)
	var e adminapi.ErrorResponse
	if code := call(t, http.MethodGet, r.url("/v1/cassandra/ring"), "", &e); code != http.StatusServiceUnavailable || !strings.Contains(e.Error, "connection refused") {
		t.Errorf("%d %s", code, e.Error)
	}
}

func TestMatchSidecar(t *testing.T) {
	cn := cassandra.Node{HostID: "h2", Address: "10.0.0.2", NativeAddress: "10.0.1.2"}
	member := func(name, stream string, l gossip.Liveness, id gossip.Identity) gossip.Member {
		return gossip.Member{Name: name, Meta: gossip.NodeMeta{StreamAddr: stream, AdminAddr: "127.0.0.1:7401"}, Liveness: l, Identity: id}
	}
	for _, tc := range []struct {
		name       string
		members    []gossip.Member
		membership bool
		state, who string
	}{
		{"no gossip", nil, false, adminapi.SidecarUnknown, ""},
		{"none matches", []gossip.Member{member("n3", "10.0.0.3:7400", gossip.StateAlive, gossip.IdentityProven)}, true, adminapi.SidecarMissing, ""},
		{"by broadcast address", []gossip.Member{member("n2", "10.0.0.2:7400", gossip.StateAlive, gossip.IdentityProven)}, true, adminapi.SidecarUp, "n2"},
		{"by native address", []gossip.Member{member("n2", "10.0.1.2:7400", gossip.StateAlive, gossip.IdentityProven)}, true, adminapi.SidecarUp, "n2"},
		{"dead", []gossip.Member{member("n2", "10.0.0.2:7400", gossip.StateDead, gossip.IdentityProven)}, true, adminapi.SidecarDown, "n2"},
		{"unproven", []gossip.Member{member("n2", "10.0.0.2:7400", gossip.StateAlive, gossip.IdentityPending)}, true, adminapi.SidecarDown, "n2"},
		{"itself never matches a peer", []gossip.Member{member("n1", "10.0.0.2:7400", gossip.StateAlive, gossip.IdentityProven)}, true, adminapi.SidecarMissing, ""},
		// A sidecar announcing no host id (a replacement's, its node not started) on the same
		// host never stands for the node whose sidecar announces its host id.
		{"the host id first", []gossip.Member{member("n9", "10.0.0.2:7400", gossip.StateAlive, gossip.IdentityProven),
			{Name: "n2", Meta: gossip.NodeMeta{CassandraHostID: "H2", StreamAddr: "10.9.9.9:7400"}, Liveness: gossip.StateAlive, Identity: gossip.IdentityProven}},
			true, adminapi.SidecarUp, "n2"},
	} {
		state, who := matchSidecar(cn, "n1", tc.membership, tc.members)
		if state != tc.state || who != tc.who {
			t.Errorf("%s: %s %q, want %s %q", tc.name, state, who, tc.state, tc.who)
		}
	}
	if state, who := matchSidecar(cassandra.Node{Local: true}, "n1", true, nil); state != adminapi.SidecarUp || who != "n1" {
		t.Errorf("local: %s %s", state, who)
	}
}

// A sidecar's ring is its Cassandra node's: every operation on sluice's own ring, which would
// write into Cassandra's live table directories, is refused before it starts.
func TestASidecarRefusesOperationsOnSluicesOwnRing(t *testing.T) {
	n := &Node{sidecar: &sidecar{}}
	for name, start := range map[string]func() error{
		"cleanup":      func() error { _, err := n.StartCleanup(CleanupRequest{}); return err },
		"import":       func() error { _, err := n.StartImport(ImportRequest{}); return err },
		"bootstrap":    func() error { _, err := n.StartBootstrap(); return err },
		"decommission": func() error { _, err := n.StartDecommission(); return err },
		"move":         func() error { _, err := n.StartMove(0); return err },
		"rebuild":      func() error { _, err := n.StartRebuild(RebuildRequest{}); return err },
		"repair":       func() error { _, err := n.StartRepair(RepairRequest{}); return err },
		"replace":      func() error { _, err := n.StartReplace(); return err },
		"fetch":        func() error { _, err := n.Fetch(t.Context(), FetchOpRequest{}); return err },
	} {
		if err := start(); !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), "sidecar") {
			t.Errorf("%s: %v, want the sidecar refusal", name, err)
		}
	}
}
