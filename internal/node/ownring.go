package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// ownRing is sluice's own ring as this node's membership (cluster) holds it: the ops.OwnRing
// the cluster operations run over. Members are named by their node names, and each serves its
// own data.
type ownRing struct{ c *cluster }

var _ ops.OwnRing = ownRing{}

// operations is the cluster operations over sluice's own ring, with the operation journal in
// the first data directory.
func (c *cluster) operations() *ops.Cluster {
	r := ownRing{c}
	return &ops.Cluster{Ring: r, Own: r, Peers: c.peers, Local: c.n.local,
		Journal: filepath.Join(c.n.cfg.DataDirs[0], ops.JournalFile), Log: c.log}
}

func (r ownRing) Self() string    { return r.c.n.cfg.Name }
func (r ownRing) Node() ring.Node { return r.c.self() }

func (r ownRing) Settled(ctx context.Context) (ring.Ring, error) { return r.c.settledRing(ctx) }
func (r ownRing) Current() (ring.Ring, error)                    { return r.c.g.Ring() }

// Keyspaces are the configured keyspaces and their replication.
func (r ownRing) Keyspaces(only string) ([]ops.Keyspace, error) {
	var out []ops.Keyspace
	for _, ks := range sortedKeys(r.c.n.cfg.Keyspaces) {
		if only != "" && ks != only {
			continue
		}
		s, _ := r.c.n.cfg.Keyspaces[ks].Strategy() // validated by New
		out = append(out, ops.Keyspace{Name: ks, Strategy: s})
	}
	return out, nil
}

// Down is the members failure detection reports dead or departed.
func (r ownRing) Down() []ops.Unavailable {
	var out []ops.Unavailable
	for _, m := range r.c.g.Members() {
		if m.Liveness != gossip.StateAlive {
			out = append(out, ops.Unavailable{Name: m.Name, DC: m.Meta.DC, Where: m.Addr, Why: m.Liveness.String()})
		}
	}
	return out
}

func (r ownRing) Peer(name string) (string, error) { return name, nil }

func (r ownRing) Tables(_ string, held []TableStatus) []TableStatus { return held }

func (r ownRing) State() ring.NodeState           { return r.c.state() }
func (r ownRing) SetState(s ring.NodeState) error { return r.c.setState(s) }

func (r ownRing) Tokens() []int64 {
	ts, _ := r.c.g.Tokens()
	return ts
}

func (r ownRing) SetTokens(ts []int64) error { return r.c.g.SetTokens(ts) }

func (r ownRing) SaveState(s ring.NodeState, tokens []int64) error {
	return r.c.n.saveState(localState{State: s.String(), Tokens: tokens})
}

// Leave waits until the peers have seen this node LEFT (after Leave, gossip no longer
// re-announces metadata, and a peer that never saw LEFT would keep this node in its ring as
// LEAVING), then leaves gossip and shuts it down.
func (r ownRing) Leave(ctx context.Context) error {
	c := r.c
	c.awaitSeenLeft(ctx)
	if err := c.g.Leave(5 * time.Second); err != nil {
		c.log.Warn().Err(err).Msg("leave announcement")
	}
	return c.g.Shutdown()
}

func (r ownRing) PeerRing(ctx context.Context) (ring.Ring, error) { return r.c.peerRing(ctx) }

func (r ownRing) Alive(name string) bool {
	m, ok := r.c.members()[name]
	return ok && m.Liveness == gossip.StateAlive
}

// TakeOver announces this node NORMAL, replacing dead: gossip.Replaced then drops dead from
// every ring.
func (r ownRing) TakeOver(dead string) error {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	meta := c.meta
	meta.State, meta.Replaces = ring.Normal, dead
	if err := c.g.SetMeta(meta); err != nil {
		return err
	}
	c.meta = meta
	c.replacing.Store(false)
	return nil
}

func (r ownRing) Trust(ctx context.Context, rg ring.Ring) error { return r.c.trustRing(ctx, rg) }
func (r ownRing) Unchanged(rg ring.Ring) error                  { return r.c.ringUnchanged(rg) }

func (r ownRing) Announced(name string) bool {
	m, ok := r.c.members()[name]
	return ok && m.Meta.StreamAddr != ""
}

// leftConfirmTimeout bounds the wait for peers to see this node LEFT before it leaves gossip.
const leftConfirmTimeout = 15 * time.Second

func (c *cluster) awaitSeenLeft(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, leftConfirmTimeout)
	defer cancel()
	for _, m := range c.g.Members() {
		if m.Name == c.n.cfg.Name || m.Liveness != gossip.StateAlive || m.Identity != gossip.IdentityProven {
			continue
		}
		for {
			var v RingView
			if err := c.call(ctx, m, peerRing, nil, &v); err == nil && sawLeft(v, c.n.cfg.Name) {
				break
			}
			select {
			case <-ctx.Done():
				c.log.Warn().Str("peer", m.Name).Msg("peer has not seen this node LEFT")
				return
			case <-time.After(ringSettleInterval):
			}
		}
	}
}

func sawLeft(v RingView, name string) bool {
	for _, m := range v.Members {
		if m.Name == name {
			return m.State == ring.Left.String()
		}
	}
	return false
}

// A cleanup acts only on a ring to trust: unchanged for a settle period (one gossip push/pull
// round) and with no unproven member about.

// trustRing waits, for at most the settle wait, until the ring this cleanup computed (r) has
// been unchanged for a settle period, then checks that no unproven member is about.
// A ring that changes again meanwhile is refused: the cleanup was computed on another one.
func (c *cluster) trustRing(ctx context.Context, r ring.Ring) error {
	want := ringFingerprint(r, nil)
	start := time.Now()
	for {
		sum, changed := c.noteRing()
		if sum != want {
			return fmt.Errorf("%w: the ring changed while cleanup was planned; run it again", ErrRingUnsettled)
		}
		settle, wait := c.settleTimes()
		age := time.Since(changed)
		if age >= settle {
			break
		}
		if time.Since(start)+settle-age > wait {
			return fmt.Errorf("%w: ring changed %.1f s ago; cleanup waits for it to settle (at least one gossip round, %g s)",
				ErrRingUnsettled, age.Seconds(), settle.Seconds())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(settle-age, ringSettleInterval)):
		}
	}
	return c.checkProven()
}

// ringUnchanged checks, before dropping, that the ring is still the one confirmed against
// and still has no unproven member about.
func (c *cluster) ringUnchanged(r ring.Ring) error {
	if sum, _ := c.noteRing(); sum != ringFingerprint(r, nil) {
		return fmt.Errorf("%w: the ring changed during cleanup; nothing more dropped, run it again", ErrRingUnsettled)
	}
	return c.checkProven()
}

func (c *cluster) checkProven() error {
	if bad := unprovenMembers(c.g.Members(), c.n.cfg.Name); len(bad) > 0 {
		return fmt.Errorf("%w: %s; cleanup acts only on a ring of proven members", ErrUnprovenMembers, strings.Join(bad, ", "))
	}
	return nil
}

// unprovenMembers names the members that have not proven their identity and are either alive
// or claim a place on the ring (a ring state other than LEFT, or tokens before any state),
// with the verdict. Where claims must be signed (gossip.Config.Signer) an unproven member's
// claims never apply, so such a member shows as alive and silent; without signatures it may
// show claims. Either way the ring is not settled while it is about. Not counted: a replaced
// member (off the ring whatever it claims), and a member whose proof failed and that is gone
// (dead or left): it never was on the ring and cannot come back without proving itself.
func unprovenMembers(ms []gossip.Member, self string) []string {
	replaced := gossip.Replaced(ms)
	var out []string
	for _, m := range ms {
		if m.Name == self || replaced[m.Name] != "" || m.Identity == gossip.IdentityProven {
			continue
		}
		if m.Liveness != gossip.StateAlive {
			claims := len(m.Tokens) > 0
			switch m.Meta.State {
			case ring.Joining, ring.Normal, ring.Leaving, ring.Moving:
				claims = true
			case ring.Left:
				claims = false
			}
			if !claims || m.Identity == gossip.IdentityRefused {
				continue
			}
		}
		why := m.Identity.String()
		if m.IdentityError != "" {
			why += ": " + m.IdentityError
		}
		out = append(out, fmt.Sprintf("%s (%s)", m.Name, why))
	}
	return out
}

// stateReplacing is the state file's state of a node that has not finished replacing a dead
// member: on restart it resumes (its journal skips completed transfers) instead of starting
// over on a directory that is no longer empty.
const stateReplacing = "REPLACING"

// prepareReplace decides, at start, whether this node is (still) replacing a dead member. A new
// one must have empty data directories; it records that it is replacing, and announces no
// state: members without one are in nobody's ring, so the dead member's ranges stay its own
// until the replacement holds their data.
func (c *cluster) prepareReplace(st localState, found bool) (bool, error) {
	n := c.n
	switch {
	case found && st.State == stateReplacing:
	case !found && n.cfg.ReplaceAddress != "":
		if err := n.checkEmpty(); err != nil {
			return false, err
		}
		if err := n.saveState(localState{State: stateReplacing}); err != nil {
			return false, err
		}
	default:
		return false, nil
	}
	if n.cfg.ReplaceAddress == "" {
		return false, fmt.Errorf("%w: %s says this node was replacing a member, but replace_address is not set", ErrBadState, n.stateFilePath())
	}
	c.replacing.Store(true)
	return true, nil
}

// peerRing is the ring as the first live proven peer that can build one reports it (the ring
// peer call): with the dead members this node, new to gossip, never heard of.
func (c *cluster) peerRing(ctx context.Context) (ring.Ring, error) {
	var errs []error
	for _, p := range c.g.Members() {
		if p.Name == c.n.cfg.Name || p.Liveness != gossip.StateAlive || p.Identity != gossip.IdentityProven {
			continue
		}
		var v RingView
		if err := c.call(ctx, p, peerRing, nil, &v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
			continue
		}
		r, err := ringOfView(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
			continue
		}
		return r, nil
	}
	if len(errs) == 0 {
		return ring.Ring{}, errors.New("no live peer to ask for the ring")
	}
	return ring.Ring{}, fmt.Errorf("no peer's ring: %w", errors.Join(errs...))
}

// ringOfView rebuilds a ring from a ring view: its members that hold tokens and are not
// replaced, with their tokens.
func ringOfView(v RingView) (ring.Ring, error) {
	if v.Error != "" {
		return ring.Ring{}, errors.New(v.Error)
	}
	tokens := map[string][]token.Token{}
	for _, t := range v.Tokens {
		tokens[t.Node] = append(tokens[t.Node], token.Token{Kind: token.KindMurmur3, Long: t.Token})
	}
	var ms []ring.Member
	for _, m := range v.Members {
		st, err := ring.ParseNodeState(m.State)
		if err != nil || st == ring.Left || m.ReplacedBy != "" {
			continue
		}
		ms = append(ms, ring.Member{Node: ring.Node{Name: m.Name, DC: m.DC, Rack: m.Rack}, State: st, Tokens: tokens[m.Name]})
	}
	return ring.NewRing(ms...)
}
