package slice

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// everyKeyPlan is the plan the Planner makes fed every partition with its key: what btiPlan
// must make from the trie, with each child's last partition's position.
func everyKeyPlan(t testing.TB, parent *sstable.Table, ps *Pieces, ranges token.RangeSet) ([]ChildPlan, []int64, int64) {
	t.Helper()
	pl := NewPlanner(ps)
	var last []int64
	err := parent.ScanPartitions(func(p *sstable.Partition) error {
		if k := pl.Add(p.Ordinal, p.Key, p.Token, p.Position); k >= 0 {
			if k == len(last) {
				last = append(last, 0)
			}
			last[k] = p.Position
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pl.Finish(ranges, parent.DataLength()), last, pl.Partitions()
}

// btiParents are generated BTI sstables: small partitions without row index, partitions with
// one (several index blocks), and both mixed; and the ByteOrdered BTI fixtures.
func btiParents(t *testing.T) []string {
	t.Helper()
	v, _ := version.ParseWritable("da")
	var out []string
	for i, o := range []gen.Options{
		{Partitions: 3000, PartitionSize: 512, RowSize: 128},
		{Partitions: 200, PartitionSize: 16 << 10, RowSize: 512, IndexBlockSize: 2 << 10},
		{Partitions: 1000, PartitionSize: 4 << 10, RowSize: 256, IndexBlockSize: 3 << 10, ChunkLength: 4 << 10},
	} {
		o.Version, o.Seed = v, uint64(30+i)
		res, err := gen.Generate(context.Background(), filepath.Join(t.TempDir(), fmt.Sprint(i)), o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Desc.Prefix())
	}
	for _, f := range fixtures.All(t) {
		if f.Format == "bti" {
			out = append(out, f.Prefix)
		}
	}
	return out
}

// rangesFor picks range sets over parent's partitions: random ones (bounds on partition tokens,
// between them and anywhere), the whole ring, one range around one partition, and ranges
// that leave out only the first or the last partition.
func rangesFor(rng *rand.Rand, p token.Partitioner, parts []partition) []token.RangeSet {
	min := p.MinToken()
	tok := func(i int) token.Token { return parts[i].Token }
	// between is a token strictly between partitions i and i+1 when one exists, else i's.
	between := func(i int) token.Token {
		a, b := parts[i].Token, parts[i+1].Token
		if a.Kind == token.KindMurmur3 {
			if b.Long-a.Long > 1 {
				return token.Token{Kind: token.KindMurmur3, Long: a.Long + (b.Long-a.Long)/2}
			}
			return a
		}
		return token.Token{Kind: token.KindBytes, Bytes: append(bytes.Clone(a.Bytes), 0)}
	}
	n := len(parts)
	out := []token.RangeSet{
		{{Left: min, Right: min}},
		{{Left: tok(0), Right: min}},                                                       // all but the first
		{{Left: min, Right: tok(n - 2)}},                                                   // all but the last
		{{Left: tok(n / 2), Right: tok(n/2 + 1)}},                                          // one partition
		{{Left: between(n / 3), Right: between(n / 2)}},                                    // bounds between partitions
		{{Left: tok(n / 2), Right: tok(n / 4)}},                                            // wrapping
		{{Left: tok(n / 4), Right: tok(n / 2)}, {Left: tok(n / 2), Right: tok(3 * n / 4)}}, // touching
	}
	if parts[0].Token.Kind == token.KindMurmur3 {
		for range 6 {
			out = append(out, randomRanges(rng, parts))
		}
	} else {
		for range 6 {
			i := rng.IntN(n - 1)
			j := i + rng.IntN(n-1-i)
			out = append(out, token.RangeSet{{Left: between(i), Right: tok(j)}})
		}
	}
	return out
}

// The plan from the trie is the plan from every key, and reads keys only at the ranges' edges.
func TestBTIPlanMatchesEveryKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 2))
	for _, prefix := range btiParents(t) {
		parent := openTable(t, prefix)
		parts := readAll(t, prefix)
		if len(parts) < 4 {
			continue
		}
		for i, ranges := range rangesFor(rng, parent.Partitioner, parts) {
			t.Run(fmt.Sprintf("%s/%d", filepath.Base(prefix), i), func(t *testing.T) {
				ps, err := NewPieces(parent.Partitioner, ranges)
				if err != nil {
					t.Fatal(err)
				}
				want, wantLast, wantN := everyKeyPlan(t, parent, ps, ranges)
				p := &triePlanner{parent: parent, ps: ps, bounds: newTrieBounds(ps), cur: -1}
				got, last, n, ok, err := btiPlanWith(p, ranges)
				if err != nil || !ok {
					t.Fatalf("%s: btiPlan: ok %v, %v", ranges, ok, err)
				}
				if n != wantN || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(last, wantLast) {
					t.Fatalf("%s: plan from the trie\n%+v (last %v, %d partitions)\nfrom every key\n%+v (last %v, %d)", ranges, got, last, n, want, wantLast, wantN)
				}
				// Each child costs its first and last keys and its two neighbours'; each range
				// end at most two keys whose trie path stops inside its token.
				if limit := 4*len(got) + 4*ps.Len(); p.reads > limit {
					t.Errorf("%s: %d keys read for %d children, %d pieces (at most %d)", ranges, p.reads, len(got), ps.Len(), limit)
				}
			})
		}
	}
}

// One pass of partialsBTI gives the plan, index slice, rows slice and partition count that
// planning and then gatherIndex give, held or measured only (IndexLater), and IndexReader
// makes the same slice later.
func TestPartialsBTIMatchesGather(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 3))
	for _, prefix := range btiParents(t) {
		parent := openTable(t, prefix)
		parts := readAll(t, prefix)
		if len(parts) < 4 {
			continue
		}
		spec, err := SpecOf(parent)
		if err != nil {
			t.Fatal(err)
		}
		for i, ranges := range rangesFor(rng, parent.Partitioner, parts) {
			t.Run(fmt.Sprintf("%s/%d", filepath.Base(prefix), i), func(t *testing.T) {
				ps, err := NewPieces(parent.Partitioner, ranges)
				if err != nil {
					t.Fatal(err)
				}
				opts := PartialOptions{OnePerParent: true, Bounds: Bounds{MaxDeadRatio: -1}}
				got, reason, _, ok, err := partialsBTI(parent, spec, ps, ranges, opts)
				if err != nil || !ok {
					t.Fatalf("partialsBTI: ok %v, %v", ok, err)
				}
				plans, _, _ := everyKeyPlan(t, parent, ps, ranges)
				if len(plans) == 0 {
					if len(got) != 0 {
						t.Fatalf("%d children of no partition", len(got))
					}
					return
				}
				one, wantReason := OnePerParent(parent, plans, ModeCopy, opts.Bounds)
				want := []Partial{{Plan: one[0], Layout: NewLayout(geometry(parent, spec.CRCChunkLength), one[0].Runs, 1)}}
				if parent.Compression != nil {
					want[0].Info = want[0].Layout.Info(parent.Compression)
				}
				if err := gatherIndex(parent, spec, want, nil, func(_ int, rec []byte) error {
					want[0].Index = append(want[0].Index, rec...)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if reason != wantReason || !reflect.DeepEqual(got, want) {
					t.Fatalf("one pass:\n%+v %q\nplan and gather:\n%+v %q", got, reason, want, wantReason)
				}
				opts.IndexLater = true
				later, _, _, ok, err := partialsBTI(parent, spec, ps, ranges, opts)
				if err != nil || !ok || len(later) != 1 || later[0].Index != nil || later[0].IndexLength != want[0].IndexLength {
					t.Fatalf("IndexLater: %d children, ok %v, %v", len(later), ok, err)
				}
				r, err := IndexReader(parent, later[0])
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if _, err := buf.ReadFrom(r); err != nil {
					t.Fatal(err)
				}
				r.Close()
				if !bytes.Equal(buf.Bytes(), want[0].Index) {
					t.Fatalf("IndexReader made %d bytes, gathered %d", buf.Len(), len(want[0].Index))
				}
			})
		}
	}
}

// A positions slice made later (IndexLater, as a sender makes it) walks only the child's runs,
// found in the trie from each run's first partition, and is the slice the plan's own pass
// makes; a run whose partitions are no longer where the plan put them fails the read.
func TestPositionsSliceWalksRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 5))
	for _, prefix := range btiParents(t) {
		parent := openTable(t, prefix)
		if parent.Compression == nil {
			continue
		}
		parts := readAll(t, prefix)
		if len(parts) < 4 {
			continue
		}
		spec, err := SpecOf(parent)
		if err != nil {
			t.Fatal(err)
		}
		for i, ranges := range rangesFor(rng, parent.Partitioner, parts) {
			t.Run(fmt.Sprintf("%s/%d", filepath.Base(prefix), i), func(t *testing.T) {
				ps, err := NewPieces(parent.Partitioner, ranges)
				if err != nil {
					t.Fatal(err)
				}
				opts := PartialOptions{OnePerParent: true, Bounds: Bounds{MaxDeadRatio: -1}, Format: IndexPositions}
				held, _, _, ok, err := partialsBTI(parent, spec, ps, ranges, opts)
				if err != nil || !ok {
					t.Fatalf("partialsBTI: ok %v, %v", ok, err)
				}
				if len(held) == 0 {
					return
				}
				opts.IndexLater = true
				later, _, _, ok, err := partialsBTI(parent, spec, ps, ranges, opts)
				if err != nil || !ok || len(later) != 1 || later[0].Index != nil || later[0].IndexLength != held[0].IndexLength {
					t.Fatalf("IndexLater: %d children, ok %v, %v", len(later), ok, err)
				}
				if len(later[0].seeks) != len(later[0].Plan.Runs) {
					t.Fatalf("%d of %d runs located", len(later[0].seeks), len(later[0].Plan.Runs))
				}
				read := func(p Partial) ([]byte, error) {
					r, err := IndexReader(parent, p)
					if err != nil {
						return nil, err
					}
					defer r.Close()
					return io.ReadAll(r)
				}
				got, err := read(later[0])
				if err != nil || !bytes.Equal(got, held[0].Index) {
					t.Fatalf("IndexReader made %d bytes (%v), the plan's pass %d", len(got), err, len(held[0].Index))
				}
				// A run moved by one partition (its first or its next elsewhere) is refused.
				for _, move := range []func(r *RunPlan){
					func(r *RunPlan) { r.Lo++ },
					func(r *RunPlan) { r.Partitions-- },
					func(r *RunPlan) { r.Partitions++ },
				} {
					p := later[0]
					p.Plan.Runs = slices.Clone(p.Plan.Runs)
					k := rng.IntN(len(p.Plan.Runs))
					move(&p.Plan.Runs[k])
					if p.Plan.Runs[k].Partitions == 0 {
						continue
					}
					if _, err := read(p); err == nil {
						t.Errorf("run %d %+v: read a slice of runs the trie does not hold", k, p.Plan.Runs[k])
					}
				}
			})
		}
	}
}

// A slice whose runs the bounds keep apart is planned from the trie and gathered per child.
func TestPartialsBTIApart(t *testing.T) {
	prefix := btiParents(t)[0]
	parent := openTable(t, prefix)
	ranges, err := token.ParseRanges(parent.Partitioner, "(-9000000000000000000,-6000000000000000000],(0,3000000000000000000]")
	if err != nil {
		t.Fatal(err)
	}
	out, reason, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Bounds: Bounds{MaxRuns: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || reason == "" {
		t.Fatalf("%d children (%q), want the two runs apart", len(out), reason)
	}
	for _, p := range out {
		n, err := CountIndexRecords(p.Index)
		if err != nil || n != p.Plan.Partitions || int64(len(p.Index)) != p.IndexLength {
			t.Errorf("child of %d partitions: %d records (%v), %d bytes of %d", p.Plan.Partitions, n, err, len(p.Index), p.IndexLength)
		}
	}
}

// A trie whose paths are not its keys' forms (another sstable's Partitions.db over this
// Data.db, every position the same) is caught where a key is read, and the plan is left to the
// keys (ok false) rather than made from the paths.
func TestBTIPlanDistrustsForeignTrie(t *testing.T) {
	v, _ := version.ParseWritable("da")
	var prefixes []string
	for _, seed := range []uint64{5, 6} {
		res, err := gen.Generate(context.Background(), filepath.Join(t.TempDir(), fmt.Sprint(seed)), gen.Options{Version: v,
			Partitions: 500, PartitionSize: 512, RowSize: 128, Compression: "none", Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		prefixes = append(prefixes, res.Desc.Prefix())
	}
	var pos [2][]int64
	for i, prefix := range prefixes {
		if err := openTable(t, prefix).ScanIndex(func(e *sstable.IndexEntry) error { pos[i] = append(pos[i], e.Position); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(pos[0], pos[1]) {
		t.Skip("the two generated sstables' partitions do not sit at the same positions")
	}
	trie, err := os.ReadFile(prefixes[0] + "-Partitions.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prefixes[1]+"-Partitions.db", trie, 0o644); err != nil {
		t.Fatal(err)
	}
	parent := openTable(t, prefixes[1])
	parts := readAll(t, prefixes[0])
	rng := rand.New(rand.NewPCG(24, 4))
	for _, ranges := range rangesFor(rng, parent.Partitioner, parts)[1:] { // the whole ring reads no key
		ps, err := NewPieces(parent.Partitioner, ranges)
		if err != nil {
			t.Fatal(err)
		}
		if plans, _, _, ok, err := btiPlan(parent, ps, ranges); ok || err != nil {
			t.Errorf("%s: a foreign trie planned %d children (%v)", ranges, len(plans), err)
		}
	}
}
