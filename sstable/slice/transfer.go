package slice

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"runtime"
	"sync"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// Partial is what a sender ships for one child so that the receiver can rebuild it without
// the parent: the child's segments of parent Data.db bytes (verbatim chunks, no head pad) in
// order, the child's CompressionInfo, the index slice (one record per partition, parent
// positions) and, for BTI, the child's slice of the parent's Rows.db with record positions
// relative to it.
type Partial struct {
	Plan   ChildPlan
	Layout Layout
	Info   *compress.Info // the child's CompressionInfo.db; nil for an uncompressed parent
	Index  []byte         // index records (AppendIndexRecord); nil with PartialOptions.IndexLater
	// IndexLength is the index slice's length in bytes, also when it is not held.
	IndexLength int64
	// IndexFormat is the index slice's encoding (PartialOptions.Format).
	IndexFormat IndexFormat
	Rows        []byte // BTI only
	// ParentPartitions is the parent's partition count, from the same index pass.
	ParentPartitions int64
	// seeks locate the runs of an IndexPositions child in the parent's trie, when its plan
	// did (partialsBTI): IndexReader then walks the runs only.
	seeks []runSeek
}

// PartialOptions selects how Partials groups the runs.
type PartialOptions struct {
	// OnePerParent makes one multi-run child of every run (streaming); otherwise each piece of
	// the ranges is its own child.
	OnePerParent bool
	Bounds       Bounds
	// IndexLater gathers only the index slices' lengths; IndexReader produces each slice when
	// it is sent, so that a sender holds no index slice for the session (memory independent
	// of the partition count), at the cost of one more index pass per child.
	IndexLater bool
	// IndexKeep, with IndexLater, keeps an IndexPositions slice that the plan's own pass over
	// the trie made when it is at most this many bytes (Partial.Index): it is then sent from
	// memory, without IndexReader's second pass over the child's partitions. A longer slice is
	// dropped as soon as it passes the bound, so a sender's memory stays independent of the
	// partition count. 0: never kept.
	IndexKeep int64
	// Format IndexBig (a BIG parent only) makes each slice the runs' Index.db spans, read
	// verbatim when sent (it implies IndexLater), and plans from Summary.db when that serves
	// (summaryPlan): the sender then reads the index only at the ranges' edges. Format
	// IndexPositions (a compressed BTI parent only) makes each slice the partitions' positions
	// without their keys: the plan and the slices then read Data.db only at the ranges' edges.
	Format IndexFormat
}

// Partials plans the children of parent for ranges and gathers what each needs shipped.
// Data.db bytes are not read: the caller sends the segments itself. With OnePerParent, reason
// says why the runs stayed separate children, when they did.
//
// Index passes: with IndexLater on a BIG parent, one (planMeasured: the plan, the slices'
// lengths and the parent's partition count together); otherwise two, the plan and then
// gatherIndex, which makes the slices (or, BTI, the rows slices and the lengths, which depend
// on the rows slices' layout). A BTI parent's plan reads its trie and the keys at the ranges'
// edges only (btiPlan), and gatherIndex the keys of the children's partitions only: Data.db is
// decoded where the children are, once.
func Partials(parent *sstable.Table, ranges token.RangeSet, opts PartialOptions) (out []Partial, reason string, err error) {
	ps, err := NewPieces(parent.Partitioner, ranges)
	if err != nil {
		return nil, "", err
	}
	spec, err := SpecOf(parent)
	if err != nil {
		return nil, "", err
	}
	isBig := parent.Version().Format == version.Big
	spans := opts.Format == IndexBig
	if spans && !isBig {
		return nil, "", fmt.Errorf("slice: %s: Index.db spans for a %s sstable", parent.Desc, parent.Version().Format)
	}
	if opts.Format == IndexPositions && (isBig || parent.Compression == nil) {
		return nil, "", fmt.Errorf("slice: %s: a positions index slice is for a compressed BTI sstable", parent.Desc)
	}
	measured := isBig && (opts.IndexLater || spans)
	var plans []ChildPlan
	var partitions int64
	planned := false
	if spans {
		plans, partitions, planned = summaryPlan(parent, ps, ranges)
	}
	if !isBig && opts.OnePerParent {
		var out []Partial
		var done bool
		out, reason, plans, done, err = partialsBTI(parent, spec, ps, ranges, opts)
		if err != nil || done {
			return out, reason, err
		}
		planned = plans != nil
	}
	switch {
	case planned:
	case measured:
		plans, partitions, err = planMeasured(parent, ps, ranges)
	default:
		plans, err = planTable(parent, ps, ranges, endsNext)
	}
	if err != nil {
		return nil, "", err
	}
	if opts.OnePerParent && len(plans) > 0 {
		plans, reason = OnePerParent(parent, plans, ModeCopy, opts.Bounds)
	}
	out = make([]Partial, len(plans))
	for i, p := range plans {
		out[i].Plan = p
		out[i].Layout = NewLayout(geometry(parent, spec.CRCChunkLength), p.Runs, 1)
		if parent.Compression != nil {
			out[i].Info = out[i].Layout.Info(parent.Compression)
		}
		switch {
		case spans:
			out[i].IndexFormat = IndexBig
			for _, r := range p.Runs {
				out[i].IndexLength += r.IndexHi - r.IndexLo
			}
		case measured:
			out[i].IndexLength = p.IndexBytes
		default:
			out[i].IndexFormat = opts.Format
		}
		if measured {
			out[i].ParentPartitions = partitions
		}
	}
	if measured {
		return out, reason, nil
	}
	keep := func(k int, rec []byte) error { out[k].Index = append(out[k].Index, rec...); return nil }
	if opts.IndexLater {
		keep = nil
	}
	return out, reason, gatherIndex(parent, spec, out, ranges, keep)
}

// positionsRecordBytes is about what an IndexPositions record of a small partition takes:
// the increase of its position (2 bytes up to 16 KiB) and its rows-slice position (-1: 1 byte).
const positionsRecordBytes = 3

// keepable says whether the positions slice for ranges may come near keep bytes, from the
// parent's partition count and the ranges' share of the ring: a slice expected at more than
// twice the bound is not gathered only to be dropped on the way, so a sender's peak memory
// does not hold one. Without an estimate (no count, a partitioner without a ring width) the
// bound alone decides.
func keepable(spec *Spec, ranges token.RangeSet, keep int64) bool {
	share, ok := ranges.RingShare()
	n := spec.parentPartitions()
	if !ok || n <= 0 {
		return true
	}
	return float64(n)*share*positionsRecordBytes <= 2*float64(keep)
}

// partialsBTI is Partials for a BTI parent with OnePerParent in one index pass, when the trie
// serves (btiPlanMeasured) and the runs make one child: the plan and the child's index and
// rows slices come from one walk of the trie that reads the children's keys only. done is false
// when the caller must gather apart: the bounds keep the runs apart (their slices are laid
// out per child; plans is the plan, one child per piece), or the trie does not serve (plans
// is nil).
func partialsBTI(parent *sstable.Table, spec *Spec, ps *Pieces, ranges token.RangeSet, opts PartialOptions) (out []Partial, reason string, plans []ChildPlan, done bool, err error) {
	m := &trieMeasure{rows: rowsSlice{parent: spec.ParentRows}, positions: opts.Format == IndexPositions}
	switch {
	case !opts.IndexLater:
		m.keepMax = math.MaxInt64
	case opts.IndexKeep > 0 && m.positions && keepable(spec, ranges, opts.IndexKeep):
		m.keepMax = opts.IndexKeep
	}
	plans, _, partitions, ok, err := btiPlanMeasured(parent, ps, ranges, m)
	if err != nil || !ok {
		return nil, "", nil, false, err
	}
	index := m.kept
	if len(plans) == 0 {
		return nil, "", nil, true, nil
	}
	one, reason := OnePerParent(parent, plans, ModeCopy, opts.Bounds)
	if len(one) != 1 {
		return nil, "", plans, false, nil
	}
	p := Partial{Plan: one[0], Layout: NewLayout(geometry(parent, spec.CRCChunkLength), one[0].Runs, 1),
		Index: index, IndexLength: m.length, IndexFormat: opts.Format, Rows: m.rows.bytes(), ParentPartitions: partitions}
	if int64(len(index)) != m.length {
		p.Index = nil // dropped (IndexKeep), or kept for a plan of several children
	}
	if p.Index == nil && opts.IndexLater && seeksMatch(m.seeks, one[0].Runs) {
		p.seeks = m.seeks
	}
	if parent.Compression != nil {
		p.Info = p.Layout.Info(parent.Compression)
	}
	return []Partial{p}, reason, nil, true, nil
}

// planMeasured is PlanTable for a BIG parent, measuring in the same pass each child's index
// slice (ChildPlan.IndexBytes), recording where each run's entries lie in Index.db
// (RunPlan.IndexLo/IndexHi, so that IndexReader reads only those) and counting the parent's
// partitions. A BIG record carries no Rows.db position (its indexPos is always -1), so its
// length is known from the index entry alone, whatever the children's grouping; IndexReader
// checks the length when it makes the slice.
//
// For small partitions this pass is the sender's largest cost before it can announce
// anything, and the receiver waits idle through it: a large index is cut at Summary.db
// samples into parts planned in parallel (Planner.Append joins them). Parts that do not meet
// exactly (a sample not at an entry's start) fail their scan, and the plan is then made by
// one pass, which reports what is wrong with the index, if anything.
func planMeasured(parent *sstable.Table, ps *Pieces, ranges token.RangeSet) ([]ChildPlan, int64, error) {
	return planMeasuredIn(parent, ps, ranges, min(runtime.GOMAXPROCS(0), maxPlanParts))
}

// planMeasuredIn is planMeasured in at most parts parts.
func planMeasuredIn(parent *sstable.Table, ps *Pieces, ranges token.RangeSet, parts int) ([]ChildPlan, int64, error) {
	fi, err := os.Stat(parent.Path(descriptor.Index))
	if err != nil {
		return nil, 0, err
	}
	size := fi.Size()
	var m *measuredPass
	if cuts := indexCuts(parent, size, parts); len(cuts) > 0 {
		m = planParts(parent, ps, append(append([]int64{0}, cuts...), size))
	}
	if m == nil {
		m = newMeasuredPass(ps)
		if err := parent.ScanPartitions(m.add); err != nil {
			return nil, 0, err
		}
		m.end(size)
	}
	plans := m.pl.Finish(ranges, parent.DataLength())
	for k := range plans {
		plans[k].IndexBytes = m.bytes[k]
		plans[k].Runs[0].IndexLo, plans[k].Runs[0].IndexHi = m.span[k][0], m.span[k][1]
	}
	return plans, m.pl.Partitions(), nil
}

// maxPlanParts bounds the parts of a parallel plan.
const maxPlanParts = 4

// planPartBytes is the least Index.db a part of a parallel plan is given: below it the pass
// is short enough as it is. A variable for the tests.
var planPartBytes int64 = 1 << 20

// indexCuts returns up to parts-1 Index.db offsets, in increasing order inside (0, size), at
// which Summary.db says entries start, cutting the index into about equal parts of at least
// planPartBytes; none when the index is too small or its summary unusable.
func indexCuts(parent *sstable.Table, size int64, parts int) []int64 {
	parts = min(parts, int(size/planPartBytes))
	if parts < 2 {
		return nil
	}
	sum, err := readSummary(parent)
	if err != nil || len(sum.Entries) < parts {
		return nil
	}
	var cuts []int64
	for i := 1; i < parts; i++ {
		at := sum.Entries[i*len(sum.Entries)/parts].IndexPosition
		if at <= 0 || at >= size || (len(cuts) > 0 && at <= cuts[len(cuts)-1]) {
			return nil
		}
		cuts = append(cuts, at)
	}
	return cuts
}

// planParts plans Index.db [bounds[i], bounds[i+1]) for every i on goroutines of their own
// and joins the parts, or returns nil when a part's scan failed.
func planParts(parent *sstable.Table, ps *Pieces, bounds []int64) *measuredPass {
	parts := make([]*measuredPass, len(bounds)-1)
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i := range parts {
		parts[i] = newMeasuredPass(ps)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = parent.ScanPartitionsIn(bounds[i], bounds[i+1], parts[i].add)
			parts[i].end(bounds[i+1])
		}()
	}
	wg.Wait()
	if errors.Join(errs...) != nil {
		return nil
	}
	for _, p := range parts[1:] {
		parts[0].join(p)
	}
	return parts[0]
}

// measuredPass is planMeasured's state over (a part of) the index: the plan, and by child its
// slice's length and its entries' span in Index.db.
type measuredPass struct {
	pl       *Planner
	bytes    []int64
	span     [][2]int64
	prev     int   // the child of the last partition, or -1
	firstPos int64 // the data position of the first partition, -1 before it
}

func newMeasuredPass(ps *Pieces) *measuredPass {
	return &measuredPass{pl: NewPlanner(ps), prev: -1, firstPos: -1}
}

func (m *measuredPass) add(p *sstable.Partition) error {
	if m.firstPos < 0 {
		m.firstPos = p.Position
	}
	k := m.pl.Add(p.Ordinal, p.Key, p.Token, p.Position)
	if k != m.prev {
		m.end(p.IndexPos)
		if k >= 0 { // a new child: Add appends them
			m.span, m.bytes = append(m.span, [2]int64{p.IndexPos, 0}), append(m.bytes, 0)
		}
		m.prev = k
	}
	if k >= 0 {
		m.bytes[k] += int64(indexRecordLength(p.Key, p.Position, -1, p.Promoted))
	}
	return nil
}

// end ends the span of the child open at the last partition at Index.db offset off.
func (m *measuredPass) end(off int64) {
	if m.prev >= 0 {
		m.span[m.prev][1] = off
	}
}

// join continues m with n, the pass over the part of the index that follows m's (both ended).
func (m *measuredPass) join(n *measuredPass) {
	if n.firstPos < 0 {
		return
	}
	bytes, span := n.bytes, n.span
	if m.pl.Append(n.pl, n.firstPos) {
		last := len(m.bytes) - 1
		m.bytes[last] += bytes[0]
		m.span[last][1] = span[0][1]
		bytes, span = bytes[1:], span[1:]
	}
	m.bytes, m.span = append(m.bytes, bytes...), append(m.span, span...)
}

// indexPiece is the size of the pieces in which IndexReader produces an index slice.
var indexPiece = 256 << 10 // a variable for the tests

// IndexReader produces p's index slice (p from Partials of parent, IndexLater or not) with
// one pass over parent's index, in pieces of about 256 KiB as it is read: its memory does not
// grow with the partition count. Close ends the pass early. A slice that comes out of another
// length than p.IndexLength (the index changed under it) fails the read. An IndexBig slice is
// the runs' Index.db spans, read verbatim (spanReader).
func IndexReader(parent *sstable.Table, p Partial) (io.ReadCloser, error) {
	if p.IndexFormat == IndexBig {
		if !runsLocated(p.Plan.Runs) {
			return nil, fmt.Errorf("slice: %s: Index.db spans of runs whose entries were not located", parent.Desc)
		}
		return newSpanReader(parent.Path(descriptor.Index), p.Plan.Runs, p.IndexLength)
	}
	spec, err := SpecOf(parent)
	if err != nil {
		return nil, err
	}
	r := &indexReader{want: p.IndexLength}
	one := []Partial{{Plan: p.Plan, Layout: p.Layout, IndexFormat: p.IndexFormat}}
	next, stop := iter.Pull(func(yield func([]byte) bool) {
		var buf []byte
		stopped := errors.New("stopped")
		keep := func(_ int, rec []byte) error {
			buf = append(buf, rec...)
			if len(buf) >= indexPiece {
				if !yield(buf) {
					return stopped
				}
				buf = buf[:0] // the reader copied it out before asking for more
			}
			return nil
		}
		var err error
		switch {
		case parent.Version().Format == version.Big && runsLocated(p.Plan.Runs):
			err = runsIndex(parent, p.Plan.Runs, keep)
		case p.IndexFormat == IndexPositions && p.seeks != nil:
			err = runsPositions(parent, spec, p.Plan.Runs, p.seeks, keep)
		default:
			err = gatherIndex(parent, spec, one, nil, keep)
		}
		if err == nil && len(buf) > 0 {
			yield(buf)
		}
		if err != stopped {
			r.err = err
		}
	})
	r.next, r.stop = next, stop
	return r, nil
}

type indexReader struct {
	next      func() ([]byte, bool)
	stop      func()
	cur       []byte
	err       error
	got, want int64
}

func (r *indexReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		b, ok := r.next()
		if !ok {
			if r.err != nil {
				return 0, r.err
			}
			if r.got != r.want {
				return 0, fmt.Errorf("slice: index slice of %d bytes, planned %d", r.got, r.want)
			}
			return 0, io.EOF
		}
		r.cur = b
		r.got += int64(len(b))
		if r.got > r.want {
			return 0, fmt.Errorf("slice: index slice longer than the planned %d bytes", r.want)
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

func (r *indexReader) Close() error { r.stop(); return nil }

// runsLocated says whether every run knows where its entries lie in Index.db.
func runsLocated(runs []RunPlan) bool {
	for _, r := range runs {
		if r.IndexHi <= r.IndexLo {
			return false
		}
	}
	return len(runs) > 0
}

// runsIndex hands keep the index records of a BIG parent's runs (child 0), reading only the
// runs' entries of Index.db: a pass over the child, not over the parent. A run whose entries
// are not its planned partitions (the index changed under the plan) is an error.
func runsIndex(parent *sstable.Table, runs []RunPlan, keep func(k int, rec []byte) error) error {
	path := parent.Path(descriptor.Index)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var rec []byte
	for _, r := range runs {
		sc := bigindex.NewScannerAt(f, r.IndexLo, r.IndexHi, int(min(r.IndexHi-r.IndexLo, indexBuffer)))
		var n int64
		for sc.Next() {
			e := sc.Entry()
			rec = AppendIndexRecord(rec[:0], e.Key, e.Position, -1, e.Promoted)
			if err := keep(0, rec); err != nil {
				return err
			}
			n++
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if n != r.Partitions {
			return fmt.Errorf("slice: %s holds %d entries at [%d, %d), planned %d partitions", path, n, r.IndexLo, r.IndexHi, r.Partitions)
		}
	}
	return nil
}

// indexBuffer bounds runsIndex's read buffer.
const indexBuffer = 256 << 10

// gatherIndex measures the index (and fills the BTI rows) slices of out in one index pass,
// handing each child's records to keep (k is the child), when keep is set. A BTI parent's keys
// are read for the children's partitions only (scanLazy), each checked to lie in ranges when
// ranges are given; a child whose IndexFormat is IndexPositions needs none (the receiver reads
// them from the Data.db it receives and checks them against the ranges it asked for).
func gatherIndex(parent *sstable.Table, spec *Spec, out []Partial, ranges token.RangeSet, keep func(k int, rec []byte) error) error {
	var (
		k, run  int
		begun   int // the run whose rows the slice is taking
		lastEnd int64
		inChild bool
		rows    rowsSlice
		isBTI   = spec.ParentRows != nil
		n       int64
		rec     []byte
		within  *token.Within
		prevPos int64 // the child's last record's position (IndexPositions)
	)
	if isBTI && len(ranges) > 0 {
		within = ranges.Within()
	}
	finish := func() {
		if isBTI {
			out[k].Rows = rows.bytes()
		}
		inChild = false
		k++
	}
	err := scanLazy(parent, false, func(lp *lazyPartition) error { // no token is needed here (BIG)
		pt := &lp.Partition
		n++
		if inChild && pt.Ordinal > out[k].Plan.LastOrdinal() {
			finish()
		}
		if !inChild && k < len(out) && pt.Ordinal == out[k].Plan.FirstOrdinal {
			inChild, run, begun, prevPos = true, 0, 0, 0
			rows = rowsSlice{parent: spec.ParentRows}
			rows.begin(lastEnd)
		}
		member := false
		if inChild {
			if run, member = out[k].Plan.Contains(run, pt.Ordinal); member && run != begun {
				begun = run
				rows.begin(lastEnd)
			}
		}
		indexPos := int64(-1)
		if pt.IndexPos >= 0 && isBTI {
			if member {
				e, childPos, _, err := rows.entry(pt.IndexPos)
				if err != nil {
					return err
				}
				lastEnd, indexPos = e.End, childPos
			} else {
				end, err := lp.rowsEnd(spec.ParentRows)
				if err != nil {
					return err
				}
				lastEnd = end
			}
		}
		if member && out[k].IndexFormat == IndexPositions {
			rec = AppendPositionRecord(rec[:0], pt.Position-prevPos, indexPos)
			prevPos = pt.Position
			out[k].IndexLength += int64(len(rec))
			if keep != nil {
				return keep(k, rec)
			}
			return nil
		}
		if member {
			if err := lp.load(within != nil); err != nil {
				return err
			}
			if within != nil && !within.Holds(pt.Token) {
				return fmt.Errorf("%w: %s: partition %d (token %s), planned from Partitions.db, is outside the ranges",
					sstable.ErrCorrupt, parent.Path(descriptor.Partitions), pt.Ordinal, pt.Token)
			}
			rec = AppendIndexRecord(rec[:0], pt.Key, pt.Position, indexPos, pt.Promoted)
			out[k].IndexLength += int64(len(rec))
			if keep != nil {
				return keep(k, rec)
			}
		}
		return nil
	})
	if err == nil && inChild {
		finish()
	}
	for i := range out {
		out[i].ParentPartitions = n
	}
	return err
}

// lazyPartition is a partition of scanLazy: its ordinal, data position and Rows.db entry
// position at once, its key (and token) once loaded.
type lazyPartition struct {
	sstable.Partition
	e *sstable.IndexEntry // BTI: the entry the key is read from; nil when Partition is whole
}

// load reads the partition's key (a BTI parent's) and, with tokens, takes its token and hash.
func (lp *lazyPartition) load(tokens bool) error {
	e := lp.e
	if e == nil {
		return nil
	}
	lp.e = nil
	if tokens {
		return e.Partition(&lp.Partition)
	}
	var err error
	lp.Key, err = e.Key()
	return err
}

// rowsEnd is the end of the partition's Rows.db entry (IndexPos >= 0) in rows.
func (lp *lazyPartition) rowsEnd(rows []byte) (int64, error) {
	if lp.e != nil {
		return lp.e.RowsEnd, nil
	}
	e, err := bti.ReadRowIndexEntry(rows, lp.IndexPos)
	return e.End, err
}

// scanLazy calls fn for every partition of parent in index order. A BIG parent's come whole
// (with their tokens when asked: ScanPartitions, else ScanKeys); a BTI parent's with their
// ordinal, data position and Rows.db entry only (sstable.ScanIndex), their keys read by load,
// through one sequential cursor: a pass that loads the keys of some runs decodes those runs'
// chunks only. The lazyPartition is reused between calls.
func scanLazy(parent *sstable.Table, tokens bool, fn func(lp *lazyPartition) error) error {
	var lp lazyPartition
	if parent.Version().Format != version.BTI {
		scan := parent.ScanKeys
		if tokens {
			scan = parent.ScanPartitions
		}
		return scan(func(p *sstable.Partition) error {
			lp.Partition, lp.e = *p, nil
			return fn(&lp)
		})
	}
	return parent.ScanIndex(func(e *sstable.IndexEntry) error {
		lp.Partition = sstable.Partition{Ordinal: e.Ordinal, Position: e.Position, IndexPos: e.IndexPos}
		lp.e = e
		return fn(&lp)
	})
}

// AppendIndexRecord appends one index-slice record: the key, the parent Data.db position, the
// Rows.db entry position within the shipped rows slice (-1 when none, and always for BIG) and
// the BIG promoted index verbatim.
//
//	uvint keyLength, key, uvint position, vint indexPos, uvint promotedLength, promoted
func AppendIndexRecord(dst, key []byte, position, indexPos int64, promoted []byte) []byte {
	dst = encoding.AppendVintBytes(dst, key)
	dst = encoding.AppendUVint(dst, uint64(position))
	dst = encoding.AppendVint(dst, indexPos)
	return encoding.AppendVintBytes(dst, promoted)
}

// indexRecordLength is len(AppendIndexRecord(nil, key, position, indexPos, promoted)).
func indexRecordLength(key []byte, position, indexPos int64, promoted []byte) int {
	return encoding.UVintSize(uint64(len(key))) + len(key) + encoding.UVintSize(uint64(position)) +
		encoding.VintSize(indexPos) + encoding.UVintSize(uint64(len(promoted))) + len(promoted)
}

// AppendPositionRecord appends one record of an IndexPositions slice: how far the partition's
// parent Data.db position lies past the record before's (past 0 for a slice's first record),
// and its Rows.db entry position within the shipped rows slice (-1 when none).
//
//	uvint positionIncrease, vint indexPos
func AppendPositionRecord(dst []byte, increase, indexPos int64) []byte {
	dst = encoding.AppendUVint(dst, uint64(increase))
	return encoding.AppendVint(dst, indexPos)
}

// ForEachIndexRecord decodes an index slice, calling fn with each partition (token computed
// with p). The Partition is reused between calls. A malformed slice is an error with its
// offset: it comes from a peer.
func ForEachIndexRecord(slice []byte, p token.Partitioner, fn func(*sstable.Partition) error) error {
	return decodeIndexRecords(slice, p, fn)
}

// CountIndexSlice is CountIndexRecords for a slice of format f (IndexRecords or
// IndexPositions).
func CountIndexSlice(slice []byte, f IndexFormat) (int64, error) {
	if f != IndexPositions {
		return CountIndexRecords(slice)
	}
	var n int64
	r := encoding.NewReader(slice)
	for r.Len() > 0 {
		r.UVint()
		r.Vint()
		if err := r.Err(); err != nil {
			return n, fmt.Errorf("index slice record %d: %w", n, err)
		}
		n++
	}
	return n, nil
}

// CountIndexRecords checks an index slice's framing as ForEachIndexRecord does and counts its
// records, without hashing a key.
func CountIndexRecords(slice []byte) (int64, error) {
	var n int64
	err := decodeIndexRecords(slice, nil, func(*sstable.Partition) error { n++; return nil })
	return n, err
}

// FirstIndexRecord returns the key and position of an index slice's first record.
func FirstIndexRecord(slice []byte) (key []byte, position int64, err error) {
	errFirst := errors.New("first record read")
	err = decodeIndexRecords(slice, nil, func(p *sstable.Partition) error {
		key, position = append([]byte(nil), p.Key...), p.Position
		return errFirst
	})
	switch {
	case err == errFirst:
		return key, position, nil
	case err == nil:
		return nil, 0, errors.New("slice: empty index slice")
	}
	return nil, 0, err
}

// decodeIndexRecords is ForEachIndexRecord; a nil p leaves the tokens unset.
func decodeIndexRecords(slice []byte, p token.Partitioner, fn func(*sstable.Partition) error) error {
	r := encoding.NewReader(slice)
	var pt sstable.Partition
	for r.Len() > 0 {
		pt.Key = r.VintBytes()
		pt.Position = int64(r.UVint())
		pt.IndexPos = r.Vint()
		pt.Promoted = r.VintBytes()
		if err := r.Err(); err != nil {
			return fmt.Errorf("index slice record %d: %w", pt.Ordinal, err)
		}
		if pt.Position < 0 || pt.IndexPos < -1 {
			return fmt.Errorf("index slice record %d: position %d, index position %d", pt.Ordinal, pt.Position, pt.IndexPos)
		}
		if len(pt.Promoted) == 0 {
			pt.Promoted = nil
		}
		if p != nil {
			pt.Token, pt.Hash, pt.HasHash = token.TokenAndHash(p, pt.Key)
		}
		if err := fn(&pt); err != nil {
			return err
		}
		pt.Ordinal++
	}
	return nil
}

// IndexFormat is how an index slice encodes its partitions.
type IndexFormat uint8

const (
	// IndexRecords is AppendIndexRecord's records: key, parent position, rows-slice position,
	// promoted index. A BTI slice always takes this form.
	IndexRecords IndexFormat = iota
	// IndexBig is a BIG parent's Index.db entries verbatim, each run's span of Index.db after
	// the one before (parent positions, as in records). The sender reads the spans and decodes
	// no entry: for small partitions its index work stops growing with their number. Every
	// check a records slice gets, it gets on the receiver.
	IndexBig
	// IndexPositions is a compressed BTI parent's partitions without their keys
	// (AppendPositionRecord): a BTI key lives in Data.db alone (or in Rows.db, for a partition
	// with a row index), so a sender of records decodes the child's chunks to find them; with
	// positions it walks Partitions.db only, and the receiver reads each key from the Data.db
	// it received, whose chunks it has checked (RebuildOptions.Data). Every check a records
	// slice gets, it gets on the receiver, on the keys the data holds.
	IndexPositions
)

func (f IndexFormat) String() string {
	switch f {
	case IndexRecords:
		return "records"
	case IndexBig:
		return "big"
	case IndexPositions:
		return "positions"
	}
	return fmt.Sprintf("IndexFormat(%d)", uint8(f))
}

// RebuildOptions says what a received index slice is and what it must hold.
type RebuildOptions struct {
	// Partitions, when positive, is the number of partitions the slice holds (the Manifest's,
	// checked): the filter is then sized up front and filled record by record instead of from
	// a list of every key's hash.
	Partitions int64
	Format     IndexFormat
	// Ranges, when set, are the ranges the child was asked for, and a partition outside them
	// fails the rebuild: a sender cannot slip in partitions the receiver did not ask for, and
	// with the order check this vouches for every key of a slice the sender did not read (a
	// plan from Summary.db and Index.db spans sent verbatim).
	Ranges token.RangeSet
	// Data and Compression, for an IndexPositions slice, are the child's Data.db as received
	// (its chunks checked as they arrived; complete by Finish, see PartialRebuild.Arrived) and
	// its CompressionInfo: the keys are read from it.
	Data        io.ReaderAt
	Compression *compress.Info
	// Fill, when set, lays the child out as the index slice reaches each run (an in-place
	// fill): lay is then FillLayout's, one segment per run, shifts set as runs are entered.
	Fill RunEntrant
}

// RebuildPartial writes every component of a received child but Data.db, which must already
// be complete in inst under desc: spec carries the parent's metadata (ParentRows is the shipped
// rows slice), lay comes from the sender's segments (ReceivedLayout), index is the shipped
// index slice. It checks the records' order, that their positions fall inside a segment and,
// with opts.Ranges, that their keys fall inside the ranges.
func RebuildPartial(spec *Spec, inst *fsx.Install, desc descriptor.Descriptor, lay *Layout, index []byte, data DataResult, opts RebuildOptions) ([]descriptor.Component, error) {
	r, err := NewPartialRebuild(spec, inst, desc, lay, opts)
	if err != nil {
		return nil, err
	}
	if err := r.Write(index); err != nil {
		return nil, err
	}
	return r.Finish(data)
}

// PartialRebuild is RebuildPartial taking the index slice as it arrives: each record goes to
// the builder once its last byte is in, so a receiver holds at most one record of the slice
// (and the filter, sized from the announced partition count), not the whole slice.
type PartialRebuild struct {
	b      *Builder
	p      token.Partitioner
	format IndexFormat
	// IndexPositions: the keys, read from the received Data.db; the rows slice, whose
	// entries' keys are checked against them; the last record's parent position and layout
	// segment; the slice's bytes not taken yet, whose keys have not arrived.
	keys *receivedKeys
	// fillKeys, filled in place, reads the keys from the child as it is written instead.
	fillKeys keyAt
	rows     []byte
	lastPos  int64
	seg      int
	pend     []byte
	within   *token.Within // nil: no range check
	carry    []byte        // the start of a record whose end has not arrived
	taken    int64         // slice bytes before carry
	ordinal  int64
	prev     token.Token
	prevKey  []byte
	prevPos  int64
	// firstKey and firstPos are the first record's.
	firstKey []byte
	firstPos int64
}

// First is the first partition's key and position, once a record has been written.
func (r *PartialRebuild) First() ([]byte, int64) { return r.firstKey, r.firstPos }

// NewPartialRebuild starts the rebuild RebuildPartial does.
func NewPartialRebuild(spec *Spec, inst *fsx.Install, desc descriptor.Descriptor, lay *Layout, opts RebuildOptions) (*PartialRebuild, error) {
	switch {
	case opts.Format == IndexRecords:
	case opts.Format == IndexBig && spec.Version.Format == version.Big:
	case opts.Format == IndexPositions && spec.Version.Format == version.BTI:
	default:
		return nil, fmt.Errorf("slice: a %s index slice for a %s sstable", opts.Format, spec.Version.Format)
	}
	r := &PartialRebuild{p: spec.Partitioner, format: opts.Format, prevPos: -1}
	if ka, ok := opts.Fill.(keyAt); ok && opts.Format == IndexPositions {
		// Filled in place: the keys are read from the child as it is written.
		r.fillKeys, r.rows = ka, spec.ParentRows
	} else if opts.Format == IndexPositions {
		if opts.Data == nil || opts.Compression == nil || lay == nil {
			return nil, errors.New("slice: a positions index slice needs the child's compressed Data.db")
		}
		data, err := compress.NewReader(opts.Data, lay.FileLength, opts.Compression)
		if err != nil {
			return nil, fmt.Errorf("the received Data.db: %w", err)
		}
		r.keys, r.rows = newReceivedKeys(data, opts.Compression, lay.FileLength), spec.ParentRows
		r.keys.arrived = lay.FileLength
	}
	if len(opts.Ranges) > 0 {
		r.within = opts.Ranges.Within()
	}
	b, err := NewBuilder(spec, inst, desc, lay, 0)
	if err != nil {
		return nil, err
	}
	if err := b.Expect(opts.Partitions); err != nil {
		return nil, err
	}
	if opts.Fill != nil {
		b.runs = opts.Fill
		if over, ok := opts.Fill.(interface{ FillerOverhead() int64 }); ok {
			b.over = over.FillerOverhead()
		}
	}
	r.b = b
	return r, nil
}

// RunLasts is, for a rebuild laying runs out as it goes (RebuildOptions.Fill), each run's last
// partition's parent position.
func (r *PartialRebuild) RunLasts() []int64 { return r.b.RunLasts() }

// MaybeFillers is Builder.MaybeFillers.
func (r *PartialRebuild) MaybeFillers() []int64 { return r.b.MaybeFillers() }

// Write takes the next bytes of the index slice, cut anywhere. A record cut by the previous
// Write is completed from as few of b's first bytes as it needs (doubling what it takes), and
// the rest of b is read where it is: a frame is not copied to finish one record.
func (r *PartialRebuild) Write(b []byte) error {
	if r.keys != nil || r.fillKeys != nil {
		r.pend = append(r.pend, b...)
		return r.takePositions(false)
	}
	for len(r.carry) > 0 && len(b) > 0 {
		k := min(len(b), max(256, len(r.carry)))
		r.carry = append(r.carry, b[:k]...)
		b = b[k:]
		n, err := r.records(r.carry, false)
		if err != nil {
			return err
		}
		r.taken += int64(n)
		r.carry = append(r.carry[:0], r.carry[n:]...)
	}
	n, err := r.records(b, false)
	if err != nil {
		return err
	}
	r.taken += int64(n)
	r.carry = append(r.carry, b[n:]...)
	return nil
}

// Arrived says that the first n bytes of the child's Data.db are in place (and checked): an
// IndexPositions rebuild started while Data.db arrives is told so before its first Write, and
// again as more arrives; its records wait (in memory: a few bytes per partition) until the
// chunks holding their keys are in. Finish takes Data.db as complete. Other formats ignore it.
func (r *PartialRebuild) Arrived(n int64) error {
	switch {
	case r.fillKeys != nil:
		return r.takePositions(false)
	case r.keys == nil:
		return nil
	}
	r.keys.arrived = n
	return r.takePositions(false)
}

// keyAt reads keys of a child filled in place (InPlaceFill.KeyAt) by parent position.
type keyAt interface {
	KeyAt(pos int64) ([]byte, bool, error)
}

// takePositions adds the records at the start of r.pend whose keys have arrived.
func (r *PartialRebuild) takePositions(last bool) error {
	n, err := r.positions(r.pend, last)
	r.taken += int64(n)
	r.pend = r.pend[:copy(r.pend, r.pend[n:])]
	return err
}

// Records is the number of complete records taken so far.
func (r *PartialRebuild) Records() int64 { return r.ordinal }

// Finish checks that the slice ended on a record's end and writes the components.
func (r *PartialRebuild) Finish(data DataResult) ([]descriptor.Component, error) {
	if r.keys != nil || r.fillKeys != nil {
		if r.keys != nil {
			r.keys.arrived = r.b.lay.FileLength
		}
		if err := r.takePositions(true); err != nil {
			return nil, err
		}
	}
	if len(r.carry) > 0 {
		if _, err := r.records(r.carry, true); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("index slice record %d: %d bytes without their end", r.ordinal, len(r.carry))
	}
	return r.b.Finish(data)
}

// records adds the complete records at the start of buf and returns the bytes they took. A
// record cut short ends the scan without an error unless last (no more bytes will come).
func (r *PartialRebuild) records(buf []byte, last bool) (int, error) {
	switch r.format {
	case IndexBig:
		return r.entries(buf, last)
	case IndexPositions:
		return r.positions(buf, last)
	}
	var pt sstable.Partition
	off := 0
	for off < len(buf) {
		rd := encoding.NewReader(buf[off:])
		pt.Key = rd.VintBytes()
		pt.Position = int64(rd.UVint())
		pt.IndexPos = rd.Vint()
		pt.Promoted = rd.VintBytes()
		if err := rd.Err(); err != nil {
			if last {
				return off, fmt.Errorf("index slice record %d: %w", r.ordinal, err)
			}
			return off, nil // its end is still to come
		}
		pt.Ordinal = r.ordinal
		if err := r.add(&pt); err != nil {
			return off, err
		}
		off = len(buf) - rd.Len()
		r.ordinal++
	}
	return off, nil
}

// entries is records for a slice of Index.db entries (IndexBig).
func (r *PartialRebuild) entries(buf []byte, last bool) (int, error) {
	var (
		pt  sstable.Partition
		e   bigindex.Entry
		off int
	)
	pt.IndexPos = -1
	for off < len(buf) {
		n, err := bigindex.DecodeEntry(buf[off:], r.taken+int64(off), &e)
		if err == nil && n == 0 {
			if !last {
				return off, nil // its end is still to come
			}
			err = fmt.Errorf("%d bytes at slice offset %d are not a whole entry", len(buf)-off, r.taken+int64(off))
		}
		if err != nil {
			return off, fmt.Errorf("index slice record %d: %w", r.ordinal, err)
		}
		pt.Key, pt.Position, pt.Promoted, pt.Ordinal = e.Key, e.Position, e.Promoted, r.ordinal
		if err := r.add(&pt); err != nil {
			return off, err
		}
		off += n
		r.ordinal++
	}
	return off, nil
}

// positions is records for an IndexPositions slice: each key is read from the received Data.db
// at the partition's position there (and must be its Rows.db entry's, when it has one). A
// record whose key has not arrived ends the scan, as one cut short does.
func (r *PartialRebuild) positions(buf []byte, last bool) (int, error) {
	var pt sstable.Partition
	off := 0
	for off < len(buf) {
		rd := encoding.NewReader(buf[off:])
		increase := rd.UVint()
		pt.IndexPos = rd.Vint()
		if err := rd.Err(); err != nil {
			if last {
				return off, fmt.Errorf("index slice record %d: %w", r.ordinal, err)
			}
			return off, nil // its end is still to come
		}
		if increase > 1<<62 || (r.ordinal > 0 && increase == 0) {
			return off, fmt.Errorf("index slice record %d: position increase %d", r.ordinal, increase)
		}
		pt.Position, pt.Ordinal, pt.Promoted = r.lastPos+int64(increase), r.ordinal, nil
		var key []byte
		var in bool
		var err error
		child, seg := pt.Position, r.seg
		if r.fillKeys != nil {
			key, in, err = r.fillKeys.KeyAt(pt.Position)
		} else if child, seg, err = r.b.lay.mapFrom(r.seg, pt.Position); err != nil {
			return off, fmt.Errorf("index slice record %d: %w", r.ordinal, err)
		} else {
			key, in, err = r.keys.at(child)
		}
		if err != nil {
			return off, fmt.Errorf("index slice record %d: key at child Data.db position %d (parent %d): %w", r.ordinal, child, pt.Position, err)
		}
		if !in {
			if last {
				return off, fmt.Errorf("internal: index slice record %d's key not in the whole Data.db", r.ordinal)
			}
			return off, nil // its key is still to come
		}
		pt.Key, r.seg = key, seg
		if pt.IndexPos >= 0 {
			e, err := bti.ReadRowIndexEntry(r.rows, pt.IndexPos)
			if err != nil {
				return off, fmt.Errorf("index slice record %d: rows slice entry at %d: %w", r.ordinal, pt.IndexPos, err)
			}
			if !bytes.Equal(e.Key, pt.Key) {
				return off, fmt.Errorf("index slice record %d: rows slice entry at %d is for key %x, Data.db holds %x", r.ordinal, pt.IndexPos, e.Key, pt.Key)
			}
		}
		if err := r.add(&pt); err != nil {
			return off, err
		}
		r.lastPos = pt.Position
		off = len(buf) - rd.Len()
		r.ordinal++
	}
	return off, nil
}

func (r *PartialRebuild) add(p *sstable.Partition) error {
	if p.Position < 0 || p.IndexPos < -1 {
		return fmt.Errorf("index slice record %d: position %d, index position %d", p.Ordinal, p.Position, p.IndexPos)
	}
	if len(p.Promoted) == 0 {
		p.Promoted = nil
	}
	p.Token, p.Hash, p.HasHash = token.TokenAndHash(r.p, p.Key)
	if p.Position <= r.prevPos {
		return fmt.Errorf("index slice record %d: position %d out of order", p.Ordinal, p.Position)
	}
	if r.prevPos >= 0 && token.CompareKeys(r.prev, r.prevKey, p.Token, p.Key) >= 0 {
		return fmt.Errorf("index slice record %d: key %x out of order", p.Ordinal, p.Key)
	}
	if r.within != nil && !r.within.Holds(p.Token) {
		return fmt.Errorf("index slice record %d: key %x (token %s) is outside the ranges asked for", p.Ordinal, p.Key, p.Token)
	}
	if r.firstKey == nil {
		r.firstKey, r.firstPos = append([]byte{}, p.Key...), p.Position
	}
	r.prevKey = append(r.prevKey[:0], p.Key...)
	r.prev = p.Token
	if r.prev.Bytes != nil {
		r.prev.Bytes = r.prevKey
	}
	r.prevPos = p.Position
	return r.b.Add(p)
}

// SpecFromStatistics is the Spec of a parent known only by its version, its Statistics.db
// bytes and (BTI) the shipped rows slice: what a streaming receiver has.
func SpecFromStatistics(v version.Version, statistics, rows []byte) (*Spec, error) {
	st, err := stats.Parse(statistics, v)
	if err != nil {
		return nil, fmt.Errorf("parent Statistics.db: %w", err)
	}
	if st.Validation == nil || st.Header == nil {
		return nil, fmt.Errorf("parent Statistics.db lacks its validation or header component")
	}
	p, err := token.ForName(st.Validation.Partitioner)
	if err != nil {
		return nil, err
	}
	if v.Format == version.BTI && rows == nil {
		rows = []byte{}
	}
	return &Spec{Version: v, Partitioner: p, Statistics: st, MinIndexInterval: bigindex.DefaultMinIndexInterval, ParentRows: rows}, nil
}

// ReceivedLayout rebuilds a child's Layout from what a sender announced: its segments in order
// (compressed: FirstChunk, LastChunk; uncompressed: the parent offset PLo; both: DstOff and a
// length in SrcEnd-SrcOff), the chunk length (compression or CRC grid) and the child's
// uncompressed length. Everything comes from a peer, so every relation NewLayout guarantees is
// checked.
func ReceivedLayout(compressed bool, chunkLength, dataLength int64, segs []Segment) (*Layout, error) {
	if len(segs) == 0 || chunkLength <= 0 {
		return nil, fmt.Errorf("a child needs at least one segment and a chunk length (got %d, %d)", len(segs), chunkLength)
	}
	l := &Layout{Compressed: compressed, ChunkLength: chunkLength, DataLength: dataLength}
	base, dst := 0, int64(0)
	for i, s := range segs {
		if s.Length() <= 0 || s.DstOff != dst {
			return nil, fmt.Errorf("segment %d: %d bytes at offset %d, want a non-empty segment at %d", i, s.Length(), s.DstOff, dst)
		}
		if compressed {
			if s.FirstChunk < 0 || s.LastChunk < s.FirstChunk || s.LastChunk > 1<<40 {
				return nil, fmt.Errorf("segment %d: chunks %d..%d", i, s.FirstChunk, s.LastChunk)
			}
			if i > 0 && s.FirstChunk <= segs[i-1].LastChunk+1 {
				return nil, fmt.Errorf("segment %d: chunk %d does not follow the previous segment's %d with a gap", i, s.FirstChunk, segs[i-1].LastChunk)
			}
			s.PLo, s.PHi = int64(s.FirstChunk)*chunkLength, int64(s.LastChunk+1)*chunkLength
			s.Shift = int64(s.FirstChunk-base) * chunkLength
			base += s.Chunks()
		} else {
			if s.PLo < 0 || s.PLo > 1<<62 || (i > 0 && s.PLo < l.Segments[i-1].PHi) {
				return nil, fmt.Errorf("segment %d at parent offset %d: negative or before the previous segment's end", i, s.PLo)
			}
			s.PHi, s.Shift = s.PLo+s.Length(), s.PLo-s.DstOff
		}
		dst += s.Length()
		l.Segments = append(l.Segments, s)
	}
	l.FileLength = dst
	last := &l.Segments[len(l.Segments)-1]
	end := last.Shift + dataLength
	if end <= last.PLo || end > last.PHi {
		return nil, fmt.Errorf("data length %d does not end in the last segment (parent %d..%d)", dataLength, last.PLo, last.PHi)
	}
	last.PHi = end
	return l, nil
}
