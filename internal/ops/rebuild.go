package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicedb/sluice/membership/ring"
)

// Rebuild fills this node with the data of the ranges it replicates on the ring, each range
// from one other replica that can be a source (in req.SourceDC when set), for every keyspace of
// the ring or req.Keyspace: ring.RebuildPlan over whichever Ring the cluster has, run by
// execute, each table landed by the Installer. What the node already holds is not looked at:
// a rebuild of a node that has data duplicates it until compaction, as in Cassandra. With a
// journal, a retry after a failure skips the transfers an earlier attempt completed.
func (c *Cluster) Rebuild(ctx context.Context, o *Op, req RebuildRequest) error {
	plans, err := c.RebuildPlans(ctx, req)
	if err != nil {
		return err
	}
	return c.execute(ctx, o, plans)
}

// RebuildPlans is Rebuild's plan: per keyspace, the transfers to this node.
func (c *Cluster) RebuildPlans(ctx context.Context, req RebuildRequest) ([]Plan, error) {
	r, err := c.Ring.Settled(ctx)
	if err != nil {
		return nil, err
	}
	if req.SourceDC != "" && !hasDC(r, req.SourceDC) {
		return nil, BadRequest{fmt.Errorf("rebuild: no node of the ring is in DC %q", req.SourceDC)}
	}
	kss, err := c.Ring.Keyspaces(req.Keyspace)
	if err != nil {
		return nil, err
	}
	down := c.Ring.Down()
	var plans []Plan
	for _, ks := range kss {
		ts, err := ring.RebuildPlan(r, ks.Strategy, c.Ring.Self(), ring.RebuildOptions{SourceDC: req.SourceDC, Down: downNames(down)})
		if err != nil {
			return nil, fmt.Errorf("keyspace %s: %w%s", ks.Name, err, unavailableNote(down, req.SourceDC))
		}
		plans = append(plans, Plan{Keyspace: ks.Name, Transfers: ts})
	}
	return plans, nil
}

func hasDC(r ring.Ring, dc string) bool {
	for _, m := range r.Members() {
		if m.Node.DC == dc {
			return true
		}
	}
	return false
}

// unavailableNote lists the members that could not be sources (in sourceDC when set).
func unavailableNote(down []Unavailable, sourceDC string) string {
	var out []string
	for _, u := range down {
		if sourceDC == "" || u.DC == sourceDC {
			out = append(out, fmt.Sprintf("%s (%s, %s): %s", u.Name, u.Where, u.DC, u.Why))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (not sources: " + strings.Join(out, "; ") + ")"
}
