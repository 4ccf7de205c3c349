package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// MaxParallelTransfers bounds the (source, target) pairs a plan streams at once.
const MaxParallelTransfers = 4

// Plan is one keyspace's transfers, their members named as the ring names them.
type Plan struct {
	Keyspace  string
	Transfers []ring.Transfer
}

// pairJob is every range one source sends one target for one keyspace, both named as peers.
type pairJob struct {
	keyspace, from, to string
	ranges             token.RangeSet
}

// execute runs stream plans: every (keyspace, from, to) pair streams every table of the
// keyspace that the source holds (and the ring keeps: Ring.Tables), up to
// MaxParallelTransfers pairs at once, each table landed by the Installer. Members become
// peers through Ring.Peer. Transfers completed by an earlier attempt of the same plan are
// skipped (the journal). It returns every failure joined.
func (c *Cluster) execute(ctx context.Context, o *Op, plans []Plan) error {
	var jobs []pairJob
	for _, p := range plans {
		idx := map[[2]string]int{}
		for _, t := range p.Transfers {
			from, err := c.Ring.Peer(t.From)
			if err != nil {
				return err
			}
			to, err := c.Ring.Peer(t.To)
			if err != nil {
				return err
			}
			k := [2]string{from, to}
			i, ok := idx[k]
			if !ok {
				i = len(jobs)
				idx[k] = i
				jobs = append(jobs, pairJob{keyspace: p.Keyspace, from: from, to: to})
			}
			jobs[i].ranges = append(jobs[i].ranges, t.Range)
		}
	}
	j, err := openJournal(c.Journal, planKey(o.Kind(), plans))
	if err != nil {
		return fmt.Errorf("operation journal: %w", err)
	}
	errs := EachTransfer(ctx, len(jobs), func(i int, waited error) error {
		if waited != nil {
			return waited
		}
		return c.runPair(ctx, o, jobs[i], j)
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return j.clear()
}

// EachTransfer runs fn(i) for i in [0, n), at most MaxParallelTransfers at a time, and returns
// their errors by index. fn is called for every i: with waited set to ctx's error when ctx
// ended before a slot came free (it then runs without one, to record the failure).
func EachTransfer(ctx context.Context, n int, fn func(i int, waited error) error) []error {
	sem := make(chan struct{}, MaxParallelTransfers)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
				errs[i] = fn(i, nil)
			case <-ctx.Done():
				errs[i] = fn(i, ctx.Err())
			}
		}()
	}
	wg.Wait()
	return errs
}

func (c *Cluster) runPair(ctx context.Context, o *Op, j pairJob, journal *opJournal) error {
	held, err := c.Peers.Tables(ctx, j.from, j.keyspace)
	if err != nil {
		return fmt.Errorf("listing %s's tables: %w", j.from, err)
	}
	install := c.installer()
	var errs []error
	for _, t := range c.Ring.Tables(j.keyspace, held) {
		// The ranges an earlier attempt of this operation installed into this receiver, from
		// whichever source, are not fetched again: that would install their partitions twice.
		key := func(r token.Range) string {
			return strings.Join([]string{t.Keyspace, t.Table, t.ID, j.to, r.String()}, "|")
		}
		var todo token.RangeSet
		for _, r := range j.ranges {
			if !journal.has(key(r)) {
				todo = append(todo, r)
			}
		}
		req := FetchOpRequest{Source: j.from, Keyspace: t.Keyspace, Table: t.Table, TableID: t.ID, Ranges: todo.String()}
		var idx int
		o.Update(func(s *OpStatus) {
			idx = len(s.Transfers)
			s.Transfers = append(s.Transfers, TransferStatus{From: j.from, To: j.to, Keyspace: t.Keyspace, Table: t.Table,
				Ranges: j.ranges.String(), State: adminapi.OpRunning})
		})
		if len(todo) == 0 {
			o.Update(func(s *OpStatus) { s.Transfers[idx].State = adminapi.OpComplete })
			continue
		}
		var res FetchOpResponse
		res, err = install.Install(ctx, o, j.to, req)
		o.Update(func(s *OpStatus) {
			ts := &s.Transfers[idx]
			ts.SSTables, ts.Skipped, ts.BytesReceived = len(res.SSTables), res.Skipped, res.BytesReceived
			ts.State = adminapi.OpComplete
			if err != nil {
				ts.State, ts.Error = adminapi.OpFailed, err.Error()
			}
		})
		if err == nil {
			keys := make([]string, len(todo))
			for i, r := range todo {
				keys[i] = key(r)
			}
			err = journal.add(keys...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%s %s->%s: %w", t.Keyspace, t.Table, j.from, j.to, err))
		}
	}
	return errors.Join(errs...)
}

// plans computes the change's stream plan for every keyspace of the ring.
func (c *Cluster) plans(r ring.Ring, ch ring.Change) ([]Plan, error) {
	kss, err := c.Ring.Keyspaces("")
	if err != nil {
		return nil, err
	}
	down := downNames(c.Ring.Down())
	var out []Plan
	for _, ks := range kss {
		p, err := ring.Plan(r, ks.Strategy, ch, ring.PlanOptions{Down: down})
		if err != nil {
			return nil, fmt.Errorf("keyspace %s: %w", ks.Name, err)
		}
		out = append(out, Plan{Keyspace: ks.Name, Transfers: p.Transfers})
	}
	return out, nil
}

func downNames(us []Unavailable) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Name)
	}
	return out
}
