package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/internal/node"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
)

func TestRunFlagsSetMembership(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	doc := "name: n\ndata_dirs: [d]\ntls_dir: tls\ngossip_addr: 127.0.0.1:7946\ncluster_key_file: key\n" +
		"keyspaces: {ks: {class: NetworkTopologyStrategy, dc1: 2, dc2: 1}}\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseRunFlags(t, "--config", path, "--gossip-addr", "10.0.0.1:7000", "--seeds", "a:1,b:2",
		"--num-tokens", "8", "--initial-tokens", "5,-5", "--bootstrap", "--dc", "east", "--rack", "r9",
		"--cluster-key-file", "/k", "--cluster-label", "prod")
	if err != nil {
		t.Fatal(err)
	}
	want := node.Config{Name: "n", DataDirs: []string{filepath.Join(dir, "d")}, TLSDir: filepath.Join(dir, "tls"),
		GossipAddr: "10.0.0.1:7000", Seeds: []string{"a:1", "b:2"}, NumTokens: 8, InitialTokens: []int64{5, -5},
		Bootstrap: true, DC: "east", Rack: "r9", ClusterKeyFile: "/k", ClusterLabel: "prod",
		Keyspaces: map[string]node.Replication{"ks": {Class: node.NetworkTopologyStrategy, DCs: map[string]int{"dc1": 2, "dc2": 1}}}}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", cfg, want)
	}
}

// startMember runs an in-process node with membership alone in its cluster and waits until it
// has announced itself.
func startMember(t *testing.T) (*node.Node, string) {
	t.Helper()
	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "tls")
	if err := tlsx.WriteCA(tlsDir, false); err != nil {
		t.Fatal(err)
	}
	if err := tlsx.WriteNode(tlsDir, "solo", nil, false); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 16)), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	v, _ := version.ParseWritable("oa")
	if _, err := gen.Generate(context.Background(), data, gen.Options{Version: v, Partitions: 30, PartitionSize: 2048, RowSize: 512, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	cfg := node.Config{Name: "solo", DataDirs: []string{data}, TLSDir: tlsDir, StreamAddr: "127.0.0.1:0",
		AdminAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0", ClusterKeyFile: key, NumTokens: 3,
		Keyspaces: map[string]node.Replication{"sluice": {Class: node.SimpleStrategy, ReplicationFactor: 1}}}
	n, err := node.New(node.Options{Config: cfg, Logger: zerolog.Nop(), NewStreamServer: node.QUICStreamServer,
		TuneGossip: gossip.Config.ForTests})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	waitFor(t, 20*time.Second, "the node to announce itself", func() bool {
		st, err := n.Status()
		return err == nil && st.Ring != nil && st.Ring.State == "NORMAL" && st.Ring.Error == "" && len(st.Ring.Tokens) == 3
	})
	return n, n.AdminAddr().String()
}

func TestStatusAndRingShowTheClusterAsTheNodeSeesIt(t *testing.T) {
	n, admin := startMember(t)
	code, out, errs := sluice(t, "status", "--admin", admin, "--json")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errs)
	}
	var entries []map[string]any
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	load, _ := n.Load()
	want := map[string]any{"name": "solo", "state": "NORMAL", "up": true, "load_bytes": float64(load),
		"tokens": 3.0, "dc": "dc1", "rack": "rack1", "stream_addr": n.StreamAddr().String(), "identity": "proven"}
	if len(entries) != 1 {
		t.Fatalf("status --json: %v", entries)
	}
	// The only node replicates the whole ring (up to float rounding of the range widths).
	if own, ok := entries[0]["ownership"].(float64); !ok || math.Abs(own-1) > 1e-9 {
		t.Fatalf("ownership %v, want 1", entries[0]["ownership"])
	}
	delete(entries[0], "ownership")
	if !reflect.DeepEqual(entries[0], want) || load == 0 {
		t.Fatalf("status --json:\n%v\nwant [%v]", entries, want)
	}
	code, out, errs = sluice(t, "status", "--admin", admin)
	if code != 0 || !strings.Contains(out, "Datacenter: dc1") || !strings.Contains(out, "UN  solo") || !strings.Contains(out, "100.0%") {
		t.Fatalf("status: exit %d:\n%s%s", code, out, errs)
	}

	code, out, errs = sluice(t, "ring", "--admin", admin, "--json")
	if code != 0 {
		t.Fatalf("ring: exit %d: %s", code, errs)
	}
	var toks []adminapi.RingToken
	if err := json.Unmarshal([]byte(out), &toks); err != nil {
		t.Fatal(err)
	}
	if len(toks) != 3 || toks[0].Token >= toks[1].Token || toks[1].Token >= toks[2].Token || toks[0].Node != "solo" || !toks[0].Up {
		t.Fatalf("ring --json: %+v", toks)
	}
	code, out, _ = sluice(t, "ring", "--admin", admin)
	if code != 0 || strings.Count(out, "solo") != 3 {
		t.Fatalf("ring: exit %d:\n%s", code, out)
	}
}

// Cleanup on a node that replicates the whole ring keeps everything; import adopts a directory;
// a move of a multi-token node is refused with the reason.
func TestOperationCommandsRunAndReport(t *testing.T) {
	n, admin := startMember(t)
	before, _ := n.Load()
	code, out, errs := sluice(t, "cleanup", "sluice.stress", "--admin", admin)
	if code != 0 || !strings.Contains(out, "kept") || !strings.Contains(out, "cleanup complete") {
		t.Fatalf("cleanup: exit %d:\n%s%s", code, out, errs)
	}
	if after, _ := n.Load(); after != before {
		t.Fatalf("cleanup changed the load from %d to %d", before, after)
	}

	src := t.TempDir()
	v, _ := version.ParseWritable("oa")
	if _, err := gen.Generate(context.Background(), src, gen.Options{Version: v, Partitions: 10, PartitionSize: 2048, RowSize: 512, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	code, out, errs = sluice(t, "import", "sluice.stress", gen.TableDir(src, "sluice", "stress"), "--admin", admin, "--json")
	if code != 0 {
		t.Fatalf("import: exit %d:\n%s%s", code, out, errs)
	}
	var st adminapi.OpStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.State != adminapi.OpComplete || len(st.Imported) != 1 || st.Imported[0].Partitions != 10 {
		t.Fatalf("import --json: %+v %v", st, err)
	}

	code, _, errs = sluice(t, "move", "12345", "--admin", admin)
	if code == 0 || !strings.Contains(errs, "single-token") {
		t.Fatalf("move of a 3-token node: exit %d: %s", code, errs)
	}
	code, _, errs = sluice(t, "decommission", "--admin", admin)
	if code == 0 || !strings.Contains(errs, "last node on the ring") {
		t.Fatalf("decommission of the only node: exit %d: %s", code, errs)
	}
}
