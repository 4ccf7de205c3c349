package testcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
)

// rebuild adds a second DC as an operator does: the keyspace already replicates to dc2
// (Options.ReplicaDCs), so its new nodes join NORMAL without bootstrapping (auto_bootstrap
// off) and own their dc2 replicas at once, holding nothing; then each runs rebuild from dc1,
// one after the other (nodetool rebuild -- dc1).
func (d *drill) rebuild(ctx context.Context) error {
	c := d.c
	old := c.Names()
	var added []*Node
	for i := range len(old) {
		name := fmt.Sprintf("n%d", len(old)+i+1)
		n, err := c.AddNode(ctx, NodeSpec{Name: name, DC: "dc2", Rack: fmt.Sprintf("rack%d", i%c.opts.Racks+1),
			InitialTokens: c.initialTokens(len(old) + i)})
		if err != nil {
			return err
		}
		added = append(added, n)
	}
	if err := c.WaitNormal(ctx, time.Minute, c.Names()...); err != nil {
		return err
	}
	for _, n := range added {
		s, err := n.StartOp(ctx, adminapi.OpRebuild, adminapi.RebuildRequest{SourceDC: "dc1", Keyspace: c.opts.Keyspace})
		if err != nil {
			return err
		}
		s, err = n.WaitOp(ctx, s.ID, opTimeout)
		for _, t := range s.Transfers {
			d.res.BytesStreamed += t.BytesReceived
			d.ship(t.From, t.Ranges)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// replace kills the last initial node for good and starts a new node with replace_address
// naming it, in its DC and rack: the new node takes the dead one's tokens and streams the
// ranges they replicate from the surviving replicas, then the dead one leaves the ring.
func (d *drill) replace(ctx context.Context) error {
	c := d.c
	names := c.Names()
	dead := c.MustNode(names[len(names)-1])
	d.o.Logf("%s: kill -9 %s (pid %d) for good", d.name, dead.Name, dead.PID())
	if err := dead.Kill(); err != nil {
		return err
	}
	rest := names[:len(names)-1]
	err := waitFor(ctx, time.Minute, "the others to see "+dead.Name+" down", func() (bool, error) {
		for _, name := range rest {
			v, err := c.MustNode(name).Ring(ctx)
			if err != nil {
				return false, err
			}
			for _, m := range v.Members {
				if m.Name == dead.Name && m.Up {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	name := fmt.Sprintf("n%d", len(names)+1)
	n, err := c.AddNode(ctx, NodeSpec{Name: name, Replace: dead.Name, DC: dead.Spec.DC, Rack: dead.Spec.Rack})
	if err != nil {
		return err
	}
	if err := d.finish(ctx, n, adminapi.OpReplace, nil); err != nil {
		return err
	}
	return c.WaitNormal(ctx, time.Minute, append(rest, name)...)
}
