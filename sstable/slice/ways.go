package slice

import (
	"fmt"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/token"
)

// EqualRanges cuts parent's token span into n ranges holding about equal partition counts:
// (min, t1], (t1, t2], …, (t(n-1), min], where t(k) is the token of the partition at ordinal
// k*count/n - 1. Partitions sharing a token cannot be separated, so fewer ranges may hold data.
func EqualRanges(parent *sstable.Table, n int) (token.RangeSet, error) {
	if n < 1 {
		return nil, fmt.Errorf("--ways %d: want at least 1", n)
	}
	var count int64
	if err := parent.ScanPartitions(func(*sstable.Partition) error { count++; return nil }); err != nil {
		return nil, err
	}
	// More ranges than partitions cannot hold more partitions: bound n by the count, so
	// that a huge n neither allocates nor loops (and k*count cannot overflow).
	n = int(min(int64(n), max(count, 1)))
	min := parent.Partitioner.MinToken()
	cuts := make([]int64, 0, n-1)
	for k := 1; k < n; k++ {
		if c := int64(k)*count/int64(n) - 1; c >= 0 && (len(cuts) == 0 || c > cuts[len(cuts)-1]) {
			cuts = append(cuts, c)
		}
	}
	bounds := make([]token.Token, 0, len(cuts))
	i := 0
	err := parent.ScanPartitions(func(p *sstable.Partition) error {
		if i < len(cuts) && p.Ordinal == cuts[i] {
			t := p.Token
			if t.Bytes != nil {
				t.Bytes = append([]byte(nil), t.Bytes...)
			}
			if len(bounds) == 0 || t.Compare(bounds[len(bounds)-1]) > 0 {
				bounds = append(bounds, t)
			}
			i++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(token.RangeSet, 0, len(bounds)+1)
	left := min
	for _, b := range bounds {
		out = append(out, token.Range{Left: left, Right: b})
		left = b
	}
	return append(out, token.Range{Left: left, Right: min}), nil
}
