package gossip

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/sluicedb/sluice/membership/gossip/claim"
	"github.com/sluicedb/sluice/membership/ring"
)

// The attacker of these tests holds the gossip key and runs a node ("mallory"), but has no
// certificate of the cluster CA: its proof fails, and every key it can sign with is its own.

// certCluster starts node0 (the observer, which proves members), node1 (a proven member)
// and mallory, and waits until node0's ring holds node1.
func certCluster(t *testing.T, verify bool) (c *testCluster, obs, victim, mallory *Gossip) {
	c = newTestCluster(t)
	config := func(name string) Config {
		cfg := c.config(name)
		if verify {
			cfg.Verify = func(ctx context.Context, m Member) (crypto.PublicKey, error) {
				if m.Name == "mallory" {
					return nil, errors.New("certificate signed by unknown authority")
				}
				return c.pub(m.Name), nil
			}
		}
		return cfg
	}
	obs = c.add(config("node0"))
	victim = c.add(config("node1"))
	mallory = c.add(config("mallory"))
	eventually(t, 10*time.Second, "node0's ring holds node1 with its tokens", func() (bool, string) {
		r, err := obs.Ring()
		if err != nil {
			return false, err.Error()
		}
		m, _ := member(obs.Members(), "node1")
		want, _ := victim.Tokens()
		_, ok := r.Member("node1")
		return ok && slices.Equal(m.Tokens, want), fmt.Sprint(ok, len(m.Tokens))
	})
	return c, obs, victim, mallory
}

// takeover is the campaign's forged token set: one token just below each of obs's tokens,
// in victim's name, so that victim would own nearly all of obs's ranges.
func takeover(obs *Gossip, version uint64) tokenSet {
	own, _ := obs.Tokens()
	ts := make([]int64, 0, len(own))
	for _, v := range own {
		if v != math.MinInt64 {
			ts = append(ts, v-1)
		}
	}
	return tokenSet{version: version, tokens: ts}
}

// forge returns the chunks of s in name's name, signed with key (unsigned when key is nil).
func forge(t *testing.T, key crypto.Signer, label, name string, s tokenSet) [][]byte {
	t.Helper()
	var out [][]byte
	for _, c := range chunkClaims(name, s) {
		if key == nil {
			out = append(out, c.Encode())
			continue
		}
		b, err := claim.Sign(key, label, c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// ownership is the fraction of the ring obs owns.
func ownership(t *testing.T, obs *Gossip) float64 {
	t.Helper()
	r, err := obs.Ring()
	if err != nil {
		t.Fatal(err)
	}
	return ring.Ownership(r, ring.SimpleStrategy{RF: 1})[obs.cfg.Name]
}

// inject delivers msgs to obs both ways an attacker can: broadcast by mallory's gossip rounds
// and in a push/pull state.
func inject(obs, mallory *Gossip, name string, msgs [][]byte) {
	for _, m := range msgs {
		mallory.bcast.QueueBroadcast(&chunkBroadcast{name: name, version: 1, msg: m})
	}
	(*delegate)(obs).MergeRemoteState(appendState(nil, msgs), false)
}

// The campaign's token takeover: a forged chunk set naming proven member node1, signed with
// the attacker's own key or not at all, is dropped and counted; node1's set and node0's
// ownership stay what they were.
func TestForgedTokenChunksAreRejected(t *testing.T) {
	c, obs, victim, mallory := certCluster(t, true)
	before := ownership(t, obs)
	want, wantVersion := victim.Tokens()
	forged := takeover(obs, uint64(time.Now().UnixNano()))
	inject(obs, mallory, "node1", forge(t, c.key("mallory"), c.label, "node1", forged))
	inject(obs, mallory, "node1", forge(t, nil, c.label, "node1", forged))
	eventually(t, 5*time.Second, "both forgeries counted", func() (bool, string) {
		r := obs.Rejected()
		return r[RejectBadSignature] > 0 && r[RejectUnsigned] > 0, fmt.Sprint(r)
	})
	time.Sleep(500 * time.Millisecond) // let mallory's broadcasts arrive too
	m, _ := member(obs.Members(), "node1")
	if !slices.Equal(m.Tokens, want) || m.TokensVersion != wantVersion {
		t.Fatalf("node1's tokens changed to %d tokens v%d (want v%d, forged v%d), rejected %v", len(m.Tokens), m.TokensVersion, wantVersion, forged.version, obs.Rejected())
	}
	if after := ownership(t, obs); after != before {
		t.Fatalf("node0's ownership moved from %.3f to %.3g", before, after)
	}
}

// The same forgery in a cluster without certificates is accepted: whoever holds the gossip
// key there speaks for every member (the threat model says so). This is the "before" of the
// test above, and shows what it guards against.
func TestWithoutCertificatesTheGossipKeySpeaksForEveryone(t *testing.T) {
	_, obs, _, mallory := certCluster(t, false)
	before := ownership(t, obs)
	inject(obs, mallory, "node1", forge(t, nil, "", "node1", takeover(obs, uint64(time.Now().UnixNano()))))
	if after := ownership(t, obs); after > before/100 {
		t.Fatalf("forgery not applied: ownership %.3f → %.3g", before, after)
	}
}

// A forged leave intent for node1 does not mark it leaving (so its departure would still be
// a failure, its ranges still its own).
func TestForgedLeaveIntentIsRejected(t *testing.T) {
	c, obs, _, mallory := certCluster(t, true)
	for _, key := range []crypto.Signer{c.key("mallory"), nil} {
		lc := leaveClaim("node1", uint64(time.Now().UnixNano()))
		msg := lc.Encode()
		if key != nil {
			var err error
			if msg, err = claim.Sign(key, c.label, lc); err != nil {
				t.Fatal(err)
			}
		}
		mallory.bcast.QueueBroadcast(&leaveBroadcast{name: "node1", msg: msg})
		(*delegate)(obs).NotifyMsg(msg)
	}
	time.Sleep(500 * time.Millisecond)
	obs.mu.Lock()
	leaving := obs.members["node1"].leaving
	obs.mu.Unlock()
	if leaving {
		t.Fatal("a forged leave intent marked node1 leaving")
	}
	if r := obs.Rejected(); r[RejectBadSignature] == 0 || r[RejectUnsigned] == 0 {
		t.Fatalf("rejections %v", r)
	}
}

// The campaign's wrap: a claim of node0's own tokens at version 2^64-1 made node0's next
// version wrap to 0, so its refutation never won. Now a claim in node0's name it did not sign
// is dropped without any refutation, and even one it signed cannot sit above its clock.
func TestAClaimInOurNameCannotWrapOurVersion(t *testing.T) {
	c, obs, _, mallory := certCluster(t, true)
	own, version := obs.Tokens()
	for _, f := range []struct {
		key     crypto.Signer
		version uint64
	}{
		{c.key("mallory"), math.MaxUint64}, // forged, at the top
		{c.key("mallory"), version + 1},    // forged, plausible
		{nil, version + 1},                 // unsigned
		{c.key("node0"), math.MaxUint64},   // even with node0's own key: beyond its clock
	} {
		inject(obs, mallory, "node0", forge(t, f.key, c.label, "node0", tokenSet{version: f.version, tokens: []int64{1}}))
	}
	time.Sleep(500 * time.Millisecond)
	got, gotVersion := obs.Tokens()
	if gotVersion != version || !slices.Equal(got, own) {
		t.Fatalf("node0's own set moved from v%d to v%d", version, gotVersion)
	}
	r := obs.Rejected()
	if r[RejectVersionAhead] == 0 || r[RejectBadSignature] == 0 || r[RejectUnsigned] == 0 {
		t.Fatalf("rejections %v", r)
	}
}

// Forged metadata (another state, another stream address) for a proven member is refused
// before memberlist applies it, and so is an older claim of the member's own (a replay).
func TestForgedAndReplayedMetadataAreRefused(t *testing.T) {
	c, obs, victim, _ := certCluster(t, true)
	victim.mu.Lock()
	oldMeta := victim.metaEnc
	victim.mu.Unlock()
	// node1 moves on, so its first claim is now old.
	m := victim.cfg.Meta
	m.DC = "dc9"
	if err := victim.SetMeta(m); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "node0 sees node1 in dc9", func() (bool, string) {
		mm, _ := member(obs.Members(), "node1")
		return mm.Meta.DC == "dc9", mm.Meta.DC
	})
	evil := victim.cfg.Meta
	evil.State, evil.StreamAddr = ring.Leaving, "127.0.0.1:1"
	forged, err := claim.Sign(c.key("mallory"), c.label, metaClaim("node1", evil, uint64(time.Now().UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	node := func(meta []byte) *memberlist.Node {
		return &memberlist.Node{Name: "node1", Addr: net.IPv4(127, 0, 0, 1), Port: 1, Meta: meta}
	}
	if err := (*aliveDelegate)(obs).NotifyAlive(node(forged)); err == nil {
		t.Fatal("forged metadata accepted")
	}
	if err := (*aliveDelegate)(obs).NotifyAlive(node(oldMeta)); err == nil {
		t.Fatal("replayed older metadata accepted")
	}
	mm, _ := member(obs.Members(), "node1")
	if mm.Meta.DC != "dc9" || mm.Meta.State != ring.Normal {
		t.Fatalf("node1's metadata changed: %+v", mm.Meta)
	}
	if r := obs.Rejected(); r[RejectBadSignature] == 0 || r[RejectStale] == 0 {
		t.Fatalf("rejections %v", r)
	}
}

// A member that comes back with a new certificate key proves itself again and its claims,
// signed with the new key, count.
func TestANewCertificateKeyIsProvenAgain(t *testing.T) {
	c, obs, victim, _ := certCluster(t, true)
	addr := victim.Addr()
	victim.Shutdown()
	c.keysMu.Lock()
	delete(c.keys, "node1") // a renewed certificate, a new key
	c.keysMu.Unlock()
	eventually(t, 10*time.Second, "node1 dead", func() (bool, string) {
		m, _ := member(obs.Members(), "node1")
		return m.Liveness != StateAlive, m.Liveness.String()
	})
	cfg := c.config("node1")
	cfg.BindAddr = addr
	cfg.Verify = obs.cfg.Verify
	again := c.add(cfg)
	want, _ := again.Tokens()
	eventually(t, 20*time.Second, "node1's new life in node0's ring", func() (bool, string) {
		m, _ := member(obs.Members(), "node1")
		return m.Identity == IdentityProven && m.Liveness == StateAlive && slices.Equal(m.Tokens, want),
			fmt.Sprint(m.Identity, m.Liveness, len(m.Tokens))
	})
}
