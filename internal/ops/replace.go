package ops

import (
	"context"
	"fmt"

	"github.com/sluicedb/sluice/membership/ring"
)

// Replace streams every range the dead member replicates from another live replica of it, then
// takes the member's tokens and becomes NORMAL announcing that it replaces it (OwnRing.TakeOver),
// which drops the member from every ring.
func (c *Cluster) Replace(ctx context.Context, o *Op, dead string) error {
	if _, err := c.Own.Settled(ctx); err != nil {
		return err
	}
	// The membership tells a new member about the live ones only; a peer's view has the dead
	// one.
	r, err := c.Own.PeerRing(ctx)
	if err != nil {
		return err
	}
	m, ok := r.Member(dead)
	if !ok || m.State != ring.Normal {
		return fmt.Errorf("%w: cannot replace %s: not a NORMAL member of the ring", ErrBadState, dead)
	}
	if c.Own.Alive(dead) {
		return fmt.Errorf("%w: cannot replace %s: it is alive", ErrBadState, dead)
	}
	kss, err := c.Own.Keyspaces("")
	if err != nil {
		return err
	}
	var plans []Plan
	for _, ks := range kss {
		ts, err := ring.RebuildPlan(r, ks.Strategy, dead, ring.RebuildOptions{Down: append(downNames(c.Own.Down()), dead)})
		if err != nil {
			return fmt.Errorf("keyspace %s: %w", ks.Name, err)
		}
		for i := range ts {
			ts[i].To = c.Own.Self()
		}
		plans = append(plans, Plan{Keyspace: ks.Name, Transfers: ts})
	}
	if err := c.execute(ctx, o, plans); err != nil {
		return err
	}
	tokens := make([]int64, len(m.Tokens))
	for i, t := range m.Tokens {
		tokens[i] = t.Long
	}
	if err := c.Own.SaveState(ring.Normal, tokens); err != nil {
		return err
	}
	if err := c.Own.SetTokens(tokens); err != nil {
		return err
	}
	return c.Own.TakeOver(dead)
}
