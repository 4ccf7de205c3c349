package ops

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// Repair repairs one table with every other replica of the ranges want (all this node
// replicates when nil). For each peer and each range both replicate, this node builds a Merkle
// tree of its own data and asks the peer for the same tree (peer call repair_tree); for the
// leaves that differ both list per-partition digests (repair_digests), and only the partitions
// that differ move, towards the side that lacks something (a fetch by this node, or one the
// peer runs), so both hold the union. The peers are repaired one after the other: once this
// node holds what the first peer had, a second peer that holds the same finds nothing to send
// it. Partitions fetched whole next to copies already held reconcile on read.
func (c *Cluster) Repair(ctx context.Context, o *Op, req RepairRequest, want token.RangeSet) error {
	r, err := c.Own.Current()
	if err != nil {
		return err
	}
	kss, err := c.Own.Keyspaces(req.Keyspace)
	if err != nil {
		return err
	}
	if len(kss) != 1 {
		return fmt.Errorf("repair: keyspace %q has no replication", req.Keyspace)
	}
	s := kss[0].Strategy
	self := c.Own.Self()
	mine := ring.ReplicaRanges(r, s, self)
	if want != nil {
		mine = repair.Intersect(mine, ring.Normalize(want))
	}
	if !c.Own.Announced(self) {
		return errors.New("repair: this node's stream address is unknown")
	}
	var errs []error
	for _, m := range r.Members() {
		peer := m.Node.Name
		if peer == self {
			continue
		}
		common := repair.Intersect(mine, ring.CommonRanges(r, s, self, peer))
		if len(common) == 0 {
			continue
		}
		var idx int
		o.Update(func(st *OpStatus) {
			idx = len(st.Repair)
			st.Repair = append(st.Repair, RepairResult{Peer: peer, Keyspace: req.Keyspace, Table: req.Table,
				Ranges: common.String(), State: adminapi.OpRunning})
		})
		res, err := c.repairPeer(ctx, o, req, peer, common)
		o.Update(func(st *OpStatus) {
			rr := &st.Repair[idx]
			rr.Trees, rr.Partitions, rr.Mismatched = res.Trees, res.Partitions, res.Mismatched
			rr.BytesFetched, rr.BytesSent = res.BytesFetched, res.BytesSent
			rr.PartitionsFetched, rr.PartitionsSent = res.PartitionsFetched, res.PartitionsSent
			rr.State = adminapi.OpComplete
			if err != nil {
				rr.State, rr.Error = adminapi.OpFailed, err.Error()
			}
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("repair with %s: %w", peer, err))
		}
	}
	return errors.Join(errs...)
}

// repairPeer compares the common ranges with one peer and streams what differs, where it is
// needed. The trees find the leaves that differ; for those, both sides list their partitions'
// digests (repair.Digest: the peer's over peerrpc, in bounded pages), and repair.PlanSync picks
// the partitions that must move and their direction. Each direction is one fetch of the runs
// of the sender's partitions that must move (more than one only when the runs do not fit one
// request).
func (c *Cluster) repairPeer(ctx context.Context, o *Op, req RepairRequest, peer string, common token.RangeSet) (RepairResult, error) {
	var res RepairResult
	if err := c.Peers.Proven(peer); err != nil {
		return res, err
	}
	specs, err := c.Local.RepairSpecs(req.Keyspace, req.Table, common)
	if err != nil {
		return res, err
	}
	mine, err := c.Local.RepairTrees(ctx, req.Keyspace, req.Table, specs)
	if err != nil {
		return res, err
	}
	res.Trees = len(mine)
	var mismatched token.RangeSet
	// The trees of a request share their depth, and a request stays within the peer's bounds
	// (TreeBatches).
	for _, batch := range TreeBatches(specs) {
		var rs token.RangeSet
		var local []*repair.Tree
		for _, i := range batch {
			rs, local = append(rs, specs[i].Range), append(local, mine[i])
		}
		tr, err := c.Peers.Trees(ctx, peer, TreeRequest{Keyspace: req.Keyspace, Table: req.Table, Ranges: rs.String(), Depth: specs[batch[0]].Depth})
		if err != nil {
			return res, err
		}
		if len(tr.Trees) != len(local) {
			return res, fmt.Errorf("%s sent %d trees for %d ranges", peer, len(tr.Trees), len(local))
		}
		for i, t := range local {
			res.Partitions += t.Partitions()
			leaves, err := repair.DiffLeaves(t, tr.Trees[i])
			if err != nil {
				return res, fmt.Errorf("%s's tree of %v: %w", peer, t.Range, err)
			}
			mismatched = append(mismatched, t.Ranges(leaves)...)
		}
	}
	if len(mismatched) == 0 {
		return res, nil
	}
	mismatched = ring.Normalize(mismatched)
	res.Mismatched = mismatched.String()
	plan, err := c.syncPlan(ctx, req, peer, mismatched)
	if err != nil {
		return res, err
	}
	res.PartitionsFetched, res.PartitionsSent = plan.Fetched, plan.Sent
	if len(plan.Fetch) == 0 && len(plan.Send) == 0 {
		return res, nil
	}
	self := c.Own.Self()
	id, err := c.tableID(ctx, req.Keyspace, req.Table, peer)
	if err != nil {
		return res, err
	}
	var errs []error
	// This node's own fetches take any number of ranges up to the stream request's bound; a
	// fetch the peer runs is asked for in a peer call, whose request is bounded in bytes.
	for _, rs := range BatchRanges(plan.Fetch, maxFetchRanges, 0) {
		in := FetchOpRequest{Source: peer, Keyspace: req.Keyspace, Table: req.Table, TableID: id, Ranges: rs.String()}
		got, err := repairTransfer(o, peer, self, in, func() (FetchOpResponse, error) {
			return c.Peers.Fetch(ctx, self, in)
		})
		res.BytesFetched += got.BytesReceived
		errs = append(errs, err)
	}
	for _, rs := range BatchRanges(plan.Send, maxFetchRanges, RangesBudget) {
		out := FetchOpRequest{Source: self, Keyspace: req.Keyspace, Table: req.Table, TableID: id, Ranges: rs.String()}
		sent, err := repairTransfer(o, self, peer, out, func() (FetchOpResponse, error) {
			return c.Peers.Fetch(ctx, peer, out)
		})
		res.BytesSent += sent.BytesReceived
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// Bounds of the requests a repair sends: the ranges of one fetch, and the bytes of range text
// in one peer call (peerrpc.MaxRequest less room for the rest of the request). Tree and digest
// requests also obey peerrpc's per-call bounds (TreeBatches, peerrpc.MaxCallRanges).
const (
	maxFetchRanges = 1 << 15
	RangesBudget   = peerrpc.MaxRequest - 4<<10
)

// BatchRanges cuts rs into consecutive batches of at most maxRanges ranges and, when budget
// is positive, at most budget bytes of text each.
func BatchRanges(rs token.RangeSet, maxRanges, budget int) []token.RangeSet {
	var out []token.RangeSet
	var cur token.RangeSet
	size := 0
	for _, r := range rs {
		n := len(r.String()) + 1
		if len(cur) > 0 && (len(cur) == maxRanges || (budget > 0 && size+n > budget)) {
			out, cur, size = append(out, cur), nil, 0
		}
		cur, size = append(cur, r), size+n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// syncPlan lists this node's and the peer's digests of the mismatched ranges and plans which
// partitions go which way.
func (c *Cluster) syncPlan(ctx context.Context, req RepairRequest, peer string, mismatched token.RangeSet) (repair.SyncPlan, error) {
	tables, release, err := c.Local.OpenTable(req.Keyspace, req.Table)
	if err != nil {
		return repair.SyncPlan{}, err
	}
	mine, _, err := repair.Digests(ctx, tables, mismatched, nil, 0)
	release()
	if err != nil {
		return repair.SyncPlan{}, err
	}
	var theirs []repair.Digest
	for _, rs := range BatchRanges(mismatched, peerrpc.MaxCallRanges, RangesBudget) {
		var after *int64
		for {
			dr, err := c.Peers.Digests(ctx, peer, DigestRequest{Keyspace: req.Keyspace, Table: req.Table,
				Ranges: rs.String(), After: after, Limit: repair.MaxDigestsPerPage})
			if err != nil {
				return repair.SyncPlan{}, err
			}
			raw, err := base64.StdEncoding.DecodeString(dr.Digests)
			if err != nil {
				return repair.SyncPlan{}, fmt.Errorf("%s's digests: %w: %v", peer, repair.ErrBadDigests, err)
			}
			page, err := repair.ParseDigests(raw, rs, after, repair.MaxDigestsPerPage)
			if err != nil {
				return repair.SyncPlan{}, fmt.Errorf("%s's digests of %v: %w", peer, rs, err)
			}
			theirs = append(theirs, page...)
			if !dr.More {
				break
			}
			if len(page) == 0 {
				return repair.SyncPlan{}, fmt.Errorf("%s's digests: %w: an empty page with more to come", peer, repair.ErrBadDigests)
			}
			last := page[len(page)-1].Token
			after = &last // ParseDigests made it greater than the previous page's
		}
	}
	plan, err := repair.PlanSync(mismatched, mine, theirs)
	if err != nil {
		return plan, fmt.Errorf("repair with %s: %w", peer, err)
	}
	return plan, nil
}

// repairTransfer runs one direction of a repair's streaming, recorded as a transfer.
func repairTransfer(o *Op, from, to string, req FetchOpRequest, run func() (FetchOpResponse, error)) (FetchOpResponse, error) {
	var idx int
	o.Update(func(s *OpStatus) {
		idx = len(s.Transfers)
		s.Transfers = append(s.Transfers, TransferStatus{From: from, To: to, Keyspace: req.Keyspace, Table: req.Table,
			Ranges: req.Ranges, State: adminapi.OpRunning})
	})
	res, err := run()
	o.Update(func(s *OpStatus) {
		ts := &s.Transfers[idx]
		ts.SSTables, ts.Skipped, ts.BytesReceived = len(res.SSTables), res.Skipped, res.BytesReceived
		ts.State = adminapi.OpComplete
		if err != nil {
			ts.State, ts.Error = adminapi.OpFailed, err.Error()
		}
	})
	if err != nil {
		return res, fmt.Errorf("%s->%s: %w", from, to, err)
	}
	return res, nil
}

func depths(specs []repair.Spec) []int {
	var out []int
	for _, sp := range specs {
		out = append(out, sp.Depth)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// tableID is the table's id on this node, or else on the peer, so that whichever side lacks
// the table can create its directory.
func (c *Cluster) tableID(ctx context.Context, keyspace, table, peer string) (string, error) {
	dirs, err := c.Local.Catalog.TableDirs()
	if err != nil {
		return "", err
	}
	for _, td := range dirs {
		if td.Keyspace == keyspace && td.Table == table {
			return td.ID, nil
		}
	}
	ts, err := c.Peers.Tables(ctx, peer, keyspace)
	if err != nil {
		return "", err
	}
	for _, t := range ts {
		if t.Table == table {
			return t.ID, nil
		}
	}
	return "", fmt.Errorf("%w: %s.%s on neither replica", catalog.ErrUnknownTable, keyspace, table)
}
