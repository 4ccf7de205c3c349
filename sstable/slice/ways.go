package slice

import (
	"context"
	"fmt"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/token"
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
// ordinal. The stride starts from the partition count Statistics.db records (a hint only). Memory stays bounded by the larger of maxCutSamples and 2n tokens whatever the
// partition count (an index pass for the count
// and another for the cuts cost twice the time on a many-partition parent).
func EqualRanges(parent *sstable.Table, n int) (token.RangeSet, error) {
	rs, _, err := equalCuts(parent, n)
	return rs, err
}

// SplitEqual is Split into the ranges EqualRanges(parent, n) cuts, with the children's plans
// taken from the same index pass: each sample also keeps the position and token of the
// partition after it, which is where a child cut there ends and the next begins, so no
// planning pass is needed. When the plans cannot be derived exactly (two partitions share the
// token a cut falls on) it plans with a pass of its own, as Split does.
func SplitEqual(ctx context.Context, parent *sstable.Table, n int, dir string, opts Options) (*Result, error) {
	ranges, plans, err := equalCuts(parent, n)
	if err != nil {
		return nil, err
	}
	return execute(ctx, parent, ranges, plans, dir, opts, false)
}

// cutSample is the partition at ordinal, and the one after it (where a child cut at this
// sample ends and the next child begins).
type cutSample struct {
	ordinal int64
	token   token.Token
	hasNext bool
	nextPos int64
	nextTok token.Token
}

// equalCuts is EqualRanges and the plan of one child per range, or nil plans when they cannot
// be derived from the samples exactly.
func equalCuts(parent *sstable.Table, n int) (token.RangeSet, []ChildPlan, error) {
	if n < 1 {
		return nil, nil, fmt.Errorf("--ways %d: want at least 1", n)
	}
	var (
		samples []cutSample
		stride  int64 = 1
		count   int64
		// At least two samples per range, so that every cut interval holds one.
		limit = max(maxCutSamples, 2*n)
		// The first partition (where the first child begins) and the last key (the last
		// child's last token, taken once the scan is over).
		firstPos int64
		firstTok token.Token
		lastKey  []byte
	)
	// The samples' slice is sized once from the partition count Statistics.db records (a
	// hint: a wrong one costs only growth), so that appending 64K samples neither copies them
	// nor leaves garbage for the collector.
	// The stride starts where the doubling would end for that count, so the first partitions
	// are not all sampled (and hashed) only to be dropped.
	if st := parent.Statistics; st != nil && st.Stats != nil {
		if hint := st.Stats.EstimatedPartitionSize.Total(); hint > 0 {
			for hint/stride > int64(limit) {
				stride *= 2
			}
			samples = make([]cutSample, 0, min(int64(limit), hint/stride+1))
		}
	}
	tokenOf := func(p *sstable.Partition) token.Token {
		t := p.Token
		if t.Kind == 0 { // ScanKeys left it to us
			t = parent.Partitioner.Token(p.Key)
		}
		return cloneToken(t)
	}
	err := parent.ScanKeys(func(p *sstable.Partition) error {
		count++
		var tok token.Token // taken at most once per partition, and only when needed
		if p.Ordinal == 0 {
			tok = tokenOf(p)
			firstPos, firstTok = p.Position, tok
		}
		if k := len(samples) - 1; k >= 0 && !samples[k].hasNext && samples[k].ordinal == p.Ordinal-1 {
			if tok.Kind == 0 {
				tok = tokenOf(p)
			}
			s := &samples[k]
			s.hasNext, s.nextPos, s.nextTok = true, p.Position, tok
		}
		lastKey = append(lastKey[:0], p.Key...)
		if p.Ordinal&(stride-1) != 0 { // stride is a power of two
			return nil
		}
		if len(samples) >= limit {
			// Keep the samples at multiples of the doubled stride: every other one.
			k := 0
			for _, s := range samples {
				if s.ordinal%(2*stride) == 0 {
					samples[k] = s
					k++
				}
			}
			samples, stride = samples[:k], 2*stride
			if p.Ordinal&(stride-1) != 0 {
				return nil
			}
		}
		if tok.Kind == 0 {
			tok = tokenOf(p)
		}
		samples = append(samples, cutSample{ordinal: p.Ordinal, token: tok})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	lastTok := cloneToken(parent.Partitioner.Token(lastKey))
	// More ranges than partitions cannot hold more partitions: bound n by the count, so
	// that a huge n neither allocates nor loops (and k*count cannot overflow).
	n = int(min(int64(n), max(count, 1)))
	min := parent.Partitioner.MinToken()
	cuts := make([]cutSample, 0, n-1)
	i := 0
	for k := 1; k < n; k++ {
		c := int64(k)*count/int64(n) - 1
		if c < 0 {
			continue
		}
		for i+1 < len(samples) && samples[i+1].ordinal <= c {
			i++
		}
		if s := samples[i]; len(cuts) == 0 || s.token.Compare(cuts[len(cuts)-1].token) > 0 {
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
	return out, cutPlans(out, cuts, count, firstPos, firstTok, lastTok, parent.DataLength()), nil
}

// cutPlans is the child of each range that cuts delimit: child k holds the partitions after
// cut k-1 up to cut k (the last child those after the last cut), which is what a planning
// pass finds as long as the index is in token order (the rebuild pass checks that) and no
// partition after a cut shares its token; otherwise nil.
func cutPlans(ranges token.RangeSet, cuts []cutSample, count, firstPos int64, firstTok, lastTok token.Token, dataLength int64) []ChildPlan {
	if firstTok.Compare(ranges[0].Left) <= 0 {
		return nil // a partition at the minimum token is in no range
	}
	plans := make([]ChildPlan, 0, len(ranges))
	c := ChildPlan{FirstOrdinal: 0, Lo: firstPos, FirstTok: firstTok}
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
			c = ChildPlan{FirstOrdinal: s.ordinal + 1, Lo: s.nextPos, FirstTok: s.nextTok}
		}
	}
	return plans
}
