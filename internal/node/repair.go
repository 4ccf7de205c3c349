package node

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/cqlname"
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

// StartRepair starts a repair of one table with every other replica of the requested ranges.
// For each peer and each range both replicate, this node builds a Merkle tree of its own data
// and asks the peer for the same tree (POST /v1/repair/tree); the ranges of the leaves that
// differ are then fetched from the peer by this node and from this node by the peer (POST
// /v1/ops/fetch), so both hold the union. Partitions fetched in duplicate reconcile on read.
func (n *Node) StartRepair(req RepairRequest) (OpStatus, error) {
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

// repairPeer compares the common ranges with one peer and streams the differences both ways.
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
	// A differing leaf is fetched from a side only when that side holds partitions in it.
	var mismatched, fromPeer, toPeer token.RangeSet
	// One request per depth: the trees of a request share theirs.
	for _, depth := range depths(specs) {
		var rs token.RangeSet
		var local []*repair.Tree
		for i, sp := range specs {
			if sp.Depth == depth {
				rs, local = append(rs, sp.Range), append(local, mine[i])
			}
		}
		var tr TreeResponse
		if err := c.call(ctx, m, peerRepairTree,
			TreeRequest{Keyspace: req.Keyspace, Table: req.Table, Ranges: rs.String(), Depth: depth}, &tr); err != nil {
			return res, err
		}
		if len(tr.Trees) != len(local) {
			return res, fmt.Errorf("%s sent %d trees for %d ranges", peer, len(tr.Trees), len(local))
		}
		for i, t := range local {
			theirs := tr.Trees[i]
			res.Partitions += t.Partitions()
			leaves, err := repair.DiffLeaves(t, theirs)
			if err != nil {
				return res, fmt.Errorf("%s's tree of %v: %w", peer, t.Range, err)
			}
			var in, out []int
			for _, l := range leaves {
				if theirs.Leaves[l].Partitions > 0 {
					in = append(in, l)
				}
				if t.Leaves[l].Partitions > 0 {
					out = append(out, l)
				}
			}
			mismatched = append(mismatched, t.Ranges(leaves)...)
			fromPeer, toPeer = append(fromPeer, t.Ranges(in)...), append(toPeer, t.Ranges(out)...)
		}
	}
	if len(mismatched) == 0 {
		return res, nil
	}
	res.Mismatched = ring.Normalize(mismatched).String()
	id, err := c.tableID(ctx, req.Keyspace, req.Table, peer)
	if err != nil {
		return res, err
	}
	in := FetchOpRequest{Source: peer, Keyspace: req.Keyspace, Table: req.Table, TableID: id, Ranges: ring.Normalize(fromPeer).String()}
	out := FetchOpRequest{Source: c.n.cfg.Name, Keyspace: req.Keyspace, Table: req.Table, TableID: id, Ranges: ring.Normalize(toPeer).String()}
	var got, sent FetchOpResponse
	var errIn, errOut error
	if len(fromPeer) > 0 {
		got, errIn = c.n.repairTransfer(ctx, o, peer, c.n.cfg.Name, in, func() (FetchOpResponse, error) {
			return c.peers.fetch(ctx, c.n.cfg.Name, in)
		})
	}
	if len(toPeer) > 0 {
		sent, errOut = c.n.repairTransfer(ctx, o, c.n.cfg.Name, peer, out, func() (FetchOpResponse, error) {
			return c.peers.fetch(ctx, peer, out)
		})
	}
	res.BytesFetched, res.BytesSent = got.BytesReceived, sent.BytesReceived
	return res, errors.Join(errIn, errOut)
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
