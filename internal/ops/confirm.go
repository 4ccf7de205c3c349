package ops

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/token"
)

// Cleanup's second line of defence: whatever the ring says, no partition is dropped unless
// the nodes that own it hold it.
//
// The ring decides what cleanup would drop (the ranges outside ring.CleanupRanges). Before any
// of it goes, two things must hold:
//
//  1. The ring is one to act on (OwnRing.Trust): unchanged for a settle period (one gossip
//     push/pull round) and with no unproven member about (the membership names them). Otherwise the
//     whole cleanup is refused and nothing is dropped.
//  2. Every range of the ring this node would drop partitions of (a dropUnit: one range of
//     ring.RangeOwners, the part of it outside the kept ranges) is confirmed by each of its
//     owners on this node's ring (confirmUnits): the owner is a live, proven member; its own
//     ring makes it a replica of the range (so its own cleanup keeps it); and it holds every
//     partition this node would drop there, with the same content. Merkle trees (peer call
//     repair_tree) compare each range at once; only the leaves that differ are compared
//     partition by partition (repair_digests), in bounded pages on both sides. The owner may
//     hold more than this node: only a partition of this node's that it lacks, or holds with
//     other content, refuses the range.
//
// A unit not confirmed by all its owners is kept: cleanup drops only the confirmed ones, and
// then fails, naming each range kept, the owner that did not confirm it and why.

// Bounds of a confirmation's tree exchange: the leaves of one batch of this node's trees (16
// bytes each; each owner's requests for them are cut to peerrpc's bounds by TreeBatches), and
// how many partitions a page of digests holds.
const (
	maxConfirmLeaves = 1 << 18
	confirmPageSize  = repair.MaxDigestsPerPage
)

// dropUnit is one range of the ring and the part of it cleanup would drop.
type dropUnit struct {
	Range  token.Range    // the ring's range, (previous token, token]
	Drop   token.RangeSet // normalized: the part of Range outside the kept ranges
	Owners []string       // its natural replicas on this node's ring
}

// dropUnits returns the ranges of r that keep (normalized) does not cover, each with the
// replicas that own it under s, this node left out.
func dropUnits(r ring.Ring, s ring.Strategy, keep token.RangeSet, self string) []dropUnit {
	gaps := ringGaps(keep)
	if len(gaps) == 0 {
		return nil
	}
	var out []dropUnit
	for _, ro := range ring.RangeOwners(r, s) {
		d := repair.Intersect(ring.Normalize(token.RangeSet{ro.Range}), gaps)
		if len(d) == 0 {
			continue
		}
		u := dropUnit{Range: ro.Range, Drop: d}
		for _, n := range ro.Replicas {
			if n.Name != self {
				u.Owners = append(u.Owners, n.Name)
			}
		}
		out = append(out, u)
	}
	return out
}

// ringGaps returns the tokens of the ring a normalized set does not hold, normalized.
func ringGaps(rs token.RangeSet) token.RangeSet {
	lo := token.Murmur3.MinToken()
	if len(rs) == 0 {
		return token.RangeSet{{Left: lo, Right: lo}}
	}
	var out token.RangeSet
	cur := lo
	for _, r := range rs {
		if !r.Left.Equal(cur) {
			out = append(out, token.Range{Left: cur, Right: r.Left})
		}
		cur = r.Right
	}
	if !cur.Equal(lo) {
		out = append(out, token.Range{Left: cur, Right: lo})
	}
	return out
}

// tokenWidth is the number of tokens a normalized range holds, the whole ring counting 2^64-1.
func tokenWidth(r token.Range) uint64 {
	l, rt := unsignedSpan(r)
	return rt - l
}

// unsignedSpan maps a normalized range to (l, r] over the tokens in unsigned order, the end of the
// ring becoming MaxUint64 (as repair's ranges do).
func unsignedSpan(r token.Range) (l, rt uint64) {
	l = uint64(r.Left.Long) ^ 1<<63
	if r.Right.Long == math.MinInt64 {
		return l, math.MaxUint64
	}
	return l, uint64(r.Right.Long) ^ 1<<63
}

// covers reports whether normalized set rs holds every token of normalized set sub.
func covers(rs, sub token.RangeSet) bool {
	var want, got uint64
	for _, r := range sub {
		want += tokenWidth(r)
	}
	for _, r := range repair.Intersect(sub, rs) {
		got += tokenWidth(r)
	}
	return got == want
}

// piece is one normalized range of a unit's Drop, with how many index entries this node's
// sstables hold in it.
type piece struct {
	rng   token.Range
	unit  int
	count int64
}

// pieces flattens the units' drop ranges, sorted in token order.
func pieces(units []dropUnit) []piece {
	var out []piece
	for i, u := range units {
		for _, r := range u.Drop {
			out = append(out, piece{rng: r, unit: i})
		}
	}
	slices.SortFunc(out, func(a, b piece) int {
		al, _ := unsignedSpan(a.rng)
		bl, _ := unsignedSpan(b.rng)
		return cmp.Compare(al, bl)
	})
	return out
}

// pieceOf returns the piece holding token t, or -1.
func pieceOf(ps []piece, t int64) int {
	u := uint64(t) ^ 1<<63
	if t == math.MinInt64 {
		u = math.MaxUint64 // the end of the ring, as (l, MinToken] holds it
	}
	i, _ := slices.BinarySearchFunc(ps, u, func(p piece, u uint64) int {
		_, r := unsignedSpan(p.rng)
		return cmp.Compare(r, u)
	})
	if i < len(ps) {
		if l, _ := unsignedSpan(ps[i].rng); l < u {
			return i
		}
	}
	return -1
}

// countPieces counts the tables' index entries in each piece: the partitions cleanup would
// drop (a partition held by several tables counts once per table), which size the trees.
func countPieces(tables []*sstable.Table, ps []piece) error {
	for _, t := range tables {
		err := t.ScanPartitions(func(p *sstable.Partition) error {
			if p.Token.Kind == token.KindMurmur3 {
				if i := pieceOf(ps, p.Token.Long); i >= 0 {
					ps[i].count++
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", t.Desc.Prefix(), err)
		}
	}
	return nil
}

// refusal is why one owner did not confirm one unit.
type refusal struct {
	missing, differ int
	first           int64 // token of the first partition missing or different
	reason          string
}

func (f *refusal) String() string {
	if f.reason != "" {
		return f.reason
	}
	var parts []string
	if f.missing > 0 {
		parts = append(parts, fmt.Sprintf("lacks %d", f.missing))
	}
	if f.differ > 0 {
		parts = append(parts, fmt.Sprintf("holds other content for %d", f.differ))
	}
	return fmt.Sprintf("%s of this node's partitions (first at token %d)", strings.Join(parts, " and "), f.first)
}

// confirmation is what confirmUnits learned: per unit, the owners that refused and why.
type confirmation struct {
	units   []dropUnit
	pieces  []piece
	refused []map[string]*refusal // by unit, then owner
}

func (cf *confirmation) refuse(unit int, owner, reason string) {
	if cf.refused[unit] == nil {
		cf.refused[unit] = map[string]*refusal{}
	}
	if f := cf.refused[unit][owner]; f == nil || f.reason == "" {
		cf.refused[unit][owner] = &refusal{reason: reason}
	}
}

func (cf *confirmation) lack(unit int, owner string, tok int64, differs bool) {
	if cf.refused[unit] == nil {
		cf.refused[unit] = map[string]*refusal{}
	}
	f := cf.refused[unit][owner]
	if f == nil {
		f = &refusal{first: tok}
		cf.refused[unit][owner] = f
	}
	if differs {
		f.differ++
	} else {
		f.missing++
	}
}

// needed reports whether unit must be confirmed: this node holds partitions in it.
func (cf *confirmation) needed() []bool {
	out := make([]bool, len(cf.units))
	for _, p := range cf.pieces {
		if p.count > 0 {
			out[p.unit] = true
		}
	}
	return out
}

// keptRanges are the drop ranges of the refused units: cleanup keeps them.
func (cf *confirmation) keptRanges() token.RangeSet {
	var out token.RangeSet
	for i, u := range cf.units {
		if len(cf.refused[i]) > 0 {
			out = append(out, u.Drop...)
		}
	}
	return out
}

// report is the confirmation as the operation's status shows it.
func (cf *confirmation) report(keyspace, table, dir string) adminapi.CleanupCheck {
	chk := adminapi.CleanupCheck{Keyspace: keyspace, Table: table, Dir: dir}
	var ok token.RangeSet
	needed := cf.needed()
	for _, p := range cf.pieces {
		if needed[p.unit] && len(cf.refused[p.unit]) == 0 {
			ok = appendMerged(ok, p.rng)
		}
	}
	chk.Confirmed = ok.String()
	for i, u := range cf.units {
		owners := make([]string, 0, len(cf.refused[i]))
		for o := range cf.refused[i] {
			owners = append(owners, o)
		}
		slices.Sort(owners)
		for _, o := range owners {
			chk.Refused = append(chk.Refused, adminapi.CleanupRefusal{Range: u.Drop.String(), Owner: o, Reason: cf.refused[i][o].String()})
		}
	}
	return chk
}

// appendMerged appends r to a sorted normalized set, merging it with the last range when
// they touch.
func appendMerged(rs token.RangeSet, r token.Range) token.RangeSet {
	if n := len(rs); n > 0 && rs[n-1].Right.Equal(r.Left) && !rs[n-1].Right.Equal(token.Murmur3.MinToken()) {
		rs[n-1].Right = r.Right
		return rs
	}
	return append(rs, r)
}

// confirmUnits asks the owners of every unit this node holds partitions in to confirm them
// (see the top of this file). tables are this node's sstables of keyspace.table, the ones
// cleanup will cut; they stay open and are only read.
func (c *Cluster) confirmUnits(ctx context.Context, keyspace, table string, s ring.Strategy, tables []*sstable.Table, cf *confirmation) error {
	needed := cf.needed()
	// The owners, and what each must confirm. An owner that cannot answer refuses its units.
	var owners []string
	units := map[string][]int{}
	for i, u := range cf.units {
		if !needed[i] {
			continue
		}
		if len(u.Owners) == 0 {
			cf.refuse(i, "", "no other node owns it on this node's ring")
		}
		for _, o := range u.Owners {
			if units[o] == nil {
				owners = append(owners, o)
			}
			units[o] = append(units[o], i)
		}
	}
	slices.Sort(owners)
	live := map[string]bool{}
	for _, o := range owners {
		err := c.Peers.Proven(o)
		if err == nil {
			err = c.ownerReplicates(ctx, o, s, cf, units[o])
		}
		if err != nil {
			for _, i := range units[o] {
				cf.refuse(i, o, fmt.Sprintf("cannot confirm: %v", err))
			}
			continue
		}
		live[o] = true
	}
	if len(live) == 0 {
		return ctx.Err()
	}
	if err := c.compare(ctx, keyspace, table, tables, cf, live); err != nil {
		return err
	}
	return ctx.Err()
}

// ownerReplicates checks that owner m's own ring makes it a replica of its units: an owner
// whose ring disagrees may drop them in a cleanup of its own, so it is no safe holder. Units
// it does not replicate are refused here; an error refuses all of them.
func (c *Cluster) ownerReplicates(ctx context.Context, owner string, s ring.Strategy, cf *confirmation, units []int) error {
	v, err := c.Peers.RingView(ctx, owner)
	if err != nil {
		return err
	}
	r, err := viewRing(v)
	if err != nil {
		return fmt.Errorf("its ring: %w", err)
	}
	rs := ring.ReplicaRanges(r, s, owner)
	for _, i := range units {
		if !covers(rs, cf.units[i].Drop) {
			cf.refuse(i, owner, "its own ring does not make it a replica of this range")
		}
	}
	return nil
}

// viewRing rebuilds a ring from a member's view of it.
func viewRing(v RingView) (ring.Ring, error) {
	if v.Error != "" {
		return ring.Ring{}, errors.New(v.Error)
	}
	var ms []ring.Member
	idx := map[string]int{}
	for _, t := range v.Tokens {
		i, ok := idx[t.Node]
		if !ok {
			st, err := ring.ParseNodeState(t.State)
			if err != nil {
				return ring.Ring{}, err
			}
			i = len(ms)
			idx[t.Node] = i
			ms = append(ms, ring.Member{Node: ring.Node{Name: t.Node, DC: t.DC, Rack: t.Rack}, State: st})
		}
		ms[i].Tokens = append(ms[i].Tokens, token.Token{Kind: token.KindMurmur3, Long: t.Token})
	}
	return ring.NewRing(ms...)
}

// compare builds this node's trees of the pieces it holds partitions in, in batches of at
// most maxConfirmLeaves leaves, and compares each batch with the trees of every live owner
// still to confirm it, and then, partition by partition, the leaves that differ
// (compareDigests). What it holds at once is one batch: its trees, and the leaves that
// differ from one owner's.
func (c *Cluster) compare(ctx context.Context, keyspace, table string, tables []*sstable.Table, cf *confirmation, live map[string]bool) error {
	var batch []int // pieces
	leaves := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		defer func() { batch, leaves = batch[:0], 0 }()
		specs := make([]repair.Spec, len(batch))
		for i, p := range batch {
			specs[i] = repair.Spec{Range: cf.pieces[p].rng, Depth: repair.DepthFor(cf.pieces[p].count)}
		}
		mine, err := repair.Build(ctx, tables, specs)
		if err != nil {
			return err
		}
		for _, o := range sortedKeys(live) {
			var idx []int // into batch
			for i, p := range batch {
				u := cf.pieces[p].unit
				if slices.Contains(cf.units[u].Owners, o) && cf.refused[u][o] == nil {
					idx = append(idx, i)
				}
			}
			if len(idx) == 0 {
				continue
			}
			diff, err := c.ownerTrees(ctx, o, keyspace, table, specs, mine, idx)
			if err == nil && len(diff) > 0 {
				err = c.compareDigests(ctx, keyspace, table, tables, cf, o, diff)
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				for _, i := range idx {
					cf.refuse(cf.pieces[batch[i]].unit, o, fmt.Sprintf("cannot confirm: %v", err))
				}
			}
		}
		return nil
	}
	for p, pc := range cf.pieces {
		if pc.count == 0 {
			continue
		}
		n := 1 << repair.DepthFor(pc.count)
		if leaves+n > maxConfirmLeaves {
			if err := flush(); err != nil {
				return err
			}
		}
		batch, leaves = append(batch, p), leaves+n
	}
	return flush()
}

// ownerTrees asks owner m for its trees of specs[idx], in requests within the peer's bounds
// (TreeBatches, as a repair's), and returns the ranges of the leaves where they differ from
// mine, in token order.
func (c *Cluster) ownerTrees(ctx context.Context, owner string, keyspace, table string, specs []repair.Spec, mine []*repair.Tree, idx []int) (token.RangeSet, error) {
	sub := make([]repair.Spec, len(idx))
	for k, i := range idx {
		sub[k] = specs[i]
	}
	diffs := make([]token.RangeSet, len(sub))
	for _, batch := range TreeBatches(sub) {
		var rs token.RangeSet
		for _, k := range batch {
			rs = append(rs, sub[k].Range)
		}
		tr, err := c.Peers.Trees(ctx, owner, TreeRequest{Keyspace: keyspace, Table: table, Ranges: rs.String(), Depth: sub[batch[0]].Depth})
		if err != nil {
			return nil, err
		}
		if len(tr.Trees) != len(batch) {
			return nil, fmt.Errorf("%s sent %d trees for %d ranges", owner, len(tr.Trees), len(batch))
		}
		for j, k := range batch {
			t := mine[idx[k]]
			leaves, err := repair.DiffLeaves(t, tr.Trees[j])
			if err != nil {
				return nil, fmt.Errorf("%s's tree of %v: %w", owner, t.Range, err)
			}
			diffs[k] = t.Ranges(leaves)
		}
	}
	var out token.RangeSet
	for _, d := range diffs { // specs are in token order
		out = append(out, d...)
	}
	return out, nil
}

// compareDigests lists, over the ranges whose trees differ, this node's digests and owner m's,
// page by page on both sides, and records each partition of this node's m lacks or holds with
// other content.
func (c *Cluster) compareDigests(ctx context.Context, keyspace, table string, tables []*sstable.Table, cf *confirmation, owner string, ranges token.RangeSet) error {
	for _, rs := range BatchRanges(ranges, peerrpc.MaxCallRanges, RangesBudget) {
		mine := func(ctx context.Context, after *int64) ([]repair.Digest, bool, error) {
			return repair.Digests(ctx, tables, rs, after, confirmPageSize)
		}
		theirs := func(ctx context.Context, after *int64) ([]repair.Digest, bool, error) {
			dr, err := c.Peers.Digests(ctx, owner, DigestRequest{Keyspace: keyspace, Table: table,
				Ranges: rs.String(), After: after, Limit: confirmPageSize})
			if err != nil {
				return nil, false, err
			}
			raw, err := base64.StdEncoding.DecodeString(dr.Digests)
			if err != nil {
				return nil, false, fmt.Errorf("%s's digests: %w: %v", owner, repair.ErrBadDigests, err)
			}
			page, err := repair.ParseDigests(raw, rs, after, confirmPageSize)
			if err != nil {
				return nil, false, fmt.Errorf("%s's digests of %v: %w", owner, rs, err)
			}
			return page, dr.More, nil
		}
		err := matchDigests(ctx, mine, theirs, func(d repair.Digest, differs bool) {
			if p := pieceOf(cf.pieces, d.Token); p >= 0 {
				cf.lack(cf.pieces[p].unit, owner, d.Token, differs)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// digestPages returns one page of a token-ordered digest listing: the digests with tokens
// after *after (from the start when nil), and whether more follow. A page never splits the
// partitions of one token (repair.Digests).
type digestPages func(ctx context.Context, after *int64) ([]repair.Digest, bool, error)

// matchDigests walks two digest listings of the same ranges side by side, holding one page of
// each, and calls lack for every digest of mine that theirs does not hold with the same
// content: absent (differs false), or present with another hash and copies that do not include
// all of mine (differs true). Content theirs holds beyond mine is no concern.
func matchDigests(ctx context.Context, mine, theirs digestPages, lack func(d repair.Digest, differs bool)) error {
	var tb []repair.Digest
	j, more := 0, true
	var tAfter, mAfter *int64
	next := func() error {
		page, m, err := theirs(ctx, tAfter)
		if err != nil {
			return err
		}
		if m && len(page) == 0 {
			return fmt.Errorf("%w: an empty page with more to come", repair.ErrBadDigests)
		}
		if len(page) > 0 {
			last := page[len(page)-1].Token
			tAfter = &last
		}
		tb, j, more = page, 0, m
		return nil
	}
	if err := next(); err != nil {
		return err
	}
	for {
		page, mMore, err := mine(ctx, mAfter)
		if err != nil {
			return err
		}
		for _, d := range page {
			for {
				for j < len(tb) && tb[j].Token < d.Token {
					j++
				}
				if j < len(tb) || !more {
					break
				}
				if err := next(); err != nil {
					return err
				}
			}
			var held *repair.Digest
			for k := j; k < len(tb) && tb[k].Token == d.Token; k++ {
				if tb[k].Key == d.Key {
					held = &tb[k]
					break
				}
			}
			switch {
			case held == nil:
				lack(d, false)
			case held.Hash != d.Hash && !includes(held.Copies, d.Copies):
				lack(d, true)
			}
		}
		if !mMore {
			return nil
		}
		if len(page) == 0 {
			return errors.New("this node's digests: an empty page with more to come")
		}
		last := page[len(page)-1].Token
		mAfter = &last
	}
}

// includes reports whether sorted set b is within sorted set a: every copy of b's is among
// a's, so a's reconciliation holds all of b's content.
func includes(a, b []uint64) bool {
	i := 0
	for _, x := range b {
		for i < len(a) && a[i] < x {
			i++
		}
		if i == len(a) || a[i] != x {
			return false
		}
	}
	return true
}

// unconfirmedError names the ranges cleanup kept, with the owners that did not confirm them
// and why, at most MaxListedProblems of them.
func unconfirmedError(checks []adminapi.CleanupCheck) error {
	var list []string
	ranges, tables := 0, 0
	for _, chk := range checks {
		seen := map[string]bool{}
		for _, f := range chk.Refused {
			if !seen[f.Range] {
				seen[f.Range] = true
				ranges++
			}
			owner := f.Owner
			if owner == "" {
				owner = "(no owner)"
			}
			list = append(list, fmt.Sprintf("%s.%s %s: %s: %s", chk.Keyspace, chk.Table, f.Range, owner, f.Reason))
		}
		if len(seen) > 0 {
			tables++
		}
	}
	if len(list) == 0 {
		return nil
	}
	more := ""
	if n := len(list); n > MaxListedProblems {
		more = fmt.Sprintf(" (and %d more)", n-MaxListedProblems)
		list = list[:MaxListedProblems]
	}
	return fmt.Errorf("%w: kept %d range(s) of %d table(s): %s%s", ErrUnconfirmed, ranges, tables, strings.Join(list, "; "), more)
}
