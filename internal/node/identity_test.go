package node

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
)

// An impostor with the gossip key but no certificate joins silently (no ring state) and
// announces a real member's stream address; a new node still bootstraps: the impostor is
// refused (the certificate at that address names another node) and not waited for.
func TestASilentImpostorStallsNoBootstrap(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2")
	n1 := tc.start(tc.config("n1", filepath.Join(t.TempDir(), "n1")))
	key, err := LoadClusterKey(tc.key)
	if err != nil {
		t.Fatal(err)
	}
	imp, err := gossip.New(gossip.Config{Name: "impostor", BindAddr: "127.0.0.1:0", Seeds: []string{n1.node.GossipAddr()},
		ClusterKey: key, Label: DefaultClusterLabel, Log: zerolog.Nop(),
		Meta: gossip.NodeMeta{StreamAddr: n1.node.StreamAddr().String()}}.ForTests())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := imp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer imp.Shutdown()

	cfg := tc.config("n2", filepath.Join(t.TempDir(), "n2"), n1.node.GossipAddr())
	cfg.Bootstrap = true
	n2 := tc.start(cfg)
	waitUntil(t, 30*time.Second, "n2 NORMAL beside a silent impostor", func() bool {
		return sees(n2.node, map[string]ring.NodeState{"n1": ring.Normal, "n2": ring.Normal})
	})
	for _, m := range n2.node.cluster.Load().g.Members() {
		if m.Name == "impostor" && m.Identity != gossip.IdentityRefused {
			t.Errorf("impostor's identity: %v", m.Identity)
		}
	}
}
