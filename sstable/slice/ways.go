package slice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// maxCutSamples bounds the tokens EqualRanges keeps while it scans: the cuts are exact for
// up to this many partitions and within count/maxCutSamples partitions of exact past it.
var maxCutSamples = 1 << 16 // a variable for the tests of the sampled cuts

// EqualRanges cuts parent's token span into n ranges holding about equal partition counts:
// (min, t1], (t1, t2], …, (t(n-1), min], where t(k) is the token of the partition at ordinal
// k*count/n - 1. Partitions sharing a token cannot be separated, so fewer ranges may hold data.
//
// It reads the index once: the partition count is known only at the end, so it keeps the
// token of every stride-th partition, doubling the stride (and dropping every other sample)
// whenever maxCutSamples are held, and cuts at the last sample at or before each cut's
// ordinal. With the partition count Statistics.db records (checked against the scan's), it
// keeps only the partitions at the cut ordinals, and the cuts are exact. Memory stays bounded by the larger of maxCutSamples and 2n tokens whatever the
// partition count (an index pass for the count
// and another for the cuts cost twice the time on a many-partition parent).
func EqualRanges(parent *sstable.Table, n int) (token.RangeSet, error) {
	rs, _, _, err := equalCuts(parent, n, false)
	return rs, err
}

// SplitEqual is Split into the ranges EqualRanges(parent, n) cuts, with the children's plans
// taken from the same index pass: each sample also keeps the position and token of the
// partition after it, which is where a child cut there ends and the next begins, so no
// planning pass is needed. When the plans cannot be derived exactly (two partitions share the
// token a cut falls on) it plans with a pass of its own, as Split does.
//
// With a full-sampling Summary.db it does not read the whole index to cut (summaryCuts):
// the split's own index pass then checks the plans, and if the index disagrees with them
// nothing has been installed and the split starts over from a pass over the whole index.
func SplitEqual(ctx context.Context, parent *sstable.Table, n int, dir string, opts Options) (*Result, error) {
	// Few enough children to be installed together at the end of the split's index pass,
	// after it has checked the plans, and a mode that goes through that pass.
	fast := n <= installBatch && opts.Mode != ModeRewrite && Refusal(parent) == ""
	ranges, plans, fromSummary, err := equalCuts(parent, n, fast)
	if err != nil {
		return nil, err
	}
	res, err := execute(ctx, parent, ranges, plans, dir, opts, false)
	if fromSummary && errors.Is(err, errStalePlan) {
		if ranges, plans, _, err = equalCuts(parent, n, false); err != nil {
			return nil, err
		}
		res, err = execute(ctx, parent, ranges, plans, dir, opts, false)
	}
	return res, err
}

// cutSample is the partition at ordinal, and the one after it (where a child cut at this
// sample ends and the next child begins).
type cutSample struct {
	ordinal int64
	token   token.Token
	hasNext bool
	nextPos int64
	nextTok token.Token
	nextKey []byte
}

// equalCuts is EqualRanges and the plan of one child per range, or nil plans when they cannot
// be derived from the samples exactly.
//
// With the partition count Statistics.db records, the cut ordinals are known before the scan:
// it keeps exactly those partitions (n-1 keys hashed instead of up to maxCutSamples), and the
// cuts are exact whatever the count. If the scan counts otherwise (a Statistics.db that
// disagrees with its index), a second pass samples by stride as without a count. With fast,
// it first tries summaryCuts, and says whether the plans came from there (fromSummary): they
// must then be checked against the index before anything is installed.
func equalCuts(parent *sstable.Table, n int, fast bool) (token.RangeSet, []ChildPlan, bool, error) {
	if n < 1 {
		return nil, nil, false, fmt.Errorf("--ways %d: want at least 1", n)
	}
	sc, fromSummary, err := cutPass(parent, n, fast)
	if err != nil {
		return nil, nil, false, err
	}
	ranges, plans, err := sc.cut(parent, n)
	return ranges, plans, fromSummary, err
}

// cutPass gathers the partitions equalCuts cuts at, and says whether they came from the
// summary.
func cutPass(parent *sstable.Table, n int, fast bool) (*cutScan, bool, error) {
	if st := parent.Statistics; st != nil && st.Stats != nil {
		if hint := st.Stats.EstimatedPartitionSize.Total(); hint > 0 {
			m := min(int64(n), hint)
			targets := make([]int64, 0, m-1)
			for k := int64(1); k < m; k++ {
				if c := k*hint/m - 1; c >= 0 && (len(targets) == 0 || c > targets[len(targets)-1]) {
					targets = append(targets, c)
				}
			}
			if fast {
				if sc, ok := summaryCuts(parent, targets, hint); ok {
					return sc, true, nil
				}
			}
			j := 0
			sc, err := scanCuts(parent, len(targets), func(_ *cutScan, o int64) bool {
				if j < len(targets) && o == targets[j] {
					j++
					return true
				}
				return false
			})
			if err != nil {
				return nil, false, err
			}
			if sc.count == hint {
				return sc, false, nil
			}
		}
	}
	// At least two samples per range, so that every cut interval holds one.
	limit := max(maxCutSamples, 2*n)
	stride := int64(1)
	sc, err := scanCuts(parent, 0, func(sc *cutScan, o int64) bool {
		if o&(stride-1) != 0 { // stride is a power of two
			return false
		}
		if len(sc.samples) >= limit {
			// Keep the samples at multiples of the doubled stride: every other one.
			k := 0
			for _, s := range sc.samples {
				if s.ordinal%(2*stride) == 0 {
					sc.samples[k] = s
					k++
				}
			}
			sc.samples, stride = sc.samples[:k], 2*stride
			return o&(stride-1) == 0
		}
		return true
	})
	return sc, false, err
}

// cutScan is what a cut pass gathers: the samples it kept, the partition count, where the
// first partition starts and the last key (the last child's last token, taken once the scan is
// over).
type cutScan struct {
	samples  []cutSample
	count    int64
	firstPos int64
	firstTok token.Token
	firstKey []byte
	lastKey  []byte
}

// scanCuts reads the index once, keeping the partitions keep asks for (in ordinal order) with
// the position and token of the partition after each. Only kept partitions and those after
// them are hashed.
func scanCuts(parent *sstable.Table, capacity int, keep func(sc *cutScan, ordinal int64) bool) (*cutScan, error) {
	sc := &cutScan{samples: make([]cutSample, 0, capacity)}
	tokenOf := func(p *sstable.Partition) token.Token {
		t := p.Token
		if t.Kind == 0 { // ScanKeys left it to us
			t = parent.Partitioner.Token(p.Key)
		}
		return cloneToken(t)
	}
	err := parent.ScanKeys(func(p *sstable.Partition) error {
		sc.count++
		var tok token.Token // taken at most once per partition, and only when needed
		if p.Ordinal == 0 {
			tok = tokenOf(p)
			sc.firstPos, sc.firstTok, sc.firstKey = p.Position, tok, append([]byte(nil), p.Key...)
		}
		if k := len(sc.samples) - 1; k >= 0 && !sc.samples[k].hasNext && sc.samples[k].ordinal == p.Ordinal-1 {
			if tok.Kind == 0 {
				tok = tokenOf(p)
			}
			s := &sc.samples[k]
			s.hasNext, s.nextPos, s.nextTok, s.nextKey = true, p.Position, tok, append([]byte(nil), p.Key...)
		}
		sc.lastKey = append(sc.lastKey[:0], p.Key...)
		if !keep(sc, p.Ordinal) {
			return nil
		}
		if tok.Kind == 0 {
			tok = tokenOf(p)
		}
		sc.samples = append(sc.samples, cutSample{ordinal: p.Ordinal, token: tok})
		return nil
	})
	return sc, err
}

// errEnough ends a partial index scan.
var errEnough = errors.New("enough")

// readSummary reads and parses parent's Summary.db, which the split's cuts and the
// streaming sender's parallel plan both take their Index.db offsets from.
func readSummary(parent *sstable.Table) (*bigindex.Summary, error) {
	raw, err := os.ReadFile(parent.Path(descriptor.Summary))
	if err != nil {
		return nil, err
	}
	return bigindex.ParseSummary(raw)
}

// summaryCuts is the cut pass of equalCuts without reading the whole index: a full-sampling
// Summary.db holds the key and Index.db offset of every MinIndexInterval-th partition, so with
// the partition count Statistics.db records, the partitions at the cut ordinals (and the ones
// after them) are found by scanning from the sample before each, at most one sampling
// interval, and scanning from the last sample to the end of the index confirms the count. It
// reads a few KiB of a 65,536-partition index instead of all of it. ok is false, and the
// caller reads the whole index, when the summary cannot serve: a BTI parent, a missing,
// unparsable or downsampled summary, a sample count that does not fit the count, a sample
// whose key is not at its offset, an index that ends before the count or after it, any error.
//
// The ordinals rest on the summary's sampling: the split's index pass checks that every
// child's first partition is where the plan says and that the index ends where it says
// (errStalePlan), before anything is installed.
func summaryCuts(parent *sstable.Table, targets []int64, count int64) (*cutScan, bool) {
	if parent.Version().Format != version.Big {
		return nil, false
	}
	sum, err := readSummary(parent)
	if err != nil {
		return nil, false
	}
	iv := int64(sum.MinIndexInterval)
	if sum.SamplingLevel != bigindex.BaseSamplingLevel || iv <= 0 || int64(len(sum.Entries)) != (count+iv-1)/iv {
		return nil, false
	}
	st, err := os.Stat(parent.Path(descriptor.Index))
	if err != nil {
		return nil, false
	}
	tokenOf := func(p *sstable.Partition) token.Token { return cloneToken(p.Token) }
	// visit scans from sample j (ordinal j*iv), which must hold the sample's key, up to the
	// sample two after it (what a cut and the partition after it need), while fn asks for more;
	// fn gets each partition with its ordinal in the whole index.
	visit := func(j int, fn func(p *sstable.Partition, ordinal int64) bool) bool {
		e := sum.Entries[j]
		end := st.Size()
		if j+2 < len(sum.Entries) {
			end = sum.Entries[j+2].IndexPosition
		}
		seen := false
		err := parent.ScanPartitionsIn(e.IndexPosition, end, func(p *sstable.Partition) error {
			if !seen {
				seen = true
				if !bytes.Equal(p.Key, e.Key) {
					return errStalePlan
				}
			}
			if !fn(p, int64(j)*iv+p.Ordinal) {
				return errEnough
			}
			return nil
		})
		return seen && (err == nil || errors.Is(err, errEnough))
	}
	sc := &cutScan{count: count, samples: make([]cutSample, 0, len(targets))}
	if !visit(0, func(p *sstable.Partition, _ int64) bool {
		sc.firstPos, sc.firstTok, sc.firstKey = p.Position, tokenOf(p), append([]byte(nil), p.Key...)
		return false
	}) {
		return nil, false
	}
	for _, c := range targets {
		found := false
		if !visit(int(c/iv), func(p *sstable.Partition, ordinal int64) bool {
			switch ordinal {
			case c:
				sc.samples = append(sc.samples, cutSample{ordinal: c, token: tokenOf(p)})
				found = true
				return c+1 < count
			case c + 1:
				s := &sc.samples[len(sc.samples)-1]
				s.hasNext, s.nextPos, s.nextTok, s.nextKey = true, p.Position, tokenOf(p), append([]byte(nil), p.Key...)
				return false
			}
			return true
		}) || !found {
			return nil, false
		}
	}
	var scanned int64
	if !visit(len(sum.Entries)-1, func(p *sstable.Partition, ordinal int64) bool {
		sc.lastKey = append(sc.lastKey[:0], p.Key...)
		scanned = ordinal + 1
		return true
	}) || scanned != count {
		return nil, false
	}
	return sc, true
}

// cut makes the n ranges from the samples: range k ends at the last sample at or before
// ordinal k*count/n - 1.
func (sc *cutScan) cut(parent *sstable.Table, n int) (token.RangeSet, []ChildPlan, error) {
	count, samples := sc.count, sc.samples
	// More ranges than partitions cannot hold more partitions: bound n by the count, so
	// that a huge n neither allocates nor loops (and k*count cannot overflow).
	n = int(min(int64(n), max(count, 1)))
	min := parent.Partitioner.MinToken()
	cuts := make([]cutSample, 0, n-1)
	i := 0
	for k := 1; k < n && len(samples) > 0; k++ {
		c := int64(k)*count/int64(n) - 1
		if c < 0 {
			continue
		}
		for i+1 < len(samples) && samples[i+1].ordinal <= c {
			i++
		}
		if s := samples[i]; s.ordinal <= c && (len(cuts) == 0 || s.token.Compare(cuts[len(cuts)-1].token) > 0) {
			cuts = append(cuts, s)
		}
	}
	out := make(token.RangeSet, 0, len(cuts)+1)
	left := min
	for _, c := range cuts {
		out = append(out, token.Range{Left: left, Right: c.token})
		left = c.token
	}
	out = append(out, token.Range{Left: left, Right: min})
	if count == 0 {
		return out, nil, nil
	}
	lastTok := cloneToken(parent.Partitioner.Token(sc.lastKey))
	return out, cutPlans(out, cuts, count, sc, lastTok, parent.DataLength()), nil
}

// cutPlans is the child of each range that cuts delimit: child k holds the partitions after
// cut k-1 up to cut k (the last child those after the last cut), which is what a planning
// pass finds as long as the index is in token order (the rebuild pass checks that) and no
// partition after a cut shares its token; otherwise nil.
func cutPlans(ranges token.RangeSet, cuts []cutSample, count int64, sc *cutScan, lastTok token.Token, dataLength int64) []ChildPlan {
	if sc.firstTok.Compare(ranges[0].Left) <= 0 {
		return nil // a partition at the minimum token is in no range
	}
	plans := make([]ChildPlan, 0, len(ranges))
	c := ChildPlan{FirstOrdinal: 0, Lo: sc.firstPos, First: sc.firstKey, FirstTok: sc.firstTok}
	for k, r := range ranges {
		last, hi, lastT := count-1, dataLength, lastTok
		if k < len(cuts) {
			s := cuts[k]
			if !s.hasNext || s.nextTok.Compare(s.token) <= 0 {
				return nil
			}
			last, hi, lastT = s.ordinal, s.nextPos, s.token
		}
		c.Piece, c.Range, c.RangeIndex = k, r, k
		c.Partitions, c.Hi, c.LastTok = last-c.FirstOrdinal+1, hi, lastT
		if c.Partitions <= 0 {
			return nil
		}
		c.Runs = []RunPlan{{FirstOrdinal: c.FirstOrdinal, Partitions: c.Partitions, Lo: c.Lo, Hi: c.Hi}}
		plans = append(plans, c)
		if k < len(cuts) {
			s := cuts[k]
			c = ChildPlan{FirstOrdinal: s.ordinal + 1, Lo: s.nextPos, First: s.nextKey, FirstTok: s.nextTok}
		}
	}
	return plans
}
