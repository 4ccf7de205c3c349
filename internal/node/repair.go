package node

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/token"
)

// TreeRequest is the body of GET or POST /v1/repair/tree: one tree of the given depth per
// range of Ranges, which must be normalized (no range wraps except to the end of the ring).
type TreeRequest struct {
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	Ranges   string `json:"ranges"`
	Depth    int    `json:"depth"`
}

// TreeResponse holds the trees of a TreeRequest, in the order of its ranges.
type TreeResponse struct {
	Trees []*repair.Tree `json:"trees"`
}

// DigestRequest is the body of the peer call repair_digests: the digests of the partitions of
// keyspace.table in Ranges (normalized) with tokens after After (from the start when absent),
// one page of at most Limit (repair.MaxDigestsPerPage when larger or not positive).
type DigestRequest struct {
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	Ranges   string `json:"ranges"`
	After    *int64 `json:"after,omitempty"`
	Limit    int    `json:"limit"`
}

// DigestResponse is one page: the digests (repair.AppendDigests, base64) and whether more
// follow the last token.
type DigestResponse struct {
	Digests string `json:"digests"`
	More    bool   `json:"more"`
}

// StartRepair starts a repair of one table with every other replica of the requested ranges.
// For each peer and each range both replicate, this node builds a Merkle tree of its own data
// and asks the peer for the same tree (peer call repair_tree); for the leaves that differ both
// list per-partition digests (repair_digests), and only the partitions that differ move,
// towards the side that lacks something (a fetch by this node, or one the peer runs), so both
// hold the union. The peers are repaired one after the other: once this node holds what the
// first peer had, a second peer that holds the same finds nothing to send it. Partitions
// fetched whole next to copies already held reconcile on read.
func (n *Node) StartRepair(req RepairRequest) (OpStatus, error) {
	if err := n.refuseOwnRing("repair"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if err := cqlname.CheckTable(req.Keyspace, req.Table); err != nil {
		return OpStatus{}, badRequest{fmt.Errorf("repair: %w", err)}
	}
	if _, ok := n.cfg.Keyspaces[req.Keyspace]; !ok {
		return OpStatus{}, badRequest{fmt.Errorf("repair: keyspace %q has no replication in the configuration", req.Keyspace)}
	}
	var want token.RangeSet
	if req.Ranges != "" {
		if want, err = token.ParseRanges(token.Murmur3, req.Ranges); err != nil {
			return OpStatus{}, badRequest{fmt.Errorf("repair: %w", err)}
		}
	}
	if s := c.state(); s != ring.Normal {
		return OpStatus{}, fmt.Errorf("%w: repair needs NORMAL, node is %v", ErrBadState, s)
	}
	detail := req.Keyspace + "." + req.Table
	if req.Ranges != "" {
		detail += " " + req.Ranges
	}
	return n.startOp(OpRepair, detail, func(ctx context.Context, o *op) error { return c.repair(ctx, o, req, want) })
}

func (c *cluster) repair(ctx context.Context, o *op, req RepairRequest, want token.RangeSet) error {
	r, err := c.g.Ring()
	if err != nil {
		return err
	}
	s, _ := c.n.cfg.Keyspaces[req.Keyspace].Strategy()
	self := c.n.cfg.Name
	mine := ring.ReplicaRanges(r, s, self)
	if want != nil {
		mine = repair.Intersect(mine, ring.Normalize(want))
	}
	members := c.members()
	me, ok := members[self]
	if !ok || me.Meta.StreamAddr == "" {
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
		o.update(func(st *OpStatus) {
			idx = len(st.Repair)
			st.Repair = append(st.Repair, RepairResult{Peer: peer, Keyspace: req.Keyspace, Table: req.Table,
				Ranges: common.String(), State: OpRunning})
		})
		res, err := c.repairPeer(ctx, o, req, members[peer], common)
		o.update(func(st *OpStatus) {
			rr := &st.Repair[idx]
			rr.Trees, rr.Partitions, rr.Mismatched = res.Trees, res.Partitions, res.Mismatched
			rr.BytesFetched, rr.BytesSent = res.BytesFetched, res.BytesSent
			rr.PartitionsFetched, rr.PartitionsSent = res.PartitionsFetched, res.PartitionsSent
			rr.State = OpComplete
			if err != nil {
				rr.State, rr.Error = OpFailed, err.Error()
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
func (c *cluster) repairPeer(ctx context.Context, o *op, req RepairRequest, m gossip.Member, common token.RangeSet) (RepairResult, error) {
	var res RepairResult
	peer := m.Name
	if _, err := proven(map[string]gossip.Member{peer: m}, peer); err != nil {
		return res, err
	}
	specs, err := c.n.repairSpecs(req.Keyspace, req.Table, common)
	if err != nil {
		return res, err
	}
	mine, err := c.n.RepairTrees(ctx, req.Keyspace, req.Table, specs)
	if err != nil {
		return res, err
	}
	res.Trees = len(mine)
	var mismatched token.RangeSet
	// The trees of a request share their depth, and a request stays within the peer's bounds
	// (treeBatches).
	for _, batch := range treeBatches(specs) {
		var rs token.RangeSet
		var local []*repair.Tree
		for _, i := range batch {
			rs, local = append(rs, specs[i].Range), append(local, mine[i])
		}
		var tr TreeResponse
		if err := c.callHeavy(ctx, m, peerRepairTree,
			TreeRequest{Keyspace: req.Keyspace, Table: req.Table, Ranges: rs.String(), Depth: specs[batch[0]].Depth}, &tr); err != nil {
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
	plan, err := c.syncPlan(ctx, req, m, mismatched)
	if err != nil {
		return res, err
	}
	res.PartitionsFetched, res.PartitionsSent = plan.Fetched, plan.Sent
	if len(plan.Fetch) == 0 && len(plan.Send) == 0 {
		return res, nil
	}
	id, err := c.tableID(ctx, req.Keyspace, req.Table, peer)
	if err != nil {
		return res, err
	}
	var errs []error
	// This node's own fetches take any number of ranges up to the stream request's bound; a
	// fetch the peer runs is asked for in a peer call, whose request is bounded in bytes.
	for _, rs := range batchRanges(plan.Fetch, maxFetchRanges, 0) {
		in := FetchOpRequest{Source: peer, Keyspace: req.Keyspace, Table: req.Table, TableID: id, Ranges: rs.String()}
		got, err := c.n.repairTransfer(ctx, o, peer, c.n.cfg.Name, in, func() (FetchOpResponse, error) {
			return c.peers.fetch(ctx, c.n.cfg.Name, in)
		})
		res.BytesFetched += got.BytesReceived
		errs = append(errs, err)
	}
	for _, rs := range batchRanges(plan.Send, maxFetchRanges, rangesBudget) {
		out := FetchOpRequest{Source: c.n.cfg.Name, Keyspace: req.Keyspace, Table: req.Table, TableID: id, Ranges: rs.String()}
		sent, err := c.n.repairTransfer(ctx, o, c.n.cfg.Name, peer, out, func() (FetchOpResponse, error) {
			return c.peers.fetch(ctx, peer, out)
		})
		res.BytesSent += sent.BytesReceived
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// Bounds of the requests a repair sends: the ranges of one fetch, and the bytes of range text
// in one peer call (peerrpc.MaxRequest less room for the rest of the request). Tree and digest
// requests also obey peerrpc's per-call bounds (treeBatches, peerrpc.MaxCallRanges).
const (
	maxFetchRanges = 1 << 15
	rangesBudget   = peerrpc.MaxRequest - 4<<10
)

// batchRanges cuts rs into consecutive batches of at most maxRanges ranges and, when budget
// is positive, at most budget bytes of text each.
func batchRanges(rs token.RangeSet, maxRanges, budget int) []token.RangeSet {
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
func (c *cluster) syncPlan(ctx context.Context, req RepairRequest, m gossip.Member, mismatched token.RangeSet) (repair.SyncPlan, error) {
	tables, release, err := c.n.openTable(req.Keyspace, req.Table)
	if err != nil {
		return repair.SyncPlan{}, err
	}
	mine, _, err := repair.Digests(ctx, tables, mismatched, nil, 0)
	release()
	if err != nil {
		return repair.SyncPlan{}, err
	}
	var theirs []repair.Digest
	for _, rs := range batchRanges(mismatched, peerrpc.MaxCallRanges, rangesBudget) {
		var after *int64
		for {
			var dr DigestResponse
			err := c.callHeavy(ctx, m, peerRepairDigests, DigestRequest{Keyspace: req.Keyspace, Table: req.Table,
				Ranges: rs.String(), After: after, Limit: repair.MaxDigestsPerPage}, &dr)
			if err != nil {
				return repair.SyncPlan{}, err
			}
			raw, err := base64.StdEncoding.DecodeString(dr.Digests)
			if err != nil {
				return repair.SyncPlan{}, fmt.Errorf("%s's digests: %w: %v", m.Name, repair.ErrBadDigests, err)
			}
			page, err := repair.ParseDigests(raw, rs, after, repair.MaxDigestsPerPage)
			if err != nil {
				return repair.SyncPlan{}, fmt.Errorf("%s's digests of %v: %w", m.Name, rs, err)
			}
			theirs = append(theirs, page...)
			if !dr.More {
				break
			}
			if len(page) == 0 {
				return repair.SyncPlan{}, fmt.Errorf("%s's digests: %w: an empty page with more to come", m.Name, repair.ErrBadDigests)
			}
			last := page[len(page)-1].Token
			after = &last // ParseDigests made it greater than the previous page's
		}
	}
	plan, err := repair.PlanSync(mismatched, mine, theirs)
	if err != nil {
		return plan, fmt.Errorf("repair with %s: %w", m.Name, err)
	}
	return plan, nil
}

// repairTransfer runs one direction of a repair's streaming, recorded as a transfer.
func (n *Node) repairTransfer(ctx context.Context, o *op, from, to string, req FetchOpRequest, run func() (FetchOpResponse, error)) (FetchOpResponse, error) {
	var idx int
	o.update(func(s *OpStatus) {
		idx = len(s.Transfers)
		s.Transfers = append(s.Transfers, TransferStatus{From: from, To: to, Keyspace: req.Keyspace, Table: req.Table,
			Ranges: req.Ranges, State: OpRunning})
	})
	res, err := run()
	o.update(func(s *OpStatus) {
		ts := &s.Transfers[idx]
		ts.SSTables, ts.Skipped, ts.BytesReceived = len(res.SSTables), res.Skipped, res.BytesReceived
		ts.State = OpComplete
		if err != nil {
			ts.State, ts.Error = OpFailed, err.Error()
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
func (c *cluster) tableID(ctx context.Context, keyspace, table, peer string) (string, error) {
	dirs, err := c.n.catalog.TableDirs()
	if err != nil {
		return "", err
	}
	for _, td := range dirs {
		if td.Keyspace == keyspace && td.Table == table {
			return td.ID, nil
		}
	}
	ts, err := c.peers.tables(ctx, peer, keyspace)
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

// repairSpecs sizes one tree per range by this node's partition count in it.
func (n *Node) repairSpecs(keyspace, table string, ranges token.RangeSet) ([]repair.Spec, error) {
	tables, release, err := n.openTable(keyspace, table)
	if err != nil {
		return nil, err
	}
	defer release()
	counts, err := repair.Count(tables, ranges)
	if err != nil {
		return nil, err
	}
	specs := make([]repair.Spec, len(ranges))
	for i, r := range ranges {
		specs[i] = repair.Spec{Range: r, Depth: repair.DepthFor(counts[i])}
	}
	return specs, nil
}

// RepairTrees builds this node's Merkle trees of keyspace.table for the specs. A table this
// node does not hold has empty trees.
func (n *Node) RepairTrees(ctx context.Context, keyspace, table string, specs []repair.Spec) ([]*repair.Tree, error) {
	tables, release, err := n.openTable(keyspace, table)
	if err != nil {
		return nil, err
	}
	defer release()
	return repair.Build(ctx, tables, specs)
}

// openTable opens the live sstables of keyspace.table in every data directory, holding each
// directory's lock shared so that cleanup and import do not rewrite it meanwhile. release
// closes them and drops the locks.
func (n *Node) openTable(keyspace, table string) (tables []*sstable.Table, release func(), err error) {
	var unlock []func()
	release = func() {
		for _, t := range tables {
			t.Close()
		}
		for _, u := range unlock {
			u()
		}
	}
	dirs, err := n.catalog.TableDirs()
	if err != nil {
		return nil, release, err
	}
	for _, td := range dirs {
		if td.Keyspace != keyspace || td.Table != table {
			continue
		}
		l := n.dirLocks.get(td.Path)
		l.RLock()
		unlock = append(unlock, l.RUnlock)
		live, err := catalog.ListLive(td.Path)
		if err != nil {
			release()
			return nil, func() {}, err
		}
		for _, s := range live {
			t, err := sstable.Open(s.Desc.Prefix())
			if err != nil {
				release()
				return nil, func() {}, fmt.Errorf("%s: %w", s.Desc.Prefix(), err)
			}
			tables = append(tables, t)
		}
	}
	return tables, release, nil
}
