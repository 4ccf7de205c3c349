package slice

import (
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
// ordinal. Memory stays bounded by the larger of maxCutSamples and 2n tokens whatever the
// partition count (an index pass for the count
// and another for the cuts cost twice the time on a many-partition parent).
func EqualRanges(parent *sstable.Table, n int) (token.RangeSet, error) {
	if n < 1 {
		return nil, fmt.Errorf("--ways %d: want at least 1", n)
	}
	var (
		samples []cutSample
		stride  int64 = 1
		count   int64
		// At least two samples per range, so that every cut interval holds one.
		limit = max(maxCutSamples, 2*n)
	)
	err := parent.ScanKeys(func(p *sstable.Partition) error {
		count++
		if p.Ordinal%stride != 0 {
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
			if p.Ordinal%stride != 0 {
				return nil
			}
		}
		t := p.Token
		if t.Kind == 0 { // ScanKeys left it to us
			t = parent.Partitioner.Token(p.Key)
		}
		if t.Bytes != nil {
			t.Bytes = append([]byte(nil), t.Bytes...)
		}
		samples = append(samples, cutSample{p.Ordinal, t})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// More ranges than partitions cannot hold more partitions: bound n by the count, so
	// that a huge n neither allocates nor loops (and k*count cannot overflow).
	n = int(min(int64(n), max(count, 1)))
	min := parent.Partitioner.MinToken()
	bounds := make([]token.Token, 0, n-1)
	i := 0
	for k := 1; k < n; k++ {
		c := int64(k)*count/int64(n) - 1
		if c < 0 {
			continue
		}
		for i+1 < len(samples) && samples[i+1].ordinal <= c {
			i++
		}
		if t := samples[i].token; len(bounds) == 0 || t.Compare(bounds[len(bounds)-1]) > 0 {
			bounds = append(bounds, t)
		}
	}
	out := make(token.RangeSet, 0, len(bounds)+1)
	left := min
	for _, b := range bounds {
		out = append(out, token.Range{Left: left, Right: b})
		left = b
	}
	return append(out, token.Range{Left: left, Right: min}), nil
}

// cutSample is the token of the partition at ordinal.
type cutSample struct {
	ordinal int64
	token   token.Token
}
