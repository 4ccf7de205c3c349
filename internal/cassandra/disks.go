package cassandra

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"os"
	"slices"
	"strings"

	"github.com/sluicedb/sluice/sstable/token"
)

// A Cassandra node with several data_file_directories (JBOD) splits its tokens among them:
// every table's sstables whose first token falls in a directory's share live in that
// directory. Cassandra 5.0's DiskBoundaryManager computes the shares from the ranges the node
// replicates in the table's keyspace (full replicas weigh 1, transient ones 0.1), sorted and
// unwrapped at the minimum token, split into as many parts as there are writable data
// directories by Splitter.splitOwnedRanges: with vnodes (num_tokens > 1) only at the ends of
// whole ranges, the boundary that brings each part nearest to an equal share; when that gives
// fewer parts than directories, or with one token, at any token, in equal shares. Its
// SSTableImporter puts an imported sstable into the directory of its first key
// (DiskBoundaries.getCorrectDiskForSSTable) and moves it there by rename: across file systems
// that rename falls back to a copy. So the sidecar receives every range into the staging
// directory on the file system of the data directory that will hold it (SplitByDisk), and the
// Importer stages each sstable beside its own target directory (DiskFor).

// DiskBoundaries returns Cassandra's disk boundaries for a node with disks data directories
// whose replicated ranges of a keyspace are local (each vnode's range as the ring gives it,
// (previous token, token]; not merged), Murmur3 tokens: the inclusive upper token of each
// directory's share, in data_file_directories order, the last math.MaxInt64. vnodes is
// Cassandra's num_tokens > 1. With one directory, or no local range, everything is the first
// directory's: [math.MaxInt64].
func DiskBoundaries(local token.RangeSet, disks int, vnodes bool) []int64 {
	var ranges []span
	for _, r := range local {
		for _, u := range r.Unwrap(token.Murmur3.MinToken()) {
			ranges = append(ranges, span{u.Left.Long, u.Right.Long})
		}
	}
	slices.SortStableFunc(ranges, func(a, b span) int { return cmp.Compare(a.left, b.left) })
	b := splitOwnedRanges(disks, ranges, vnodes)
	if vnodes && len(b) < disks {
		b = splitOwnedRanges(disks, ranges, false)
	}
	return b
}

// span is a range (left, right] unwrapped: right == math.MinInt64 stands for the end of the
// ring.
type span struct{ left, right int64 }

// width is Splitter.WeightedRange.totalTokens at weight 1: right (the minimum read as the
// maximum) less left.
func (s span) width() *big.Int {
	w := new(big.Int).Sub(big.NewInt(endOf(s.right)), big.NewInt(s.left))
	return w.Abs(w)
}

// endOf is Splitter.token: the minimum token as a right end is the maximum.
func endOf(t int64) int64 {
	if t == math.MinInt64 {
		return math.MaxInt64
	}
	return t
}

// splitOwnedRanges is Cassandra's Splitter.splitOwnedRanges for Murmur3 (whose values are
// the tokens themselves) over ranges of weight 1.
func splitOwnedRanges(parts int, ranges []span, dontSplit bool) []int64 {
	if len(ranges) == 0 || parts <= 1 {
		return []int64{math.MaxInt64}
	}
	total := new(big.Int)
	for _, r := range ranges {
		total.Add(total, r.width())
	}
	perPart := new(big.Int).Div(total, big.NewInt(int64(parts)))
	if perPart.Sign() == 0 {
		return []int64{math.MaxInt64}
	}
	if dontSplit {
		return splitNoPartialRanges(ranges, perPart, parts)
	}
	var out []int64
	sum := new(big.Int)
	left := new(big.Int)
	tokensLeft := new(big.Int).Set(total)
	for _, r := range ranges {
		width := r.width()
		left.SetInt64(r.left)
		for new(big.Int).Add(sum, width).Cmp(perPart) >= 0 {
			within := new(big.Int).Sub(perPart, sum)
			left.Add(left, within)
			out = append(out, left.Int64())
			tokensLeft.Sub(tokensLeft, perPart)
			width.Sub(width, within)
			sum.SetInt64(0)
			partsLeft := parts - len(out)
			if partsLeft == 0 {
				break
			} else if partsLeft == 1 {
				perPart = new(big.Int).Set(tokensLeft)
			}
		}
		sum.Add(sum, width)
	}
	if len(out) == 0 {
		return []int64{math.MaxInt64}
	}
	out[len(out)-1] = math.MaxInt64
	return out
}

// splitNoPartialRanges is Splitter.splitOwnedRangesNoPartialRanges: boundaries only at the
// right ends of whole ranges.
func splitNoPartialRanges(ranges []span, perPart *big.Int, parts int) []int64 {
	var out []int64
	sum := new(big.Int)
	for i := 0; len(out) < parts-1 && i < len(ranges)-1; i++ {
		cur, next := ranges[i].width(), ranges[i+1].width()
		sum.Add(sum, cur)
		withNext := new(big.Int).Add(sum, next)
		if sum.Cmp(perPart) > 0 || withNext.Cmp(perPart) > 0 {
			diffCur := new(big.Int).Sub(sum, perPart)
			diffNext := new(big.Int).Sub(withNext, perPart)
			if diffNext.Abs(diffNext).Cmp(diffCur.Abs(diffCur)) >= 0 {
				sum.SetInt64(0)
				out = append(out, endOf(ranges[i].right))
			}
		}
	}
	return append(out, math.MaxInt64)
}

// DiskFor is the index of the data directory an sstable whose first key has token t goes to,
// by boundaries (DiskBoundaries): the first whose upper token is at least t.
func DiskFor(boundaries []int64, t int64) int {
	i, _ := slices.BinarySearch(boundaries, t)
	return min(i, max(len(boundaries)-1, 0))
}

// SplitByDisk cuts rs at boundaries (DiskBoundaries): the i-th set holds the tokens of rs in
// the i-th data directory's share, (boundaries[i-1], boundaries[i]] ((minimum,
// boundaries[0]] for the first). Every token of rs is in exactly one of them.
func SplitByDisk(rs token.RangeSet, boundaries []int64) []token.RangeSet {
	out := make([]token.RangeSet, len(boundaries))
	lo := int64(math.MinInt64)
	for i, hi := range boundaries {
		for _, r := range rs {
			for _, u := range r.Unwrap(token.Murmur3.MinToken()) {
				l, rr := u.Left.Long, endOf(u.Right.Long)
				if u.Left.Equal(u.Right) { // (min, min]: the whole ring
					l, rr = math.MinInt64, math.MaxInt64
				}
				l, rr = max(l, lo), min(rr, hi)
				if l < rr {
					out[i] = append(out[i], token.Range{Left: murmur(l), Right: murmur(rr)})
				}
			}
		}
		lo = hi
	}
	return out
}

func murmur(v int64) token.Token { return token.Token{Kind: token.KindMurmur3, Long: v} }

// PairStaging gives each data directory the first staging directory on its file system, ""
// when none is: sstables bound for that directory cannot be staged for a rename, and the
// reason is in problems, naming both. Directories that cannot be read are problems too.
func PairStaging(dataDirs, staging []string) (pairs []string, problems []string) {
	pairs = make([]string, len(dataDirs))
	sts := make([]os.FileInfo, len(staging))
	for i, s := range staging {
		fi, err := os.Stat(s)
		if err != nil {
			problems = append(problems, fmt.Sprintf("staging directory %s: %v", s, err))
			continue
		}
		sts[i] = fi
	}
	for i, d := range dataDirs {
		di, err := os.Stat(d)
		if err != nil {
			problems = append(problems, fmt.Sprintf("data file directory %s: %v", d, err))
			continue
		}
		for j, fi := range sts {
			if fi != nil && SameFileSystem(fi, di) {
				pairs[i] = staging[j]
				break
			}
		}
		if pairs[i] == "" {
			problems = append(problems, fmt.Sprintf("no staging directory (of %s) is on the file system of data file directory %s: sstables Cassandra places there cannot be staged for a rename (set cassandra.staging_dirs to one directory on each data file directory's file system)",
				strings.Join(staging, ", "), d))
		}
	}
	return pairs, problems
}
