package slice

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/internal/testkit/sstabletest"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

type partition = sstabletest.Partition

func readAll(t testing.TB, prefix string) []partition { return sstabletest.ReadAll(t, prefix) }

// checkSplit splits parent by ranges in mode and checks the contract: every child verifies
// (extended), holds only partitions of its range, and the children together hold exactly the
// parent's partitions in the ranges, byte for byte, each once.
func checkSplit(t *testing.T, parentPrefix string, ranges token.RangeSet, mode Mode, noDigest bool, dirs ...string) *Result {
	t.Helper()
	parent := openTable(t, parentPrefix)
	dir := t.TempDir()
	if len(dirs) > 0 {
		dir = dirs[0]
	}
	res, err := Split(context.Background(), parent, ranges, dir, Options{Mode: mode, NoDigest: noDigest})
	if err != nil {
		t.Fatalf("split %s by %s (%s): %v", parentPrefix, ranges, mode, err)
	}
	want := map[string]partition{}
	for _, p := range readAll(t, parentPrefix) {
		if ranges.Contains(p.Token) {
			want[string(p.Key)] = p
		}
	}
	got := 0
	for _, c := range res.Children {
		rep, err := sstable.Verify(c.Desc.Prefix(), sstable.VerifyOptions{Extended: true, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			t.Errorf("child %s (%s): %s", c.Desc, c.Range, p)
		}
		parts := readAll(t, c.Desc.Prefix())
		if int64(len(parts)) != c.Partitions {
			t.Errorf("child %s: %d partitions, reported %d", c.Desc, len(parts), c.Partitions)
		}
		checkScan(t, c, parts, true)
		for _, p := range parts {
			if !c.Range.Contains(p.Token) {
				t.Errorf("child %s holds key %x (token %s) outside %s", c.Desc, p.Key, p.Token, c.Range)
			}
			w, ok := want[string(p.Key)]
			if !ok {
				t.Errorf("child %s holds key %x, which is not a parent partition in the ranges (or is duplicated)", c.Desc, p.Key)
				continue
			}
			if !bytes.Equal(w.Bytes, p.Bytes) {
				t.Errorf("child %s: partition %x differs from the parent's", c.Desc, p.Key)
			}
			delete(want, string(p.Key))
			got++
		}
	}
	for k := range want {
		t.Errorf("parent partition %x in the ranges is in no child", k)
	}
	// The same, summarised: count, XOR and sum of a 64-bit hash per key.
	var parentKeys, childKeys [][]byte
	for _, p := range readAll(t, parentPrefix) {
		if ranges.Contains(p.Token) {
			parentKeys = append(parentKeys, p.Key)
		}
	}
	for _, c := range res.Children {
		for _, p := range readAll(t, c.Desc.Prefix()) {
			childKeys = append(childKeys, p.Key)
		}
	}
	pn, px, ps := keyDigest(parentKeys)
	cn, cx, cs := keyDigest(childKeys)
	if pn != cn || px != cx || ps != cs {
		t.Errorf("key digests differ: parent (%d %x %x), children (%d %x %x)", pn, px, ps, cn, cx, cs)
	}
	if t.Failed() {
		t.FailNow()
	}
	return res
}

// checkScan holds a child of a gap-free parent (every parent these tests cut: generated or
// Cassandra-written) to Cassandra's sequential rules: a scan from position 0 finds exactly the
// partitions its index addresses, the fillers among them empty, and verify agrees.
func checkScan(t *testing.T, c Child, parts []partition, _ bool) {
	t.Helper()
	if err := sstabletest.CheckScannable(c.Desc.Prefix(), sstabletest.Keys(parts)); err != nil {
		t.Errorf("child %s: %v", c.Desc, err)
	}
}

func fixture(t *testing.T, name string) fixtures.SSTable {
	for _, f := range fixtures.All(t) {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no fixture %s", name)
	return fixtures.SSTable{}
}

var modes = []Mode{ModeCopy, ModeRechunk, ModeRewrite, ModeAuto}

// The 10,000-partition Murmur3 fixture (with its trailing empty chunk) split three ways, and by
// ranges that wrap, hit one chunk, or cover everything.
func TestSplitMurmur3Fixture(t *testing.T) {
	f := fixture(t, "sstable-transformer/oa/spark_test.testtable_10k/oa-13-big")
	for _, spec := range []string{
		"(-9223372036854775808,-3000000000000000000],(-3000000000000000000,3000000000000000000],(3000000000000000000,-9223372036854775808]",
		"(9000000000000000000,-9000000000000000000]", // wraps: two pieces, two children
		"(-100,-100]", // the whole ring
		"(-9223297786983086898,-9223297786983086897]", // the first partition only
		"(1,2]", // empty: no child
	} {
		ranges, err := token.ParseRanges(token.Murmur3, spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range modes {
			t.Run(fmt.Sprintf("%s/%s", m, spec), func(t *testing.T) {
				res := checkSplit(t, f.Prefix, ranges, m, false)
				if spec == "(1,2]" && len(res.Children) != 0 {
					t.Errorf("empty range gave %d children", len(res.Children))
				}
			})
		}
	}
}

// Every fixture, BIG and BTI, compressed and not, split in two at its middle key.
func TestSplitEveryFixtureInTwo(t *testing.T) {
	for _, f := range fixtures.All(t) {
		keys := f.Keys(t)
		if len(keys) < 2 {
			continue
		}
		mid := keys[len(keys)/2-1].Token
		p, _ := partitionerOf(f)
		min := p.MinToken().String()
		spec := fmt.Sprintf("(%s,%s],(%s,%s]", min, mid, mid, min)
		ranges, err := token.ParseRanges(p, spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range modes {
			if m == ModeRewrite && (f.Version == "md" || f.Version == "me") {
				continue // sluice writes nb and later only
			}
			t.Run(fmt.Sprintf("%s/%s", f.Name, m), func(t *testing.T) {
				res := checkSplit(t, f.Prefix, ranges, m, false)
				if len(res.Children) != 2 {
					t.Errorf("%d children, want 2", len(res.Children))
				}
			})
		}
	}
}

func partitionerOf(f fixtures.SSTable) (token.Partitioner, error) {
	if filepath.Dir(f.Name) != "" && len(f.Name) > 13 && f.Name[:13] == "apache-legacy" {
		return token.ByteOrdered, nil
	}
	return token.Murmur3, nil
}

// Generated sstables of every writable version, compressed (with raw CASSANDRA-10520 chunks
// too) and not, split by random range sets: wrapping ranges, ranges inside one chunk, ranges
// ending exactly where a chunk ends, and empty ranges.
func TestSplitGeneratedRandomRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 1))
	for _, vn := range []string{"nb", "nc", "oa", "da"} {
		for _, c := range []struct {
			comp  string
			ratio float64
			cmp   float64
		}{{"lz4", 0, 0.5}, {"lz4", 1.1, 0.05}, {"none", 0, 0.5}} {
			v, _ := version.ParseWritable(vn)
			root := t.TempDir()
			res, err := gen.Generate(context.Background(), root, gen.Options{Version: v, Partitions: 300,
				PartitionSize: 2 << 10, RowSize: 512, Compression: c.comp, MinCompressRatio: c.ratio,
				Compressibility: c.cmp, ChunkLength: 4 << 10, IndexBlockSize: 1 << 10, Seed: uint64(rng.Uint32())})
			if err != nil {
				t.Fatal(err)
			}
			parts := readAll(t, res.Desc.Prefix())
			for trial := 0; trial < 3; trial++ {
				ranges := randomRanges(rng, parts)
				for _, m := range modes {
					t.Run(fmt.Sprintf("%s/%s-%v/%d/%s", vn, c.comp, c.ratio, trial, m), func(t *testing.T) {
						checkSplit(t, res.Desc.Prefix(), ranges, m, trial == 2)
					})
				}
			}
		}
	}
}

// randomRanges picks 1 to 5 disjoint ranges as manyRanges does (bounds on partition tokens
// or random, the last range wrapping half the time).
func randomRanges(rng *rand.Rand, parts []partition) token.RangeSet {
	return manyRanges(rng, parts, 1+rng.IntN(5))
}

// A hash summary (count, XOR and sum of a 64-bit hash per key) of a large split, as a second
// check on top of the exact lists.
func keyDigest(keys [][]byte) (n int, xor, sum uint64) {
	for _, k := range keys {
		h := fnv.New64a()
		h.Write(k)
		v := h.Sum64()
		n, xor, sum = n+1, xor^v, sum+v
	}
	return
}

// generate writes a generated sstable into dir, failing the test on error.
func generate(t testing.TB, dir string, opts gen.Options) gen.Result {
	t.Helper()
	res, err := gen.Generate(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// openTable opens the sstable at prefix for the rest of the test.
func openTable(t testing.TB, prefix string) *sstable.Table {
	t.Helper()
	tb, err := sstable.Open(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}
