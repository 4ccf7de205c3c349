package slice

import (
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/version"
)

// childFacts is what the index-only pass knows about a child.
type childFacts struct {
	partitions       int64
	sizes            stats.EstimatedHistogram // exact partition sizes
	first, last      []byte
	cardinality      []byte // HyperLogLog of the child's keys
	dataLength       int64  // uncompressed
	dataFileLength   int64
	compressed       bool
	parentPartitions int64
}

// childStatistics applies the child rules of FORMAT.md §2.9 to a copy of the parent's
// Statistics.db: what the index pass measures is recomputed exactly (partition sizes, first
// and last key, cardinality, compression ratio); what needs rows is apportioned by partition
// count (cells per partition, total rows and columns) so that totals stay consistent; the
// serialization header and every bound (timestamps, TTLs, deletion times, clustering) is
// copied, since the parent's bounds still hold for a subset; token space coverage becomes
// unknown (NaN).
func childStatistics(parent *stats.Statistics, v version.Version, f childFacts) (*stats.Statistics, error) {
	// A deep copy through the codec: the header must stay byte-identical anyway.
	child, err := stats.Parse(parent.Append(nil, v), v)
	if err != nil {
		return nil, err
	}
	if child.Compaction != nil {
		child.Compaction.Cardinality = f.cardinality
	}
	s := child.Stats
	if s == nil {
		return child, nil
	}
	s.EstimatedPartitionSize = f.sizes
	s.EstimatedCellPerPartitionCount.Counts = apportion(s.EstimatedCellPerPartitionCount.Counts, f.partitions)
	s.TotalRows = scale(s.TotalRows, f.partitions, f.parentPartitions)
	s.TotalColumnsSet = scale(s.TotalColumnsSet, f.partitions, f.parentPartitions)
	if f.compressed && f.dataLength > 0 {
		s.CompressionRatio = float64(f.dataFileLength) / float64(f.dataLength)
	}
	if v.HasKeyRange() {
		s.FirstKey = append([]byte(nil), f.first...)
		s.LastKey = append([]byte(nil), f.last...)
	}
	if v.HasTokenSpaceCoverage() {
		s.TokenSpaceCoverage = stats.NaN
	}
	return child, nil
}

// scale is v * num / den, rounded, without overflow for realistic counts.
func scale(v, num, den int64) int64 {
	if den <= 0 {
		return v
	}
	return int64((float64(v)*float64(num))/float64(den) + 0.5)
}

// apportion scales histogram counts to sum to total, by largest remainder, so a child's
// histogram keeps the parent's shape and counts exactly its own partitions.
func apportion(counts []int64, total int64) []int64 {
	var sum int64
	for _, c := range counts {
		sum += c
	}
	out := make([]int64, len(counts))
	if sum == 0 || total == 0 {
		if total > 0 && len(out) > 0 {
			out[0] = total
		}
		return out
	}
	type rem struct {
		i int
		r float64
	}
	var given int64
	rems := make([]rem, 0, len(counts))
	for i, c := range counts {
		exact := float64(c) * float64(total) / float64(sum)
		out[i] = int64(exact)
		given += out[i]
		if c > 0 {
			rems = append(rems, rem{i, exact - float64(out[i])})
		}
	}
	for given < total && len(rems) > 0 {
		best := 0
		for k := range rems {
			if rems[k].r > rems[best].r {
				best = k
			}
		}
		out[rems[best].i]++
		given++
		rems = append(rems[:best], rems[best+1:]...)
	}
	return out
}
