package stats

import (
	"math"
	"sort"
)

// The tombstone-drop-time histogram is built exactly as Cassandra 5.0's
// utils.streamhist.StreamingTombstoneHistogramBuilder builds it for MetadataCollector
// (maxBinSize 100, spool 100000, points rounded up to 60 s): points accumulate in an
// open-addressing spool, which drains in slot order into at most 100 sorted bins, merging the
// two nearest bins whenever a 101st appears. The drain order decides which bins merge, so the
// spool's hash and probing are reproduced too.
const (
	tombstoneMaxBins    = 100
	tombstoneSpoolSize  = 1 << 17 // 100000 rounded up to a power of two
	tombstoneRoundSecs  = 60
	maxDeletionTime     = math.MaxUint32 - 2 // Cell.MAX_DELETION_TIME
	tombstoneEmptyPoint = math.MaxInt64
)

type tombstoneBuilder struct {
	points [tombstoneMaxBins + 1]int64
	values [tombstoneMaxBins + 1]int32

	spoolPoints []int64 // 2*tombstoneSpoolSize slots, -1 = free; allocated on first use
	spoolValues []int32
	spoolSize   int
}

func newTombstoneBuilder() *tombstoneBuilder {
	t := &tombstoneBuilder{}
	for i := range t.points {
		t.points[i] = tombstoneEmptyPoint
	}
	return t
}

// update adds one tombstone whose local deletion time is point.
func (t *tombstoneBuilder) update(point int64) {
	point = ceilKey(point, tombstoneRoundSecs)
	if t.spoolPoints == nil {
		t.spoolPoints = make([]int64, 2*tombstoneSpoolSize)
		t.spoolValues = make([]int32, 2*tombstoneSpoolSize)
		t.clearSpool()
	}
	if !t.spoolAdd(point, 1) {
		t.flush()
		t.spoolAdd(point, 1) // an empty spool always has room
	}
}

func (t *tombstoneBuilder) clearSpool() {
	for i := range t.spoolPoints {
		t.spoolPoints[i] = -1
	}
	t.spoolSize = 0
}

func (t *tombstoneBuilder) spoolAdd(point int64, delta int32) bool {
	if t.spoolSize > tombstoneSpoolSize {
		return false
	}
	cell := (tombstoneSpoolSize - 1) & int(int32(point*948701839))
	for attempt := 0; attempt < 100; attempt++ {
		c := (cell + attempt) % len(t.spoolPoints)
		switch t.spoolPoints[c] {
		case -1:
			t.spoolPoints[c] = point
			t.spoolValues[c] = delta
			t.spoolSize++
			return true
		case point:
			t.spoolValues[c] = saturatingInt(int64(t.spoolValues[c]) + int64(delta))
			return true
		}
	}
	return false
}

func (t *tombstoneBuilder) flush() {
	if t.spoolPoints == nil {
		return
	}
	for i, p := range t.spoolPoints {
		if p != -1 {
			t.flushValue(p, t.spoolValues[i])
		}
	}
	t.clearSpool()
}

func (t *tombstoneBuilder) flushValue(point int64, delta int32) {
	i := sort.Search(len(t.points), func(i int) bool { return t.points[i] >= point })
	if t.points[i] == point {
		t.values[i] = saturatingInt(int64(t.values[i]) + int64(delta))
	} else {
		copy(t.points[i+1:], t.points[i:len(t.points)-1])
		copy(t.values[i+1:], t.values[i:len(t.values)-1])
		t.points[i], t.values[i] = point, saturatingInt(int64(delta))
	}
	if t.points[len(t.points)-1] != tombstoneEmptyPoint {
		t.mergeNearest()
	}
}

// mergeNearest replaces the two closest bins (the first such pair on ties) by one bin at
// their weighted mean, rounded up to the bucket size.
func (t *tombstoneBuilder) mergeNearest() {
	idx := 0
	p1, p2 := int64(0), int64(math.MaxInt64)
	for i := 0; i < len(t.points)-1; i++ {
		if p2-p1 > t.points[i+1]-t.points[i] {
			p1, p2, idx = t.points[i], t.points[i+1], i
		}
	}
	v1, v2 := int64(t.values[idx]), int64(t.values[idx+1])
	a := saturatingLong(p1 * v1)
	b := saturatingLong(p2 * v2)
	sum := saturatingLong(v1 + v2)
	np := saturatingDeletionTime(saturatingLong(a+b) / sum)
	if np <= p1 {
		np = saturatingDeletionTime(p1 + 1)
	}
	np = min(np, p2)
	np = ceilKey(np, tombstoneRoundSecs)
	t.points[idx], t.values[idx] = np, saturatingInt(sum)
	copy(t.points[idx+1:], t.points[idx+2:])
	copy(t.values[idx+1:], t.values[idx+2:])
	t.points[len(t.points)-1], t.values[len(t.values)-1] = tombstoneEmptyPoint, 0
}

// build drains the spool and returns the histogram as Cassandra 4.0+ serialises it
// (maxBinSize written as the number of bins).
func (t *tombstoneBuilder) build() TombstoneHistogram {
	t.flush()
	var h TombstoneHistogram
	for i, p := range t.points {
		if p == tombstoneEmptyPoint {
			break
		}
		h.Bins = append(h.Bins, TombstoneBin{Point: p, Count: int64(t.values[i])})
	}
	h.MaxBinSize = int32(len(h.Bins))
	return h
}

func ceilKey(point int64, bucket int64) int64 {
	d := point % bucket
	if d == 0 {
		return point
	}
	return saturatingDeletionTime(point + bucket - d)
}

func saturatingInt(v int64) int32 {
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(v)
}

func saturatingLong(v int64) int64 {
	if v < 0 {
		return math.MaxInt64
	}
	return v
}

func saturatingDeletionTime(v int64) int64 {
	if v < 0 || v > maxDeletionTime {
		return maxDeletionTime
	}
	return v
}
