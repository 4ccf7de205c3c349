package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

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

// StartReplace retries the replacement of replace_address after a failure.
func (n *Node) StartReplace() (OpStatus, error) {
	if err := n.refuseOwnRing("replace"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if !c.replacing.Load() {
		return OpStatus{}, fmt.Errorf("%w: this node is not replacing a member (replace_address)", ErrBadState)
	}
	return n.startOp(OpReplace, n.cfg.ReplaceAddress, c.replace)
}

// replace streams every range the dead member replicates from another live replica of it, then
// takes the member's tokens and becomes NORMAL announcing Replaces, which drops the member from
// every ring (gossip.Replaced).
func (c *cluster) replace(ctx context.Context, o *op) error {
	dead := c.n.cfg.ReplaceAddress
	if _, err := c.settledRing(ctx); err != nil {
		return err
	}
	// Gossip tells a new member about the live ones only; a peer's view has the dead one.
	r, err := c.peerRing(ctx)
	if err != nil {
		return err
	}
	m, ok := r.Member(dead)
	if !ok || m.State != ring.Normal {
		return fmt.Errorf("%w: cannot replace %s: not a NORMAL member of the ring", ErrBadState, dead)
	}
	if g, ok := c.members()[dead]; ok && g.Liveness == gossip.StateAlive {
		return fmt.Errorf("%w: cannot replace %s: it is alive", ErrBadState, dead)
	}
	var plans []ksPlan
	for _, ks := range sortedKeys(c.n.cfg.Keyspaces) {
		s, _ := c.n.cfg.Keyspaces[ks].Strategy()
		ts, err := ring.RebuildPlan(r, s, dead, ring.RebuildOptions{Down: append(c.down(), dead)})
		if err != nil {
			return fmt.Errorf("keyspace %s: %w", ks, err)
		}
		for i := range ts {
			ts[i].To = c.n.cfg.Name
		}
		plans = append(plans, ksPlan{keyspace: ks, transfers: ts})
	}
	if err := c.execute(ctx, o, plans); err != nil {
		return err
	}
	tokens := longsOf(m.Tokens)
	if err := c.n.saveState(localState{State: ring.Normal.String(), Tokens: tokens}); err != nil {
		return err
	}
	if err := c.g.SetTokens(tokens); err != nil {
		return err
	}
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
