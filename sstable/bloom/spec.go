package bloom

import (
	"fmt"
	"math"
)

// probs is BloomCalculations.probs: row b is the false-positive rate with b buckets (bits) per
// element, column k with k hash functions. Rows 0 and 1 and column 0 are dummies.
var probs = [...][]float64{
	{1.0},
	{1.0, 1.0},
	{1.0, 0.393, 0.400},
	{1.0, 0.283, 0.237, 0.253},
	{1.0, 0.221, 0.155, 0.147, 0.160},
	{1.0, 0.181, 0.109, 0.092, 0.092, 0.101},
	{1.0, 0.154, 0.0804, 0.0609, 0.0561, 0.0578, 0.0638},
	{1.0, 0.133, 0.0618, 0.0423, 0.0359, 0.0347, 0.0364},
	{1.0, 0.118, 0.0489, 0.0306, 0.024, 0.0217, 0.0216, 0.0229},
	{1.0, 0.105, 0.0397, 0.0228, 0.0166, 0.0141, 0.0133, 0.0135, 0.0145},
	{1.0, 0.0952, 0.0329, 0.0174, 0.0118, 0.00943, 0.00844, 0.00819, 0.00846},
	{1.0, 0.0869, 0.0276, 0.0136, 0.00864, 0.0065, 0.00552, 0.00513, 0.00509},
	{1.0, 0.08, 0.0236, 0.0108, 0.00646, 0.00459, 0.00371, 0.00329, 0.00314},
	{1.0, 0.074, 0.0203, 0.00875, 0.00492, 0.00332, 0.00255, 0.00217, 0.00199, 0.00194},
	{1.0, 0.0689, 0.0177, 0.00718, 0.00381, 0.00244, 0.00179, 0.00146, 0.00129, 0.00121, 0.0012},
	{1.0, 0.0645, 0.0156, 0.00596, 0.003, 0.00183, 0.00128, 0.001, 0.000852, 0.000775, 0.000744},
	{1.0, 0.0606, 0.0138, 0.005, 0.00239, 0.00139, 0.000935, 0.000702, 0.000574, 0.000505, 0.00047, 0.000459},
	{1.0, 0.0571, 0.0123, 0.00423, 0.00193, 0.00107, 0.000692, 0.000499, 0.000394, 0.000335, 0.000302, 0.000287, 0.000284},
	{1.0, 0.054, 0.0111, 0.00362, 0.00158, 0.000839, 0.000519, 0.00036, 0.000275, 0.000226, 0.000198, 0.000183, 0.000176},
	{1.0, 0.0513, 0.00998, 0.00312, 0.0013, 0.000663, 0.000394, 0.000264, 0.000194, 0.000155, 0.000132, 0.000118, 0.000111, 0.000109},
	{1.0, 0.0488, 0.00906, 0.0027, 0.00108, 0.00053, 0.000303, 0.000196, 0.00014, 0.000108, 8.89e-05, 7.77e-05, 7.12e-05, 6.79e-05, 6.71e-05},
}

// optK is BloomCalculations.optKPerBuckets: for each row the first k with the least rate (at
// least 1), computed from probs exactly as the Java static initialiser does.
var optK = func() [len(probs)]int {
	var out [len(probs)]int
	for i, row := range probs {
		best := math.MaxFloat64
		for j, p := range row {
			if p < best {
				best = p
				out[i] = max(1, j)
			}
		}
	}
	return out
}()

const (
	minBuckets = 2
	minK       = 1
	// bitsetExcess is FilterFactory.BITSET_EXCESS (and BloomCalculations.EXCESS): extra bits
	// added to every filter.
	bitsetExcess = 20
)

// MinFPChance is the smallest false-positive chance any filter can satisfy (20 buckets per
// element, the last cell of probs); Cassandra rejects a lower bloom_filter_fp_chance.
const MinFPChance = 6.71e-05

// Needed reports whether a table with this bloom_filter_fp_chance has a Filter.db at all:
// Cassandra uses FilterFactory.AlwaysPresent, and writes no filter, when it is 1.0.
func Needed(fpChance float64) bool { return fpChance < 1.0 }

// maxBucketsPerElement is BloomCalculations.maxBucketsPerElement. Java throws when the
// quotient is below 1, but in double arithmetic (2^63-21)/n rounds to at least 1.0 for every
// positive int64 n, so that cannot happen here either; WordCount catches the overflow instead.
func maxBucketsPerElement(numElements int64) int {
	v := float64(math.MaxInt64-bitsetExcess) / float64(max(1, numElements))
	// Compare as floats first: Java's (int) of a huge double saturates, Go's is undefined.
	if v >= float64(len(probs)-1) {
		return len(probs) - 1
	}
	return int(v)
}

// ComputeSpec returns the hash count and buckets (bits) per element Cassandra uses for a filter
// of numElements keys at false-positive chance fpChance: BloomCalculations.computeBloomSpec(
// maxBucketsPerElement(numElements), fpChance). It finds the fewest buckets whose optimal hash
// count meets fpChance, then lowers the hash count while the rate still meets it. A chance of
// 0.393 or more takes Cassandra's trivial branch: 2 hashes, 1 bucket per element.
//
// It fails (ErrSpec) for a chance outside (0, 1), NaN, or below what the allowed buckets per
// element can reach (MinFPChance for fewer than ~4.6e17 elements).
func ComputeSpec(numElements int64, fpChance float64) (hashCount, bucketsPerElement int, err error) {
	if !(fpChance > 0 && fpChance < 1) {
		return 0, 0, fmt.Errorf("%w: false-positive chance %v outside (0, 1)", ErrSpec, fpChance)
	}
	maxBuckets := maxBucketsPerElement(numElements)
	maxK := len(probs[maxBuckets]) - 1
	if fpChance >= probs[minBuckets][minK] {
		// BloomSpecification(2, optKPerBuckets[2]): the constructor takes (K, buckets).
		return 2, optK[2], nil
	}
	if fpChance < probs[maxBuckets][maxK] {
		return 0, 0, fmt.Errorf("%w: unable to satisfy %v with %d buckets per element", ErrSpec, fpChance, maxBuckets)
	}
	buckets := minBuckets
	k := optK[minBuckets]
	for probs[buckets][k] > fpChance {
		buckets++
		k = optK[buckets]
	}
	for probs[buckets][k-1] <= fpChance {
		k--
	}
	return k, buckets, nil
}

// WordCount is the number of 64-bit words FilterFactory.createFilter allocates for numElements
// keys at bucketsPerElement: numBits = n*buckets + 20, words = ((numBits-1) >>> 6) + 1.
func WordCount(numElements int64, bucketsPerElement int) (int, error) {
	if numElements < 0 || bucketsPerElement < 1 || numElements > (math.MaxInt64-bitsetExcess)/int64(bucketsPerElement) {
		return 0, fmt.Errorf("%w: %d elements at %d buckets per element", ErrSpec, numElements, bucketsPerElement)
	}
	numBits := numElements*int64(bucketsPerElement) + bitsetExcess
	words := (uint64(numBits-1) >> 6) + 1
	if words > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %d words exceed OffHeapBitSet's limit", ErrSpec, words)
	}
	return int(words), nil
}
