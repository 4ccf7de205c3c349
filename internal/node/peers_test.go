package node

import (
	"testing"

	"github.com/sluicedb/sluice/membership/gossip"
)

// A member listening on every interface announces a wildcard stream address; peers reach it
// at its gossip host.
func TestStreamAddrOfAWildcardIsTheGossipHost(t *testing.T) {
	for _, tc := range []struct{ stream, gossip, want string }{
		{"10.0.0.1:7400", "10.0.0.1:7946", "10.0.0.1:7400"},
		{"0.0.0.0:7400", "10.0.0.2:7946", "10.0.0.2:7400"},
		{"[::]:7400", "[fd00::3]:7946", "[fd00::3]:7400"},
		{":7400", "10.0.0.4:7946", "10.0.0.4:7400"},
	} {
		got, err := streamAddr(gossip.Member{Name: "x", Addr: tc.gossip, Meta: gossip.NodeMeta{StreamAddr: tc.stream}})
		if err != nil || got != tc.want {
			t.Errorf("streamAddr(%s, gossip %s) = %q, %v; want %q", tc.stream, tc.gossip, got, err, tc.want)
		}
	}
	if _, err := streamAddr(gossip.Member{Name: "x", Meta: gossip.NodeMeta{StreamAddr: ""}}); err == nil {
		t.Error("a member without a stream address")
	}
}
