package stats

import (
	"math"
	"sort"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// EstimatedHistogram is Cassandra's utils.EstimatedHistogram: len(Counts) buckets, where
// bucket i < len(Offsets) counts values v with Offsets[i-1] < v <= Offsets[i] and the last
// bucket counts values above every offset (the overflow bucket). len(Offsets) is always
// len(Counts)-1, as in Cassandra's in-memory form.
//
// On disk it is `i32 n` then n × (`i64 offset`, `i64 count`), where the offset written for
// bucket 0 and for bucket 1 are both Offsets[0] (EstimatedHistogramSerializer).
type EstimatedHistogram struct {
	Offsets []int64
	Counts  []int64
}

// Default bucket counts (Cassandra's offset counts; the serialised bucket count is one more).
// Cassandra 4.x and 3.11 (md, me, nb) size partitions with 150 offsets; 5.0 (nc, oa, da) with
// 155, enough for partitions up to ~3.5 TB (MetadataCollector.defaultPartitionSizeHistogram).
// Both use 118 offsets for cells per partition (defaultCellPerPartitionCountHistogram).
const (
	PartitionSizeBuckets4  = 150
	PartitionSizeBuckets5  = 155
	CellsPerPartitionCount = 118
)

// NewEstimatedHistogram returns an empty histogram with bucketCount offsets (and so
// bucketCount+1 buckets), as `new EstimatedHistogram(bucketCount)` builds it: offsets start at
// 1 and each next one is round(prev*1.2), bumped by one when rounding does not grow it.
// (Cassandra's considerZeroes variant, which prepends a 0 offset, is not used for sstable
// metadata.)
func NewEstimatedHistogram(bucketCount int) EstimatedHistogram {
	if bucketCount < 1 {
		bucketCount = 1
	}
	offsets := make([]int64, bucketCount)
	last := int64(1)
	offsets[0] = last
	for i := 1; i < bucketCount; i++ {
		next := int64(math.Floor(float64(last)*1.2 + 0.5)) // Java Math.round
		if next == last {
			next++
		}
		offsets[i] = next
		last = next
	}
	return EstimatedHistogram{Offsets: offsets, Counts: make([]int64, bucketCount+1)}
}

// Add counts v in the first bucket whose offset is >= v, or in the overflow bucket
// (EstimatedHistogram.add: Arrays.binarySearch, insertion point when absent).
func (h *EstimatedHistogram) Add(v int64) { h.AddNear(v, -1) }

// AddNear is Add for a caller whose values repeat: it tries bucket hint (the bucket AddNear
// returned for the previous value) before searching, and returns the bucket v went to. The
// offsets must ascend, as NewEstimatedHistogram's do; then a bucket's range
// (Offsets[i-1], Offsets[i]] holds v exactly when i is the bucket Add finds.
func (h *EstimatedHistogram) AddNear(v int64, hint int) int {
	off := h.Offsets
	if hint >= 0 && hint < len(h.Counts) && hint <= len(off) &&
		(hint == 0 || off[hint-1] < v) && (hint == len(off) || v <= off[hint]) {
		h.Counts[hint]++
		return hint
	}
	if len(h.Counts) == 0 {
		return 0
	}
	i := sort.Search(len(off), func(i int) bool { return off[i] >= v })
	if i >= len(h.Counts) {
		i = len(h.Counts) - 1
	}
	h.Counts[i]++
	return i
}

// Total is the sum of all bucket counts.
func (h *EstimatedHistogram) Total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

func parseEstimatedHistogram(r *encoding.Reader) EstimatedHistogram {
	start := r.Offset()
	n := r.Count("estimated histogram buckets", 16)
	if n < 0 {
		return EstimatedHistogram{}
	}
	if n < 2 {
		// Cassandra cannot serialise or deserialise fewer than two buckets.
		r.Failf("estimated histogram with %d buckets (at offset %d)", n, start)
		return EstimatedHistogram{}
	}
	h := EstimatedHistogram{Offsets: make([]int64, n-1), Counts: make([]int64, n)}
	for i := 0; i < n; i++ {
		off := r.I64()
		switch {
		case i == 0:
			h.Offsets[0] = off
		case i == 1 && off != h.Offsets[0]:
			r.Fail("estimated histogram: second offset differs from the first", ErrNonCanonical)
		case i > 1:
			h.Offsets[i-1] = off
		}
		h.Counts[i] = r.I64()
	}
	return h
}

func appendEstimatedHistogram(b []byte, h EstimatedHistogram) []byte {
	b = encoding.AppendI32(b, int32(len(h.Counts)))
	for i, c := range h.Counts {
		var off int64
		if j := max(i-1, 0); j < len(h.Offsets) {
			off = h.Offsets[j]
		}
		b = encoding.AppendI64(b, off)
		b = encoding.AppendI64(b, c)
	}
	return b
}

// TombstoneHistogram is the estimatedTombstoneDropTime streaming histogram: bins of
// (local deletion time in seconds, tombstone count), in ascending point order.
//
// On disk it is `i32 maxBinSize, i32 size` then size bins. Before oa each bin is
// (`f64 point`, `i64 count`) (LegacyHistogramSerializer); from oa (and BTI da) it is
// (`i64 point`, `i32 count`) (TombstoneHistogram.HistogramSerializer). MaxBinSize is kept as
// stored: 3.x wrote the builder's capacity (100), 4.0+ writes the number of bins.
type TombstoneHistogram struct {
	MaxBinSize int32
	Bins       []TombstoneBin
}

// TombstoneBin is one histogram bin.
type TombstoneBin struct {
	Point int64 // local deletion time, seconds since the Unix epoch
	Count int64 // tombstones in the bin; must fit an i32 for oa/da
}

func parseTombstoneHistogram(r *encoding.Reader, uintDeletionTime bool) TombstoneHistogram {
	var h TombstoneHistogram
	h.MaxBinSize = r.I32()
	binSize := 16
	if uintDeletionTime {
		binSize = 12
	}
	n := r.Count("tombstone histogram bins", binSize)
	if n <= 0 {
		return h
	}
	h.Bins = make([]TombstoneBin, n)
	for i := range h.Bins {
		if uintDeletionTime {
			h.Bins[i] = TombstoneBin{Point: r.I64(), Count: int64(r.I32())}
			continue
		}
		bits := r.U64()
		p := math.Float64frombits(bits)
		// Cassandra writes (double) of an int point, so the value is always integral; any
		// other double could not be written back from an integer point.
		if r.Err() == nil && (p != math.Trunc(p) || math.Abs(p) >= 1<<62 || math.Float64bits(float64(int64(p))) != bits) {
			r.Fail("tombstone histogram: non-integral point", ErrNonCanonical)
		}
		h.Bins[i] = TombstoneBin{Point: int64(p), Count: r.I64()}
	}
	return h
}

func appendTombstoneHistogram(b []byte, h TombstoneHistogram, uintDeletionTime bool) []byte {
	b = encoding.AppendI32(b, h.MaxBinSize)
	b = encoding.AppendI32(b, int32(len(h.Bins)))
	for _, bin := range h.Bins {
		if uintDeletionTime {
			b = encoding.AppendI64(b, bin.Point)
			b = encoding.AppendI32(b, int32(bin.Count))
		} else {
			b = encoding.AppendU64(b, math.Float64bits(float64(bin.Point)))
			b = encoding.AppendI64(b, bin.Count)
		}
	}
	return b
}
