package node

import (
	"context"
	"fmt"

	"github.com/sluicedb/sluice/membership/ring"
)

// StartRebuild fills this NORMAL node with the data of the ranges it replicates. What it
// already holds is not looked at: a rebuild of a node that has data duplicates it until
// compaction, as in Cassandra. A retry after a failure resumes: transfers an earlier attempt
// completed are skipped (the operation journal).
func (n *Node) StartRebuild(req RebuildRequest) (OpStatus, error) {
	if err := n.refuseOwnRing("rebuild"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if req.Keyspace != "" {
		if _, ok := n.cfg.Keyspaces[req.Keyspace]; !ok {
			return OpStatus{}, badRequest{fmt.Errorf("rebuild: keyspace %q has no replication in the configuration", req.Keyspace)}
		}
	}
	if s := c.state(); s != ring.Normal {
		return OpStatus{}, fmt.Errorf("%w: rebuild needs NORMAL, node is %v", ErrBadState, s)
	}
	detail := req.SourceDC
	if req.Keyspace != "" {
		detail += " " + req.Keyspace
	}
	return n.startOp(OpRebuild, detail, func(ctx context.Context, o *op) error { return c.rebuild(ctx, o, req) })
}

func (c *cluster) rebuild(ctx context.Context, o *op, req RebuildRequest) error {
	r, err := c.settledRing(ctx)
	if err != nil {
		return err
	}
	var plans []ksPlan
	for _, ks := range sortedKeys(c.n.cfg.Keyspaces) {
		if req.Keyspace != "" && ks != req.Keyspace {
			continue
		}
		s, _ := c.n.cfg.Keyspaces[ks].Strategy()
		ts, err := ring.RebuildPlan(r, s, c.n.cfg.Name, ring.RebuildOptions{SourceDC: req.SourceDC, Down: c.down()})
		if err != nil {
			return fmt.Errorf("keyspace %s: %w", ks, err)
		}
		plans = append(plans, ksPlan{keyspace: ks, transfers: ts})
	}
	return c.execute(ctx, o, plans)
}
