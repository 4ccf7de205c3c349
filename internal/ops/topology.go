package ops

import (
	"context"
	"errors"

	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// The topology operations of sluice's own ring: each computes a membership/ring stream plan
// per keyspace from the settled ring, announces the node's transitional state, runs the plan
// (execute) and then announces the result. They need Own.

// Bootstrap streams the ranges of a JOINING node's tokens from their current replicas and
// makes it NORMAL.
func (c *Cluster) Bootstrap(ctx context.Context, o *Op) error {
	r, err := c.Own.Settled(ctx)
	if err != nil {
		return err
	}
	tokens := c.Own.Tokens()
	ts := make([]token.Token, len(tokens))
	for i, v := range tokens {
		ts[i] = token.Token{Kind: token.KindMurmur3, Long: v}
	}
	plans, err := c.plans(r, ring.Bootstrap(c.Own.Node(), ts))
	if err != nil {
		return err
	}
	if err := c.execute(ctx, o, plans); err != nil {
		return err
	}
	if err := c.Own.SaveState(ring.Normal, tokens); err != nil {
		return err
	}
	return c.Own.SetState(ring.Normal)
}

// Decommission hands this node's ranges to the nodes that take them over and leaves.
func (c *Cluster) Decommission(ctx context.Context, o *Op) error {
	r, err := c.Own.Settled(ctx)
	if err != nil {
		return err
	}
	plans, err := c.plans(r, ring.Decommission(c.Own.Self()))
	if err != nil {
		return err
	}
	if err := c.Own.SetState(ring.Leaving); err != nil {
		return err
	}
	if err := c.execute(ctx, o, plans); err != nil {
		// Stay LEAVING: the ranges are still ours and a retry resumes the fetches.
		return err
	}
	if err := c.Own.SaveState(ring.Left, c.Own.Tokens()); err != nil {
		return err
	}
	if err := c.Own.SetState(ring.Left); err != nil {
		return err
	}
	return c.Own.Leave(ctx)
}

// Move gives this single-token node the token t: the ranges it gains are fetched from their
// current replicas (and others fetch what they gain), then the new token is published. The
// ranges it gives up stay on disk until cleanup.
func (c *Cluster) Move(ctx context.Context, o *Op, t int64) error {
	r, err := c.Own.Settled(ctx)
	if err != nil {
		return err
	}
	plans, err := c.plans(r, ring.Move(c.Own.Self(), token.Token{Kind: token.KindMurmur3, Long: t}))
	if err != nil {
		return err
	}
	if err := c.Own.SetState(ring.Moving); err != nil {
		return err
	}
	if err := c.execute(ctx, o, plans); err != nil {
		// Back to NORMAL at the old token: nothing was published, what was fetched is
		// duplicate data that cleanup removes.
		return errors.Join(err, c.Own.SetState(ring.Normal))
	}
	if err := c.Own.SaveState(ring.Normal, []int64{t}); err != nil {
		return err
	}
	if err := c.Own.SetTokens([]int64{t}); err != nil {
		return err
	}
	return c.Own.SetState(ring.Normal)
}
