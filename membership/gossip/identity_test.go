package gossip

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// With Verify set, a member's tokens count only once its proof succeeded: a member whose
// proof fails stays out of the ring (and is retried), one whose proof is still running keeps
// the ring unsettled, and a member that proves itself later enters it.
func TestOnlyProvenMembersAreInTheRing(t *testing.T) {
	c := newTestCluster(t)
	var mu sync.Mutex
	verdict := map[string]error{"node1": nil, "node2": errors.New("certificate signed by unknown authority")}
	tries := map[string]int{}
	cfg := c.config("node0")
	cfg.Verify = func(ctx context.Context, m Member) (crypto.PublicKey, error) {
		name := m.Name
		mu.Lock()
		defer mu.Unlock()
		tries[name]++
		v, ok := verdict[name]
		if !ok {
			return nil, fmt.Errorf("unknown %s", name)
		}
		return c.pub(name), v
	}
	obs := c.add(cfg)
	c.addN(2) // node1 (proven) and node2 (refused)

	eventually(t, 10*time.Second, "node0's ring with node1 and without node2", func() (bool, string) {
		r, err := obs.Ring()
		if err != nil {
			return false, err.Error()
		}
		_, has1 := r.Member("node1")
		_, has2 := r.Member("node2")
		m2, _ := member(obs.Members(), "node2")
		return has1 && !has2 && m2.Identity == IdentityRefused, fmt.Sprintf("node1 %v node2 %v (%v)", has1, has2, m2.Identity)
	})
	m2, _ := member(obs.Members(), "node2")
	if m2.IdentityError == "" {
		t.Error("a refused member without the reason")
	}
	// The refusal is retried; once node2 proves itself it enters the ring.
	mu.Lock()
	verdict["node2"] = nil
	mu.Unlock()
	eventually(t, 20*time.Second, "node2 proven on retry", func() (bool, string) {
		r, err := obs.Ring()
		if err != nil {
			return false, err.Error()
		}
		_, ok := r.Member("node2")
		mu.Lock()
		defer mu.Unlock()
		return ok, fmt.Sprint(tries)
	})
}

func TestAPendingProofKeepsTheRingUnsettled(t *testing.T) {
	c := newTestCluster(t)
	release := make(chan struct{})
	cfg := c.config("node0")
	cfg.Verify = func(ctx context.Context, m Member) (crypto.PublicKey, error) {
		select {
		case <-release:
			return c.pub(m.Name), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	obs := c.add(cfg)
	c.addN(1)
	eventually(t, 10*time.Second, "node1 known", func() (bool, string) {
		_, ok := member(obs.Members(), "node1")
		return ok, ""
	})
	if _, err := obs.Ring(); !errors.Is(err, ErrIdentityPending) {
		t.Fatalf("Ring while node1's proof runs: %v, want ErrIdentityPending", err)
	}
	close(release)
	eventually(t, 10*time.Second, "node1 in the ring", func() (bool, string) {
		r, err := obs.Ring()
		if err != nil {
			return false, err.Error()
		}
		_, ok := r.Member("node1")
		return ok, ""
	})
}

// A name whose owner died and that comes back (anyone holding the gossip key could take it)
// proves itself again, even at the same address.
func TestANewLifeProvesItselfAgain(t *testing.T) {
	c := newTestCluster(t)
	var mu sync.Mutex
	tries := 0
	cfg := c.config("node0")
	cfg.Verify = func(ctx context.Context, m Member) (crypto.PublicKey, error) {
		name := m.Name
		mu.Lock()
		defer mu.Unlock()
		if name == "node1" {
			tries++
		}
		return c.pub(name), nil
	}
	obs := c.add(cfg)
	first := c.add(c.config("node1"))
	eventually(t, 10*time.Second, "node1 proven", func() (bool, string) {
		m, _ := member(obs.Members(), "node1")
		return m.Identity == IdentityProven, m.Identity.String()
	})
	addr := first.Addr()
	first.Shutdown()
	eventually(t, 10*time.Second, "node1 dead", func() (bool, string) {
		m, _ := member(obs.Members(), "node1")
		return m.Liveness != StateAlive, m.Liveness.String()
	})
	// memberlist lets a dead name come back from its own gossip address only.
	again := c.config("node1")
	again.BindAddr = addr
	c.add(again)
	eventually(t, 10*time.Second, "node1 proven again", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		m, _ := member(obs.Members(), "node1")
		return tries >= 2 && m.Identity == IdentityProven && m.Liveness == StateAlive, fmt.Sprint(tries, m.Identity, m.Liveness)
	})
}
