package slice

import (
	"bytes"
	"errors"
	"os"
	"sync"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/descriptor"
)

// planPartsMin (a variable for tests) is the Partitions.db size from which an IndexPositions
// plan walks the trie in two halves at once: 1 MiB, some 100,000 partitions. A plan is the
// latency before a sender's first byte (the receiver waits idle), ~100 ns a partition of the
// whole parent; two walks of separate halves run side by side at the speed of one.
var planPartsMin int64 = 1 << 20

// inParts plans p in two halves of its pieces walked at once, split at the left bound of the
// middle piece, and merges them into p: the same children, ordinals, measure and kept slice
// as one walk. It serves an IndexPositions measure of a parent without row indexes (an empty
// Rows.db: no rows slice to lay out across the halves) and of at least planPartsMin of trie;
// merged is false otherwise, p untouched for one walk: so too when a child of each half meets
// at the split (no partition between the pieces).
func (p *triePlanner) inParts() (merged bool, err error) {
	m := p.m
	if m == nil || !m.positions || len(m.rows.parent) > 0 || p.ps.Len() < 2 || p.cur >= 0 || p.n > 0 {
		return false, nil
	}
	if fi, err := os.Stat(p.parent.Path(descriptor.Partitions)); err != nil || fi.Size() < planPartsMin {
		return false, nil
	}
	j := 2 * (p.ps.Len() / 2)
	split := p.bounds[j]
	a, b := p.fork(0), p.fork(j)
	var errB error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		errB = b.walkFrom(split)
	}()
	errA := a.walkUntil(split)
	wg.Wait()
	if err := errors.Join(errA, errB); err != nil {
		return false, err
	}
	if len(a.children) > 0 && len(b.children) > 0 && a.children[len(a.children)-1].Hi == b.children[0].Lo {
		return false, nil
	}
	// The partition before b's first child, when b did not see it: a's last.
	if len(b.children) > 0 && b.children[0].FirstOrdinal == int64(b.skipped) && a.n > 0 {
		before, err := a.keyAt(a.prevPos, a.prevIndexed, a.prevKey)
		if err != nil {
			return false, err
		}
		if p.ps.holds(b.children[0].Piece, p.parent.Partitioner.Token(before)) {
			return false, errUntrusted
		}
	}
	p.merge(a, b)
	return true, nil
}

// fork is a planner of p's parent, pieces and bounds, j of them below where it starts, with a
// measure of its own.
func (p *triePlanner) fork(j int) *triePlanner {
	return &triePlanner{parent: p.parent, ps: p.ps, bounds: p.bounds, j: j, cur: -1,
		m: &trieMeasure{rows: rowsSlice{parent: p.m.rows.parent}, positions: true, keepMax: p.m.keepMax}}
}

// errHalfDone ends the first half's walk at the split.
var errHalfDone = errors.New("half planned")

// walkUntil plans the partitions whose forms lie below split; the first at or above it closes
// the child open, as the partition after it.
func (p *triePlanner) walkUntil(split []byte) error {
	stopped := false
	err := p.parent.ScanIndex(func(e *sstable.IndexEntry) error {
		above, err := p.atOrAbove(e, split)
		switch {
		case err != nil:
			return err
		case !above:
			return p.add(e)
		}
		stopped = true
		if p.cur >= 0 {
			if err := p.close(e, e.Position); err != nil {
				return err
			}
		}
		return errHalfDone
	})
	if errors.Is(err, errHalfDone) {
		err = nil
	}
	if err == nil && !stopped && p.cur >= 0 {
		err = p.close(nil, p.parent.DataLength())
	}
	return err
}

// walkFrom plans the partitions from the first whose form is at or above split, ordinals
// counted from 0 there (b.skipped: the walk began at the partition before, whose trie path is
// a prefix of split).
func (p *triePlanner) walkFrom(split []byte) error {
	first := true
	err := p.parent.ScanIndexFrom(split, 0, func(e *sstable.IndexEntry) error {
		if first {
			first = false
			above, err := p.atOrAbove(e, split)
			if err != nil {
				return err
			}
			if !above {
				p.skipped = 1
				return nil
			}
		}
		return p.add(e)
	})
	if err == nil && p.cur >= 0 {
		err = p.close(nil, p.parent.DataLength())
	}
	return err
}

// atOrAbove says whether e's form is at or above bound, as place decides it (the key read
// only when the trie path cannot tell); it leaves the form read in p.form for e.
func (p *triePlanner) atOrAbove(e *sstable.IndexEntry, bound []byte) (bool, error) {
	p.form = p.form[:0]
	c := bti.ComparePrefix(e.Prefix, bound)
	if c == 0 {
		form, err := p.formOf(e)
		if err != nil {
			return false, err
		}
		c = bytes.Compare(form, bound)
	}
	return c >= 0, nil
}

// merge makes p the plan of a's partitions then b's: b's ordinals follow a's, and b's first
// position record counts from a's last member, not from 0.
func (p *triePlanner) merge(a, b *triePlanner) {
	shift := a.n - int64(b.skipped)
	for i := range b.children {
		b.children[i].FirstOrdinal += shift
	}
	p.children = append(a.children, b.children...)
	p.last = append(a.last, b.last...)
	p.n, p.reads, p.cur = a.n+b.n, a.reads+b.reads, -1
	m, ma, mb := p.m, a.m, b.m
	m.halved = true
	m.seeks = append(ma.seeks, mb.seeks...)
	if len(m.seeks) > 0 {
		m.rows.begin(0) // no Rows.db: one empty piece, as every run's begin makes it
	}
	m.members, m.firstPos, m.prevPos, m.length = ma.members, ma.firstPos, ma.prevPos, ma.length
	var first []byte
	var was int
	if mb.members > 0 {
		was = len(AppendPositionRecord(nil, mb.firstPos, -1))
		first = AppendPositionRecord(nil, mb.firstPos-ma.prevPos, -1)
		if m.members == 0 {
			m.firstPos = mb.firstPos
		}
		m.members += mb.members
		m.prevPos = mb.prevPos
		m.length += mb.length - int64(was) + int64(len(first))
	}
	if m.keepMax > 0 {
		m.kept, m.dropped = nil, ma.dropped || mb.dropped || m.length > m.keepMax
		if !m.dropped {
			m.kept = append(append(append(make([]byte, 0, m.length), ma.kept...), first...), mb.kept[was:]...)
		}
	}
}
