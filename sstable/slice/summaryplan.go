package slice

import (
	"bytes"
	"os"
	"sort"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// summaryPlan is planMeasured for a sender that ships Index.db spans verbatim (IndexBig):
// without reading the index between the ranges' edges. A full-sampling Summary.db holds the
// key and Index.db offset of every MinIndexInterval-th partition, so the first partition above
// a token is found by a binary search of the samples and a scan of at most two sampling
// intervals from the last sample at or below it, and its ordinal is the sample's times the
// interval plus the entries scanned. Each piece of the ranges is then the entries from the
// first above its left end to the first above its right end: its partition count, data and
// Index.db spans, first key and last token come from the two scans. The parent's partition
// count comes from a scan after the last sample, and must be the count Statistics.db records.
//
// The plan is the one planMeasured makes from every entry, but for IndexBytes, which it leaves
// to the caller (the spans' lengths). It rests on the summary: the edge scans check that each
// sample they start from holds its key at its offset, and the receiver checks every key the
// spans carry for order and for membership of the ranges, and their count against the plan's,
// so a summary that misleads fails the transfer instead of losing or adding partitions.
//
// ok is false, and the caller plans from the whole index, when the summary cannot serve: a
// BTI parent, a missing, unparsable or downsampled summary, a sample whose key is not at its
// offset or whose neighbours are out of order, a scan that fails, or more edges than reading
// the whole index would cost (many small ranges of a small index).
func summaryPlan(parent *sstable.Table, ps *Pieces, ranges token.RangeSet) (plans []ChildPlan, partitions int64, ok bool) {
	if parent.Version().Format != version.Big || ps.Len() == 0 {
		return nil, 0, false
	}
	sf, sumSize, err := openSized(parent.Path(descriptor.Summary))
	if err != nil {
		return nil, 0, false
	}
	defer sf.Close()
	sum, err := bigindex.OpenSamples(sf, sumSize, sf.Name())
	if err != nil {
		return nil, 0, false
	}
	iv := int64(sum.MinIndexInterval)
	n := sum.Len()
	// Each piece costs two scans of up to two intervals; past a quarter of the index, one
	// pass over all of it is the cheaper plan.
	if sum.SamplingLevel != bigindex.BaseSamplingLevel || n == 0 || 4*4*ps.Len() > n {
		return nil, 0, false
	}
	f, size, err := openSized(parent.Path(descriptor.Index))
	if err != nil {
		return nil, 0, false
	}
	defer f.Close()
	e := &edgeFinder{parent: parent, sum: sum, f: f, size: size, iv: iv}
	if e.total, ok = e.count(); !ok {
		return nil, 0, false
	}
	// A sample missing from (or added to) a summary that claims full sampling moves every
	// ordinal after it; the count Statistics.db records catches it here.
	if st := parent.Statistics; st != nil && st.Stats != nil {
		if recorded := st.Stats.EstimatedPartitionSize.Total(); recorded > 0 && recorded != e.total {
			return nil, 0, false
		}
	}
	partitions = e.total
	for k := range ps.Len() {
		r, ri := ps.Range(k)
		lo, ok := e.above(r.Left)
		if !ok {
			return nil, 0, false
		}
		hi := edge{ordinal: partitions, indexOff: e.size, pos: parent.DataLength(), prevTok: e.lastTok}
		if !ps.pieces[k].toEnd {
			if hi, ok = e.above(r.Right); !ok {
				return nil, 0, false
			}
		}
		if hi.ordinal <= lo.ordinal {
			continue // no partition in the piece
		}
		plans = append(plans, ChildPlan{Piece: k, Range: ranges[ri], RangeIndex: ri, FirstOrdinal: lo.ordinal,
			Partitions: hi.ordinal - lo.ordinal, Lo: lo.pos, Hi: hi.pos, First: lo.key, FirstTok: lo.tok, LastTok: hi.prevTok,
			Runs: []RunPlan{{FirstOrdinal: lo.ordinal, Partitions: hi.ordinal - lo.ordinal, Lo: lo.pos, Hi: hi.pos,
				IndexLo: lo.indexOff, IndexHi: hi.indexOff}}})
	}
	return plans, partitions, true
}

// PlanFromSummary is the plan Partials makes with IndexBig when the summary serves
// (summaryPlan), one child per piece of ranges, and whether it served: the same plan PlanTable
// makes from every entry, but for IndexBytes, with each run's Index.db span.
func PlanFromSummary(parent *sstable.Table, ranges token.RangeSet) ([]ChildPlan, int64, bool, error) {
	ps, err := NewPieces(parent.Partitioner, ranges)
	if err != nil {
		return nil, 0, false, err
	}
	plans, n, ok := summaryPlan(parent, ps, ranges)
	return plans, n, ok, nil
}

// openSized opens path and says how long it is.
func openSized(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// edge is the first partition above a token: its ordinal, Index.db offset, data position, key
// and token, and the token of the partition before it. Past the last partition, ordinal is the
// partition count, indexOff the index's size and pos the data length.
type edge struct {
	ordinal  int64
	indexOff int64
	pos      int64
	key      []byte
	tok      token.Token
	prevTok  token.Token
}

// edgeFinder finds edges from a full-sampling summary, read sample by sample as the binary
// search asks: the plan holds nothing per sample, whatever the partition count.
type edgeFinder struct {
	parent  *sstable.Table
	sum     *bigindex.Samples
	f       *os.File
	size    int64
	iv      int64
	total   int64       // the parent's partition count (count)
	lastTok token.Token // the last partition's token (count)
	err     error       // the first sample that could not be read
}

// sample is sample j's key (valid until the next call) and Index.db offset; a sample that
// cannot be read is kept in err, and the plan fails.
func (e *edgeFinder) sample(j int) ([]byte, int64) {
	key, at, err := e.sum.Sample(j)
	if err != nil && e.err == nil {
		e.err = err
	}
	return key, at
}

// scan calls fn with the entries from sample j up to sample j+2 (or the index's end) while fn
// returns true, after checking that the first is sample j's key; ordinals count from 0 at
// sample j.
func (e *edgeFinder) scan(j int, fn func(ordinal int64, en *bigindex.Entry, t token.Token) bool) bool {
	end := e.size
	if j+2 < e.sum.Len() {
		_, end = e.sample(j + 2)
	}
	key, start := e.sample(j)
	if e.err != nil || start < 0 || end > e.size || start >= end {
		return false
	}
	key = bytes.Clone(key)
	sc := bigindex.NewScannerAt(e.f, start, end, int(min(end-start, edgeBuffer)))
	for ord := int64(0); sc.Next(); ord++ {
		en := sc.Entry()
		if ord == 0 && !bytes.Equal(en.Key, key) {
			return false
		}
		if !fn(ord, en, e.parent.Partitioner.Token(en.Key)) {
			return true
		}
	}
	return sc.Err() == nil
}

// edgeBuffer bounds an edge scan's read buffer: two sampling intervals of small entries.
const edgeBuffer = 64 << 10

// count is the parent's partition count: the samples before the last, each an interval, and
// the entries from the last sample to the index's end, which must number at most an interval.
func (e *edgeFinder) count() (int64, bool) {
	last := e.sum.Len() - 1
	var tail int64
	if !e.scan(last, func(_ int64, _ *bigindex.Entry, t token.Token) bool { tail++; e.lastTok = cloneToken(t); return true }) || tail == 0 || tail > e.iv {
		return 0, false
	}
	return int64(last)*e.iv + tail, true
}

// above finds the first partition whose token is above t: a binary search of the samples for
// the last at or below t, then a scan from it, which must meet one above t before the sample
// two after it (the next sample is above t). With no sample at or below t it is the first
// partition.
func (e *edgeFinder) above(t token.Token) (edge, bool) {
	n := e.sum.Len()
	j := sort.Search(n, func(j int) bool {
		key, _ := e.sample(j)
		return e.err == nil && e.parent.Partitioner.Token(key).Compare(t) > 0
	}) - 1
	if e.err != nil {
		return edge{}, false
	}
	from := max(j, 0)
	var (
		found, disordered bool
		ed                edge
		prev              token.Token
		seen              bool
	)
	if !e.scan(from, func(ord int64, en *bigindex.Entry, tok token.Token) bool {
		if seen && prev.Compare(tok) >= 0 {
			disordered = true
			return false
		}
		if tok.Compare(t) > 0 {
			found = true
			ed = edge{ordinal: int64(from)*e.iv + ord, indexOff: en.Offset, pos: en.Position,
				key: bytes.Clone(en.Key), tok: cloneToken(tok), prevTok: prev}
			return false
		}
		prev, seen = cloneToken(tok), true
		return true
	}) || disordered {
		return edge{}, false
	}
	if found {
		if j < 0 && ed.ordinal != 0 {
			return edge{}, false // below the first sample, but not the first entry
		}
		return ed, true
	}
	// Nothing above t after sample j: t is at or beyond the last partition, whose sample must
	// be j or the one before it.
	if j < n-2 {
		return edge{}, false
	}
	return edge{ordinal: e.total, indexOff: e.size, pos: e.parent.DataLength(), prevTok: e.lastTok}, true
}
