package gossip

import (
	"net"
	"testing"

	"github.com/hashicorp/memberlist"

	"github.com/sluicedb/sluice/membership/gossip/claim"
	"github.com/sluicedb/sluice/membership/ring"
)

// unstarted returns a Gossip whose delegates are driven by hand, without a network.
func unstarted(t *testing.T) *Gossip {
	t.Helper()
	g, err := New(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Shutdown() })
	return g
}

func peerNode(t *testing.T, name string, m NodeMeta) *memberlist.Node {
	t.Helper()
	if _, err := appendMeta(nil, m); err != nil {
		t.Fatal(err)
	}
	return &memberlist.Node{Name: name, Addr: net.IPv4(127, 0, 0, 9), Port: 7946, Meta: metaClaim(name, m, 1).Encode()}
}

func kinds(g *Gossip) []EventKind {
	var out []EventKind
	for {
		e, ok := g.events.pop()
		if !ok {
			return out
		}
		out = append(out, e.Kind)
	}
}

func liveness(g *Gossip, name string) Liveness {
	m, _ := member(g.Members(), name)
	return m.Liveness
}

func TestDepartureWithoutIntentIsDead(t *testing.T) {
	g := unstarted(t)
	n := peerNode(t, "peer", NodeMeta{State: ring.Normal})
	(*eventDelegate)(g).NotifyJoin(n)
	(*eventDelegate)(g).NotifyLeave(n)
	if l := liveness(g, "peer"); l != StateDead {
		t.Fatalf("liveness %v", l)
	}
	if k := kinds(g); len(k) != 2 || k[0] != Join || k[1] != Dead {
		t.Fatalf("events %v", k)
	}
}

func TestLeaveIntentBeforeDepartureMakesItALeave(t *testing.T) {
	g := unstarted(t)
	n := peerNode(t, "peer", NodeMeta{State: ring.Normal})
	(*eventDelegate)(g).NotifyJoin(n)
	(*delegate)(g).NotifyMsg(leaveMsg("peer"))
	if l := liveness(g, "peer"); l != StateAlive {
		t.Fatalf("an intent alone changed liveness to %v", l)
	}
	(*eventDelegate)(g).NotifyLeave(n)
	if l := liveness(g, "peer"); l != StateLeft {
		t.Fatalf("liveness %v", l)
	}
	// Coming back starts a new life: a later failure is a failure again.
	(*eventDelegate)(g).NotifyJoin(n)
	(*eventDelegate)(g).NotifyLeave(n)
	if l := liveness(g, "peer"); l != StateDead {
		t.Fatalf("after rejoin: liveness %v", l)
	}
	if k := kinds(g); len(k) != 4 || k[1] != Leave || k[3] != Dead {
		t.Fatalf("events %v", k)
	}
}

func TestLeaveIntentAfterDepartureTurnsDeadIntoLeave(t *testing.T) {
	g := unstarted(t)
	n := peerNode(t, "peer", NodeMeta{State: ring.Normal})
	(*eventDelegate)(g).NotifyJoin(n)
	(*eventDelegate)(g).NotifyLeave(n)
	(*delegate)(g).NotifyMsg(leaveMsg("peer"))
	if l := liveness(g, "peer"); l != StateLeft {
		t.Fatalf("liveness %v", l)
	}
	if k := kinds(g); len(k) != 3 || k[1] != Dead || k[2] != Leave {
		t.Fatalf("events %v", k)
	}
}

func TestDelegatesCopyTheirInput(t *testing.T) {
	g := unstarted(t)
	n := peerNode(t, "peer", NodeMeta{DC: "dc1", State: ring.Normal})
	(*eventDelegate)(g).NotifyJoin(n)
	clear(n.Meta)
	msgs := appendChunks("peer", tokenSet{version: 3, tokens: []int64{10, 20}})
	state := appendState(nil, appendChunks("other", tokenSet{version: 1, tokens: []int64{5}}))
	(*delegate)(g).NotifyMsg(msgs[0])
	(*delegate)(g).MergeRemoteState(state, false)
	clear(msgs[0])
	clear(state)
	m, _ := member(g.Members(), "peer")
	if m.Meta.DC != "dc1" || len(m.Tokens) != 2 || m.Tokens[1] != 20 {
		t.Fatalf("member %+v", m)
	}
	if s, _ := g.tokens.get("other"); len(s.tokens) != 1 || s.tokens[0] != 5 {
		t.Fatalf("merged state %+v", s)
	}
	// What NodeMeta hands to memberlist is a copy too.
	b := (*delegate)(g).NodeMeta(memberlist.MetaMaxSize)
	clear(b)
	if got := (*delegate)(g).NodeMeta(memberlist.MetaMaxSize); got[0] != claim.KindMeta {
		t.Fatal("NodeMeta returned its internal buffer")
	}
}

func TestMalformedGossipIsIgnored(t *testing.T) {
	g := unstarted(t)
	d := (*delegate)(g)
	d.NotifyMsg(nil)
	d.NotifyMsg([]byte{msgTokenChunk, 0xff})
	d.NotifyMsg([]byte{msgLeave})
	d.NotifyMsg([]byte{99, 1, 2, 3}) // a message type from a newer version
	d.MergeRemoteState([]byte{stateFormat, 5}, true)
	(*eventDelegate)(g).NotifyJoin(&memberlist.Node{Name: "peer", Addr: net.IPv4(127, 0, 0, 9), Port: 1, Meta: []byte{9, 9}})
	m, ok := member(g.Members(), "peer")
	if !ok || m.Meta != (NodeMeta{}) || m.Liveness != StateAlive {
		t.Fatalf("member with undecodable metadata: %+v", m)
	}
}
