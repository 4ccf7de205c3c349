package slice

import (
	"fmt"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
)

// PlanTable scans parent's index and returns its children. A BTI parent's plan comes from its
// trie, keys read only at the ranges' edges (btiPlan), when the trie serves.
func PlanTable(parent *sstable.Table, ps *Pieces, ranges token.RangeSet) ([]ChildPlan, error) {
	return planTable(parent, ps, ranges, endsNext)
}

// Where a planned run ends: at the next indexed partition (a gap-free parent), at its last
// partition's end-of-partition flag (Options.ExactEnds), or, besides, split wherever a partition
// ends before the next one starts (rechunk: a parent with dead regions of its own loses them).
type ends int

const (
	endsNext ends = iota
	endsRun
	endsAll
)

// cut is a dead region inside a planned child: the partition before it ends at at, the next
// one (ordinal ord) starts at next.
type cut struct {
	ord      int64
	at, next int64
}

// planTable is PlanTable, each child ending as e says.
func planTable(parent *sstable.Table, ps *Pieces, ranges token.RangeSet, e ends) ([]ChildPlan, error) {
	pl := NewPlanner(ps)
	var t *schema.Table
	if e != endsNext {
		var err error
		if t, err = schema.Compile(parent.Statistics.Header); err != nil {
			return nil, err
		}
	}
	if e != endsAll {
		// Rechunk's cuts need every partition's end; the other plans need the trie's only.
		plans, last, _, ok, err := btiPlan(parent, ps, ranges)
		if err != nil {
			return nil, err
		}
		if ok {
			for i := range plans {
				if e == endsNext {
					break
				}
				c := &plans[i]
				if c.Hi, err = partitionEnd(parent, t, last[i], c.Hi); err != nil {
					return nil, err
				}
				c.Runs[0].Hi = c.Hi
			}
			return plans, nil
		}
	}
	var last []int64 // each child's last partition's position so far
	cuts := map[int][]cut{}
	err := parent.ScanPartitions(func(p *sstable.Partition) error {
		k := pl.Add(p.Ordinal, p.Key, p.Token, p.Position)
		if e == endsNext || k < 0 {
			return nil
		}
		if k == len(last) {
			last = append(last, -1)
		}
		if prev := last[k]; e == endsAll && prev >= 0 {
			end, err := partitionEnd(parent, t, prev, p.Position)
			if err != nil {
				return err
			}
			if end < p.Position {
				cuts[k] = append(cuts[k], cut{ord: p.Ordinal, at: end, next: p.Position})
			}
		}
		last[k] = p.Position
		return nil
	})
	if err != nil {
		return nil, err
	}
	plans := pl.Finish(ranges, parent.DataLength())
	if e == endsNext {
		return plans, nil
	}
	for i := range plans {
		c := &plans[i]
		if c.Hi, err = partitionEnd(parent, t, last[i], c.Hi); err != nil {
			return nil, err
		}
		c.Runs = c.Runs[:0]
		first, lo := c.FirstOrdinal, c.Lo
		for _, x := range cuts[i] {
			c.Runs = append(c.Runs, RunPlan{FirstOrdinal: first, Partitions: x.ord - first, Lo: lo, Hi: x.at})
			first, lo = x.ord, x.next
		}
		c.Runs = append(c.Runs, RunPlan{FirstOrdinal: first, Partitions: c.FirstOrdinal + c.Partitions - first, Lo: lo, Hi: c.Hi})
	}
	return plans, nil
}

// partitionEnd is where the partition at pos ends: at its end-of-partition flag, which must
// lie before limit (the next indexed partition or the data's end).
func partitionEnd(parent *sstable.Table, t *schema.Table, pos, limit int64) (int64, error) {
	b := make([]byte, limit-pos)
	if _, err := parent.Data.ReadAt(b, pos); err != nil {
		return 0, corruptParent(parent, err)
	}
	var cur rows.Cursor
	err := cur.ResetTrailing(t, parent.Version(), b)
	for err == nil && cur.Next() {
	}
	if err == nil {
		err = cur.Err()
	}
	if err != nil || !cur.Done() {
		return 0, fmt.Errorf("%w: %s: the partition at %d does not end before %d: %v", sstable.ErrCorrupt, parent.Desc, pos, limit, err)
	}
	return pos + int64(cur.End()), nil
}
