package slice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// checkSlice slices parent by ranges in mode and checks the contract of Slice: at most one
// child (unless the bounds forced a fallback, which must say why), which verifies (extended)
// with exactly the dead bytes it reported, and holds exactly the parent's partitions in the
// ranges, byte for byte, each once.
func checkSlice(t *testing.T, parentPrefix string, ranges token.RangeSet, mode Mode, opts Options, dirs ...string) *Result {
	t.Helper()
	parent := openTable(t, parentPrefix)
	dir := t.TempDir()
	if len(dirs) > 0 {
		dir = dirs[0]
	}
	opts.Mode = mode
	res, err := Slice(context.Background(), parent, ranges, dir, opts)
	if err != nil {
		t.Fatalf("slice %s by %d ranges (%s): %v", parentPrefix, len(ranges), mode, err)
	}
	if len(res.Children) > 1 && res.Reason == "" {
		t.Fatalf("%d children without a reason", len(res.Children))
	}
	want := map[string][]byte{}
	for _, p := range readAll(t, parentPrefix) {
		if ranges.Contains(p.Token) {
			want[string(p.Key)] = p.Bytes
		}
	}
	if len(want) == 0 && len(res.Children) != 0 {
		t.Fatalf("no partition in the ranges, but %d children", len(res.Children))
	}
	for _, c := range res.Children {
		rep, err := sstable.Verify(c.Desc.Prefix(), sstable.VerifyOptions{Extended: true, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			t.Errorf("child %s: %s", c.Desc, p)
		}
		if rep.Fillers != c.FillerPartitions {
			t.Errorf("child %s: verify counts %d filler partitions, the slice reported %d", c.Desc, rep.Fillers, c.FillerPartitions)
		}
		if (mode == ModeRechunk || mode == ModeRewrite) && rep.DeadBytes != 0 {
			t.Errorf("child %s: %s left %d dead bytes", c.Desc, mode, rep.DeadBytes)
		}
		parts := readAll(t, c.Desc.Prefix())
		if int64(len(parts)) != c.Partitions {
			t.Errorf("child %s: %d partitions, reported %d", c.Desc, len(parts), c.Partitions)
		}
		checkScan(t, c, parts, false)
		for _, p := range parts {
			w, ok := want[string(p.Key)]
			if !ok {
				t.Errorf("child %s holds key %x (token %s), not a parent partition in the ranges (or a duplicate)", c.Desc, p.Key, p.Token)
				continue
			}
			if !bytes.Equal(w, p.Bytes) {
				t.Errorf("child %s: partition %x differs from the parent's", c.Desc, p.Key)
			}
			delete(want, string(p.Key))
		}
	}
	for k := range want {
		t.Errorf("parent partition %x in the ranges is in no child", k)
	}
	if t.Failed() {
		t.FailNow()
	}
	return res
}

// manyRanges picks n disjoint ranges over parts' tokens: bounds are partition tokens (exactly
// on partition and often chunk boundaries) or random tokens, some ranges empty, and half the
// time the last range wraps around the ring.
func manyRanges(rng *rand.Rand, parts []partition, n int) token.RangeSet {
	seen := map[int64]bool{}
	var bounds []int64
	for len(bounds) < 2*n {
		var v int64
		if rng.IntN(2) == 0 {
			v = parts[rng.IntN(len(parts))].Token.Long
		} else {
			v = int64(rng.Uint64())
		}
		if !seen[v] {
			seen[v] = true
			bounds = append(bounds, v)
		}
	}
	sort.Slice(bounds, func(a, b int) bool { return bounds[a] < bounds[b] })
	tok := func(v int64) token.Token { return token.Token{Kind: token.KindMurmur3, Long: v} }
	var rs token.RangeSet
	if rng.IntN(2) == 0 {
		for i := 0; i+1 < len(bounds); i += 2 {
			rs = append(rs, token.Range{Left: tok(bounds[i]), Right: tok(bounds[i+1])})
		}
		return rs
	}
	for i := 1; i+1 < len(bounds); i += 2 {
		rs = append(rs, token.Range{Left: tok(bounds[i]), Right: tok(bounds[i+1])})
	}
	return append(rs, token.Range{Left: tok(bounds[len(bounds)-1]), Right: tok(bounds[0])})
}

// Generated sstables, BIG and BTI, LZ4 (with raw chunks too) and uncompressed with CRC.db,
// sliced by random range sets of 1 to 256 ranges in every mode: one sstable each time.
func TestSliceRandomRangeSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 7))
	for _, vn := range []string{"nb", "oa", "da"} {
		for _, c := range []struct {
			comp  string
			ratio float64
			cmp   float64
		}{{"lz4", 0, 0.5}, {"lz4", 1.1, 0.05}, {"none", 0, 0.5}} {
			v, _ := version.ParseWritable(vn)
			res, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Partitions: 1500,
				PartitionSize: 1 << 10, RowSize: 256, Compression: c.comp, MinCompressRatio: c.ratio,
				Compressibility: c.cmp, ChunkLength: 4 << 10, IndexBlockSize: 512, Seed: uint64(rng.Uint32())})
			if err != nil {
				t.Fatal(err)
			}
			parts := readAll(t, res.Desc.Prefix())
			for _, n := range []int{1, 3, 33, 256} {
				ranges := manyRanges(rng, parts, n)
				for _, m := range modes {
					t.Run(fmt.Sprintf("%s/%s-%v/%d/%s", vn, c.comp, c.ratio, n, m), func(t *testing.T) {
						r := checkSlice(t, res.Desc.Prefix(), ranges, m, Options{Bounds: Bounds{MaxDeadRatio: -1}, NoDigest: n == 3})
						if len(r.Children) != 1 {
							t.Errorf("%d children, want 1", len(r.Children))
						}
					})
				}
			}
		}
	}
}

// Filler and re-encoded bytes stay under two chunks per run: what the chunk grid costs a slice.
func TestSliceFillerBytesBound(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	res, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Partitions: 4000,
		PartitionSize: 1 << 10, RowSize: 256, Compression: "lz4", ChunkLength: 4 << 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	parts := readAll(t, res.Desc.Prefix())
	rng := rand.New(rand.NewPCG(5, 5))
	r := checkSlice(t, res.Desc.Prefix(), manyRanges(rng, parts, 33), ModeCopy, Options{})
	c := r.Children[0]
	if c.FillerBytes > int64(c.Runs)*2*(4<<10) || c.EncodedBytes > int64(c.Runs)*2*(4<<10) {
		t.Errorf("%d filler and %d re-encoded bytes over %d runs: more than two 4 KiB chunks per run", c.FillerBytes, c.EncodedBytes, c.Runs)
	}
}

// Every fixture (BIG md..oa and BTI, compressed and not, Murmur3 and ByteOrdered), sliced by
// a range set that takes every other quarter of its keys, one range wrapping.
func TestSliceEveryFixture(t *testing.T) {
	for _, f := range fixtures.All(t) {
		ranges, ok := fixtureRanges(t, f)
		if !ok {
			continue
		}
		for _, m := range modes {
			if m == ModeRewrite && (f.Version == "md" || f.Version == "me") {
				continue // sluice writes nb and later only
			}
			t.Run(fmt.Sprintf("%s/%s", f.Name, m), func(t *testing.T) {
				r := checkSlice(t, f.Prefix, ranges, m, Options{Bounds: Bounds{MaxDeadRatio: -1}})
				if len(r.Children) != 1 {
					t.Errorf("%d children, want 1", len(r.Children))
				}
			})
		}
	}
}

// fixtureRanges takes every other gap between a fixture's distinct partition tokens, the
// last wrapping round the ring when there is room: (u1,u2], (u3,u4], ..., (u(n-1),u0]. ok is
// false for fixtures with fewer than three distinct tokens.
func fixtureRanges(t *testing.T, f fixtures.SSTable) (token.RangeSet, bool) {
	var u []string
	for _, k := range f.Keys(t) {
		if len(u) == 0 || u[len(u)-1] != k.Token {
			u = append(u, k.Token)
		}
	}
	n := len(u)
	if n < 3 {
		return nil, false
	}
	var spec []string
	right := 0
	for i := 1; i+1 < n; i += 2 {
		spec = append(spec, fmt.Sprintf("(%s,%s]", u[i], u[i+1]))
		right = i + 1
	}
	if right < n-1 {
		spec = append(spec, fmt.Sprintf("(%s,%s]", u[n-1], u[0]))
	}
	p, _ := partitionerOf(f)
	ranges, err := token.ParseRanges(p, strings.Join(spec, ","))
	if err != nil {
		t.Fatal(err)
	}
	return ranges, true
}

// Past the run bound the slice falls back to one child per run and says why; the children
// together still hold exactly the partitions.
func TestSliceFallsBackPastTheRunBound(t *testing.T) {
	v, _ := version.ParseWritable("nb")
	res, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Partitions: 1000,
		PartitionSize: 1 << 10, RowSize: 256, Compression: "lz4", ChunkLength: 4 << 10, Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	parts := readAll(t, res.Desc.Prefix())
	ranges := manyRanges(rand.New(rand.NewPCG(1, 2)), parts, 40)
	r := checkSlice(t, res.Desc.Prefix(), ranges, ModeCopy, Options{Bounds: Bounds{MaxRuns: 2, MaxDeadRatio: -1}})
	if len(r.Children) < 2 || r.Reason == "" {
		t.Fatalf("%d children, reason %q: want a fallback with its reason", len(r.Children), r.Reason)
	}
	t.Logf("fallback: %s", r.Reason)
}

// Overlapping ranges are refused before anything is written.
func TestSliceRefusesOverlappingRanges(t *testing.T) {
	f := fixture(t, "sstable-transformer/oa/spark_test.testtable_10k/oa-13-big")
	parent := openTable(t, f.Prefix)
	ranges, err := token.ParseRanges(token.Murmur3, "(0,100],(50,200]")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := Slice(context.Background(), parent, ranges, dir, Options{}); !errors.Is(err, ErrOverlap) {
		t.Fatalf("got %v, want ErrOverlap", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the output directory was created: %v", err)
	}
}

// A slice of an uncompressed parent whose cut last chunk is damaged fails (the parent's CRC
// for that chunk does not check out) and leaves nothing visible: its CRC is never recomputed
// over the bad bytes.
func TestSliceOfCorruptUncompressedParentLeavesNothing(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	src := t.TempDir()
	res, err := gen.Generate(context.Background(), src, gen.Options{Version: v, Partitions: 400,
		PartitionSize: 1 << 10, RowSize: 256, Compression: "none", Seed: 21})
	if err != nil {
		t.Fatal(err)
	}
	parts := readAll(t, res.Desc.Prefix())
	parent, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	// Ranges ending at a partition in the middle of a CRC chunk; flip a byte of that
	// partition, which lies in the cut last chunk.
	var positions []int64
	_ = parent.ScanPartitions(func(p *sstable.Partition) error { positions = append(positions, p.Position); return nil })
	parent.Close()
	k := len(parts) / 3
	for k < len(parts) && positions[k]%65536 < 1024 {
		k++
	}
	ranges := token.RangeSet{{Left: parts[0].Token, Right: parts[k].Token}}
	f, err := os.OpenFile(res.Desc.Path(descriptor.Data), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	f.ReadAt(b[:], positions[k]+10)
	b[0] ^= 0x40
	f.WriteAt(b[:], positions[k]+10)
	f.Close()

	parent, err = sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	dir := t.TempDir()
	if _, err := Slice(context.Background(), parent, ranges, dir, Options{Mode: ModeCopy}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".txt" || filepath.Ext(e.Name()) == ".db" {
			t.Errorf("left %s visible", e.Name())
		}
	}
}

// A BTI slice carries the Rows.db pieces of its runs, not everything between them: two
// ranges at the two ends of the ring take about their share of the parent's row indexes.
func TestSliceBTIRowsTakesOnlyItsRuns(t *testing.T) {
	v, _ := version.ParseWritable("da")
	res, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Partitions: 2000,
		PartitionSize: 8 << 10, RowSize: 256, IndexBlockSize: 512, Compression: "lz4", ChunkLength: 4 << 10, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := token.ParseRanges(token.Murmur3, "(-9223372036854775808,-7500000000000000000],(7500000000000000000,-9223372036854775808]")
	if err != nil {
		t.Fatal(err)
	}
	r := checkSlice(t, res.Desc.Prefix(), ranges, ModeCopy, Options{})
	if len(r.Children) != 1 || r.Children[0].Runs != 2 {
		t.Fatalf("%+v", r.Children)
	}
	parent := fileSize(res.Desc.Path(descriptor.Rows))
	child := fileSize(r.Children[0].Desc.Path(descriptor.Rows))
	if parent == 0 || child*3 > parent {
		t.Errorf("child Rows.db %d bytes of the parent's %d: more than its runs' share", child, parent)
	}
	t.Logf("Rows.db: parent %d, child %d", parent, child)
}
