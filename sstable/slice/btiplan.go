package slice

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// trieBounds are a range set's pieces as ByteComparable positions (bti.AppendTokenBound):
// b[2k] lies just above the forms of piece k's left end's keys, b[2k+1] just above its right
// end's (nil: the ring's end). A key is in piece k exactly when its form lies between the two,
// so the number of bounds below a key's form says where it is: odd, in piece (j-1)/2.
type trieBounds [][]byte

func newTrieBounds(ps *Pieces) trieBounds {
	b := make(trieBounds, 0, 2*ps.Len())
	for k := range ps.Len() {
		p := ps.pieces[k]
		b = append(b, bti.AppendTokenBound(nil, p.r.Left))
		if p.toEnd {
			b = append(b, nil)
		} else {
			b = append(b, bti.AppendTokenBound(nil, p.r.Right))
		}
	}
	return b
}

// btiPlan is PlanTable for a BTI parent from Partitions.db (and Rows.db) alone, without
// reading a key between the ranges' edges: the trie path of a partition is a prefix of its
// key's ByteComparable form, which begins with the token, so most paths place their partition
// inside or outside every piece by themselves (bti.ComparePrefix). Keys are read from Data.db
// only where a path is too short to say (a partition whose token shares its path's bytes with
// a range end: about one per range end), for each child's first and last partitions (its
// First, FirstTok and LastTok), and for the partitions just outside each child, whose tokens
// must fall outside its piece. last is each child's last partition's data position.
//
// ok is false, and the caller plans from every key, when the partitioner is not one whose
// token the form holds (Murmur3, ByteOrdered), or when a key read disagrees with the place its
// path gave it (a trie whose paths are not its keys' forms).
func btiPlan(parent *sstable.Table, ps *Pieces, ranges token.RangeSet) (plans []ChildPlan, last []int64, partitions int64, ok bool, err error) {
	return btiPlanMeasured(parent, ps, ranges, nil)
}

// btiPlanMeasured is btiPlan that, given m, also makes in the same pass what gatherIndex makes
// for the one child Merge makes of the plans: its index slice's length (and its records, with
// m.keepMax) and its rows slice. The keys of the children's partitions are then read as the walk
// meets them, through one sequential cursor (sstable.IndexEntry.Key), each checked to lie in
// its piece: the pass decodes the children's chunks once and no other. With m.positions
// (IndexPositions) no member's key is read: the receiver reads them from the data it gets and
// checks them against its ranges.
func btiPlanMeasured(parent *sstable.Table, ps *Pieces, ranges token.RangeSet, m *trieMeasure) (plans []ChildPlan, last []int64, partitions int64, ok bool, err error) {
	if parent.Version().Format != version.BTI {
		return nil, nil, 0, false, nil
	}
	switch parent.Partitioner.MinToken().Kind {
	case token.KindMurmur3, token.KindBytes:
	default:
		return nil, nil, 0, false, nil
	}
	return btiPlanWith(&triePlanner{parent: parent, ps: ps, bounds: newTrieBounds(ps), cur: -1, m: m}, ranges)
}

// btiPlanWith is btiPlanMeasured's walk with p.
func btiPlanWith(p *triePlanner, ranges token.RangeSet) (plans []ChildPlan, last []int64, partitions int64, ok bool, err error) {
	parent := p.parent
	merged, err := p.inParts()
	if err == nil && !merged {
		err = parent.ScanIndex(p.add)
		if err == nil && p.cur >= 0 {
			err = p.close(nil, parent.DataLength())
		}
	}
	switch {
	case errors.Is(err, errUntrusted):
		return nil, nil, 0, false, nil
	case err != nil:
		return nil, nil, 0, false, err
	}
	for i := range p.children {
		c := &p.children[i]
		c.Range = ranges[c.RangeIndex]
		c.Runs = []RunPlan{{FirstOrdinal: c.FirstOrdinal, Partitions: c.Partitions, Lo: c.Lo, Hi: c.Hi}}
	}
	return p.children, p.last, p.n, true, nil
}

// triePlanner is btiPlan's walk: the bounds below the partition it is at, the child open, and
// what it keeps of the partition before (to check the neighbour of a child that opens).
type triePlanner struct {
	parent   *sstable.Table
	ps       *Pieces
	bounds   trieBounds
	j        int // bounds below the last partition's form
	cur      int // the open child, or -1
	children []ChildPlan
	last     []int64 // each child's last partition's data position
	// lastKey is the open child's last partition's key when its Rows.db entry held it
	// (lastIndexed).
	lastKey     []byte
	lastIndexed bool
	n           int64
	// prev is the partition before the one being placed: its position, and its key when its
	// Rows.db entry held it.
	prevPos     int64
	prevKey     []byte
	prevIndexed bool
	// form is the ByteComparable form of the partition being placed, once its key was read.
	form  []byte
	m     *trieMeasure // nil: plan only
	reads int          // keys read to place partitions (not the measure's)
	// skipped is 1 when this planner, the second half of a plan in parts (inParts), began at
	// the partition before its split and left it to the first half.
	skipped int
}

// trieMeasure is what btiPlanMeasured gathers for the merged child: as gatherIndex does,
// rows slice by merged run, records (to keep, when set) and their length.
type trieMeasure struct {
	rows    rowsSlice
	lastEnd int64 // the end of the last Rows.db entry met
	length  int64
	// keepMax, when positive, keeps the records in kept while they fit it (kept nil and
	// dropped once they do not): all of them (math.MaxInt64), or PartialOptions.IndexKeep.
	keepMax int64
	kept    []byte
	dropped bool
	// halved says the plan was made in two halves at once (inParts).
	halved bool
	// members counts the partitions measured; firstPos is the first one's position.
	members  int64
	firstPos int64
	rec      []byte
	tok      sstable.Partition
	// positions makes IndexPositions records: no key is read (the receiver reads them from
	// the data it receives and checks them against the ranges); prevPos is the last one's
	// position.
	positions bool
	prevPos   int64
	// seeks locate each run of the merged child in the trie (positions only), for
	// IndexReader to walk the runs instead of the parent.
	seeks []runSeek
}

// runSeek is where a run of an IndexPositions child starts: the ByteComparable form of its
// first partition (bti.PartitionIndex.WalkFrom finds the partition from it), that partition's
// data position, and where the run's rows slice begins (rowsSlice.begin).
type runSeek struct {
	from    []byte
	lo      int64
	rowsCut int64
}

// member takes e, a partition of piece k; run says it begins a run of the merged child.
func (m *trieMeasure) member(e *sstable.IndexEntry, ps *Pieces, k int, run bool) error {
	if run {
		m.rows.begin(m.lastEnd)
	}
	indexPos := int64(-1)
	if e.IndexPos >= 0 {
		re, childPos, _, err := m.rows.entry(e.IndexPos)
		if err != nil {
			return err
		}
		m.lastEnd, indexPos = re.End, childPos
	}
	if m.positions {
		m.rec = AppendPositionRecord(m.rec[:0], e.Position-m.prevPos, indexPos)
		m.prevPos = e.Position
	} else {
		if err := e.Partition(&m.tok); err != nil {
			return err
		}
		if !ps.holds(k, m.tok.Token) {
			return errUntrusted
		}
		m.rec = AppendIndexRecord(m.rec[:0], m.tok.Key, e.Position, indexPos, nil)
	}
	if m.members == 0 {
		m.firstPos = e.Position
	}
	m.members++
	m.length += int64(len(m.rec))
	if m.keepMax > 0 && !m.dropped {
		if int64(len(m.kept)+len(m.rec)) > m.keepMax {
			m.kept, m.dropped = nil, true
		} else {
			m.kept = append(m.kept, m.rec...)
		}
	}
	return nil
}

// errUntrusted stops btiPlan's walk at a key that disagrees with its trie path.
var errUntrusted = errors.New("a key disagrees with its trie path")

// add places one partition.
func (p *triePlanner) add(e *sstable.IndexEntry) error {
	if err := p.place(e); err != nil {
		return err
	}
	if p.m != nil && e.IndexPos >= 0 {
		p.m.lastEnd = e.RowsEnd
	}
	p.n++
	p.prevPos, p.prevIndexed = e.Position, e.IndexPos >= 0
	p.prevKey = append(p.prevKey[:0], e.RowsKey...)
	return nil
}

func (p *triePlanner) place(e *sstable.IndexEntry) error {
	p.form = p.form[:0]
	for p.j < len(p.bounds) && p.bounds[p.j] != nil {
		c := bti.ComparePrefix(e.Prefix, p.bounds[p.j])
		if c == 0 {
			form, err := p.formOf(e)
			if err != nil {
				return err
			}
			c = bytes.Compare(form, p.bounds[p.j])
		}
		if c < 0 {
			break
		}
		p.j++
	}
	k := -1
	if p.j%2 == 1 {
		k = (p.j - 1) / 2
	}
	if p.cur >= 0 && p.children[p.cur].Piece == k {
		p.children[p.cur].Partitions++
		p.last[p.cur] = e.Position
		p.lastIndexed = e.IndexPos >= 0
		p.lastKey = append(p.lastKey[:0], e.RowsKey...)
		return p.measure(e, k, false)
	}
	// A child that opens right where the last one closed continues its run in the merged
	// child (Merge).
	touching := p.cur >= 0
	if p.cur >= 0 {
		if err := p.close(e, e.Position); err != nil {
			return err
		}
	}
	if k < 0 {
		return nil
	}
	// A child opens: its first key, and the partition before must lie below its piece.
	if _, err := p.formOf(e); err != nil {
		return err
	}
	key, err := e.Key()
	if err != nil {
		return err
	}
	t := p.parent.Partitioner.Token(key)
	if !p.ps.holds(k, t) {
		return errUntrusted
	}
	_, ri := p.ps.Range(k)
	p.children = append(p.children, ChildPlan{Piece: k, RangeIndex: ri, FirstOrdinal: e.Ordinal, Lo: e.Position,
		First: bytes.Clone(key), FirstTok: cloneToken(t), Partitions: 1})
	p.last = append(p.last, e.Position)
	p.lastIndexed = e.IndexPos >= 0
	p.lastKey = append(p.lastKey[:0], e.RowsKey...)
	p.cur = len(p.children) - 1
	if p.n > 0 { // (a plan in parts checks the partition before its second half's first)
		before, err := p.keyAt(p.prevPos, p.prevIndexed, p.prevKey)
		if err != nil {
			return err
		}
		if p.ps.holds(k, p.parent.Partitioner.Token(before)) {
			return errUntrusted
		}
	}
	return p.measure(e, k, !touching)
}

// measure hands a partition of piece k to the measure, if any.
func (p *triePlanner) measure(e *sstable.IndexEntry, k int, run bool) error {
	if p.m == nil {
		return nil
	}
	if run && p.m.positions {
		// The child opening read its first key (place): p.form is its form.
		p.m.seeks = append(p.m.seeks, runSeek{from: bytes.Clone(p.form), lo: e.Position, rowsCut: p.m.lastEnd})
	}
	return p.m.member(e, p.ps, k, run)
}

// runsPositions hands keep the records of an IndexPositions slice of runs located by seeks
// (btiPlanMeasured), walking the parent's trie from each run's first partition to the
// partition after it: a pass over the child, not over the parent. A run whose partitions are
// not the planned ones (its first not at Lo, another count, the next not at Hi: the index
// changed under the plan) is an error.
func runsPositions(parent *sstable.Table, spec *Spec, runs []RunPlan, seeks []runSeek, keep func(k int, rec []byte) error) error {
	if len(seeks) != len(runs) {
		return fmt.Errorf("slice: %s: %d runs located for %d runs", parent.Desc, len(seeks), len(runs))
	}
	rows := rowsSlice{parent: spec.ParentRows}
	var (
		rec     []byte
		prevPos int64
		errEnd  = errors.New("run ended")
	)
	for i, r := range runs {
		s := seeks[i]
		rows.begin(s.rowsCut)
		n := int64(0)
		err := parent.ScanIndexFrom(s.from, r.FirstOrdinal, func(e *sstable.IndexEntry) error {
			switch {
			case n == 0 && e.Position != r.Lo:
				return fmt.Errorf("slice: %s: run %d's first partition is at %d, planned at %d", parent.Desc, i, e.Position, r.Lo)
			case n == r.Partitions && e.Position != r.Hi:
				return fmt.Errorf("slice: %s: the partition after run %d is at %d, planned at %d", parent.Desc, i, e.Position, r.Hi)
			case n == r.Partitions:
				return errEnd
			}
			indexPos := int64(-1)
			if e.IndexPos >= 0 {
				_, childPos, _, err := rows.entry(e.IndexPos)
				if err != nil {
					return err
				}
				indexPos = childPos
			}
			rec = AppendPositionRecord(rec[:0], e.Position-prevPos, indexPos)
			prevPos = e.Position
			n++
			return keep(0, rec)
		})
		switch {
		case errors.Is(err, errEnd):
		case err != nil:
			return err
		case n != r.Partitions || r.Hi != parent.DataLength():
			return fmt.Errorf("slice: %s: run %d holds %d partitions to the end of the index, planned %d ending at %d", parent.Desc, i, n, r.Partitions, r.Hi)
		}
	}
	return nil
}

// close ends the open child before next (nil: at the end of the index), at data position
// end: its last token, and the partition after it must lie outside its piece.
func (p *triePlanner) close(next *sstable.IndexEntry, end int64) error {
	c := &p.children[p.cur]
	p.cur = -1
	key, err := p.keyAt(p.last[len(p.last)-1], p.lastIndexed, p.lastKey)
	if err != nil {
		return err
	}
	c.Hi, c.LastTok = end, cloneToken(p.parent.Partitioner.Token(key))
	if !p.ps.holds(c.Piece, c.LastTok) {
		return errUntrusted
	}
	if next != nil {
		if _, err := p.formOf(next); err != nil {
			return err
		}
		key, err := next.Key()
		if err != nil {
			return err
		}
		if p.ps.holds(c.Piece, p.parent.Partitioner.Token(key)) {
			return errUntrusted
		}
	}
	return nil
}

// formOf is e's key's ByteComparable form, read once per partition; a form that does not
// begin with e's trie path stops the plan.
func (p *triePlanner) formOf(e *sstable.IndexEntry) ([]byte, error) {
	if len(p.form) > 0 {
		return p.form, nil
	}
	key, err := e.Key()
	if err != nil {
		return nil, err
	}
	p.reads++
	p.form = bti.AppendDecoratedKey(p.form[:0], p.parent.Partitioner.Token(key), key)
	if !bytes.HasPrefix(p.form, e.Prefix) {
		return nil, errUntrusted
	}
	return p.form, nil
}

// keyAt is the key of a partition met before: the one its Rows.db entry held (indexed), else
// read at its data position.
func (p *triePlanner) keyAt(pos int64, indexed bool, rowsKey []byte) ([]byte, error) {
	p.reads++
	if indexed {
		return rowsKey, nil
	}
	return p.parent.KeyAt(pos)
}

// seeksMatch reports whether seeks locate runs: one each, at its first partition.
func seeksMatch(seeks []runSeek, runs []RunPlan) bool {
	if len(seeks) != len(runs) {
		return false
	}
	for i, s := range seeks {
		if s.lo != runs[i].Lo || len(s.from) == 0 {
			return false
		}
	}
	return true
}
