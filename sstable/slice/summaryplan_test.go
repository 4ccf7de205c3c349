package slice

import (
	"bytes"
	"context"
	"fmt"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// genOA generates an oa parent of o's shape and opens it.
func genOA(t *testing.T, o gen.Options) *sstable.Table {
	t.Helper()
	o.Version, _ = version.ParseWritable("oa")
	res, err := gen.Generate(context.Background(), filepath.Join(t.TempDir(), "oa"), o)
	if err != nil {
		t.Fatal(err)
	}
	return openTable(t, res.Desc.Prefix())
}

// summaryParent is a BIG parent whose Summary.db has enough samples for summaryPlan, and its
// tokens in index order.
func summaryParent(t *testing.T) (*sstable.Table, []token.Token) {
	t.Helper()
	parent := genOA(t, gen.Options{Partitions: 20000, PartitionSize: 256, RowSize: 64, Seed: 5})
	var toks []token.Token
	if err := parent.ScanPartitions(func(p *sstable.Partition) error { toks = append(toks, p.Token); return nil }); err != nil {
		t.Fatal(err)
	}
	return parent, toks
}

// piecesOf parses a Murmur3 range spec and its pieces.
func piecesOf(t *testing.T, spec string) (token.RangeSet, *Pieces) {
	t.Helper()
	ranges, err := token.ParseRanges(token.Murmur3, spec)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := NewPieces(token.Murmur3, ranges)
	if err != nil {
		t.Fatal(err)
	}
	return ranges, ps
}

// measuredPlan is planMeasured's plan in one pass, without the slices' record lengths, which a
// plan from the summary leaves to its caller.
func measuredPlan(t *testing.T, parent *sstable.Table, ps *Pieces, ranges token.RangeSet) ([]ChildPlan, int64) {
	t.Helper()
	want, n, err := planMeasuredIn(parent, ps, ranges, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i].IndexBytes = 0
	}
	return want, n
}

// A plan from Summary.db is the plan of a pass over every entry, for ranges whose ends fall
// everywhere a binary search over samples and a scan from one can go wrong: on a sample's
// token, one before or after it, on the first and last partitions, below and above every
// token, the whole ring, wrapping ranges, adjacent ranges and ranges holding nothing.
func TestSummaryPlanIsOnePass(t *testing.T) {
	parent, toks := summaryParent(t)
	sum, err := readSummary(parent)
	if err != nil {
		t.Fatal(err)
	}
	iv := int(sum.MinIndexInterval)
	if len(sum.Entries) < 100 || sum.SamplingLevel != bigindex.BaseSamplingLevel {
		t.Fatalf("summary of %d samples at level %d", len(sum.Entries), sum.SamplingLevel)
	}
	n := len(toks)
	at := func(i int) string { return toks[i].String() }
	below := func(i int) string { return fmt.Sprint(toks[i].Long - 1) }
	specs := []string{
		"(-9000000000000000000,-1000000000000000000]",
		"(-9000000000000000000,-6000000000000000000],(0,3000000000000000000],(5000000000000000000,-9100000000000000000]",
		"(-100,-100]", // the whole ring
		fmt.Sprintf("(%s,%s]", at(5*iv), at(9*iv)),                         // on samples
		fmt.Sprintf("(%s,%s]", below(5*iv), below(9*iv)),                   // just below samples
		fmt.Sprintf("(%s,%s]", at(5*iv+1), at(9*iv-1)),                     // just after, just before
		fmt.Sprintf("(%s,%s]", below(0), at(0)),                            // the first partition alone
		fmt.Sprintf("(%s,%s]", at(n-2), at(n-1)),                           // the last alone
		fmt.Sprintf("(%s,-9223372036854775808]", at(n-iv)),                 // to the ring's end
		fmt.Sprintf("(%s,%s]", at(n-1), below(0)),                          // wraps, holding nothing
		fmt.Sprintf("(%s,%s],(%s,%s]", at(10), at(300), at(300), at(4000)), // adjacent
		fmt.Sprintf("(%s,%s]", at(77), below(78)),                          // nothing between two partitions
		fmt.Sprintf("(%s,%s]", at(n-3*iv/2), at(iv/2)),                     // wraps through the end of the last interval
	}
	for _, spec := range specs {
		ranges, ps := piecesOf(t, spec)
		want, wantN := measuredPlan(t, parent, ps, ranges)
		got, gotN, ok := summaryPlan(parent, ps, ranges)
		if !ok {
			t.Fatalf("%s: the summary did not serve", spec)
		}
		if gotN != wantN || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %d partitions, want %d\n got %+v\nwant %+v", spec, gotN, wantN, got, want)
		}
	}
}

// A summary that misleads never yields a wrong slice: one whose samples are not where their
// keys are, one missing a sample (every ordinal after it moves) or downsampled is refused and
// the plan comes from the whole index; a sample at another entry than its ordinal's, its key
// consistent with its place, plans wrong counts, which the span reader refuses, naming
// Index.db, before anything is sent.
func TestSummaryPlanMisleadingSummary(t *testing.T) {
	parent, toks := summaryParent(t)
	spec := fmt.Sprintf("(%s,%s]", toks[1000].String(), toks[9000].String())
	ranges, _ := token.ParseRanges(token.Murmur3, spec)
	ps, _ := NewPieces(parent.Partitioner, ranges)
	want, _ := measuredPlan(t, parent, ps, ranges)
	original, err := readSummary(parent)
	if err != nil {
		t.Fatal(err)
	}
	restore := func() { rewriteSummary(t, parent, func(s *bigindex.Summary) { *s = *original }) }
	for _, tc := range []struct {
		name string
		edit func(*bigindex.Summary)
	}{
		{"offsets one byte off", func(s *bigindex.Summary) {
			for i := range s.Entries {
				s.Entries[i].IndexPosition++
			}
		}},
		{"a sample missing", func(s *bigindex.Summary) {
			s.Entries = append(s.Entries[:3:3], s.Entries[4:]...)
		}},
		{"downsampled", func(s *bigindex.Summary) { s.SamplingLevel-- }},
	} {
		rewriteSummary(t, parent, tc.edit)
		if _, _, ok := summaryPlan(parent, ps, ranges); ok {
			t.Errorf("%s: the summary served", tc.name)
		}
		partials, _, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Bounds: Bounds{MaxDeadRatio: -1}, Format: IndexBig})
		if err != nil || len(partials) != 1 || !reflect.DeepEqual(zeroBytes(partials[0].Plan), zeroBytes(Merge(want))) {
			t.Errorf("%s: %d partials (%v), not the whole index's plan", tc.name, len(partials), err)
		}
		restore()
	}

	// Samples 7 and 8 each one entry later, keys and offsets consistent: the binary search
	// lands on them, and the ordinals scanned from them are one short.
	sum, _ := readSummary(parent)
	iv := int(sum.MinIndexInterval)
	var entries []bigindex.Entry
	it := 0
	if err := parent.ScanPartitions(func(p *sstable.Partition) error {
		if it == 7*iv+1 || it == 8*iv+1 {
			entries = append(entries, bigindex.Entry{Key: append([]byte(nil), p.Key...), Offset: p.IndexPos})
		}
		it++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rewriteSummary(t, parent, func(s *bigindex.Summary) {
		for k, j := range []int{7, 8} {
			s.Entries[j].Key, s.Entries[j].IndexPosition = entries[k].Key, entries[k].Offset
		}
	})
	defer restore()
	edgeSpec := fmt.Sprintf("(%s,%s]", toks[7*iv+5].String(), toks[15000].String())
	ranges, _ = token.ParseRanges(token.Murmur3, edgeSpec)
	ps, _ = NewPieces(parent.Partitioner, ranges)
	want, _ = measuredPlan(t, parent, ps, ranges)
	partials, _, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Bounds: Bounds{MaxDeadRatio: -1}, Format: IndexBig})
	if err != nil || len(partials) != 1 {
		t.Fatalf("%d partials: %v", len(partials), err)
	}
	if reflect.DeepEqual(zeroBytes(partials[0].Plan), zeroBytes(Merge(want))) {
		t.Fatalf("the shifted samples planned right: the test misses its case")
	}
	r, err := IndexReader(parent, partials[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "Index.db") {
		t.Fatalf("a plan from shifted samples read without naming Index.db: %v", err)
	}
}

func zeroBytes(p ChildPlan) ChildPlan { p.IndexBytes = 0; return p }

// On every fixture whose Summary.db Cassandra wrote with enough samples to serve (the 10,000
// partitions of sstable-transformer's testtable_10k), the plan from the summary is the plan of
// a pass over every entry, for ranges whose ends fall on samples, next to them and between.
func TestSummaryPlanOnCassandraSummaries(t *testing.T) {
	served := 0
	for _, f := range fixtures.All(t) {
		if f.Format != "big" {
			continue
		}
		parent := openTable(t, f.Prefix)
		var toks []token.Token
		if err := parent.ScanPartitions(func(p *sstable.Partition) error { toks = append(toks, cloneToken(p.Token)); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(toks) < 4096 {
			continue
		}
		at := func(i int) string { return toks[i].String() }
		for _, spec := range []string{
			fmt.Sprintf("(%s,%s]", at(128), at(1280)),
			fmt.Sprintf("(%s,%s]", at(127), at(1281)),
			fmt.Sprintf("(%s,%s],(%s,%s]", at(1000), at(2000), at(len(toks)-300), at(64)),
			fmt.Sprintf("(%s,%s]", at(0), at(0)),
		} {
			ranges, err := token.ParseRanges(parent.Partitioner, spec)
			if err != nil {
				t.Fatal(err)
			}
			ps, _ := NewPieces(parent.Partitioner, ranges)
			want, wantN := measuredPlan(t, parent, ps, ranges)
			got, n, ok := summaryPlan(parent, ps, ranges)
			if !ok {
				t.Fatalf("%s %s: the summary did not serve", f.Name, spec)
			}
			if n != wantN || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %s: %d partitions, want %d\n got %+v\nwant %+v", f.Name, spec, n, wantN, got, want)
			}
			served++
		}
	}
	if served == 0 {
		t.Fatal("no fixture of 4,096 partitions or more: the test tests nothing")
	}
}

// Index.db entries out of token order inside an edge scan make the summary refuse to plan,
// also near the index's end, where the scan runs out of entries instead of meeting one above
// the range's end: the plan then comes from the whole index, whose pass reports the disorder.
func TestSummaryPlanRefusesDisorderedEntries(t *testing.T) {
	parent, toks := summaryParent(t)
	n := len(toks)
	var offs []int64
	if err := parent.ScanPartitions(func(p *sstable.Partition) error {
		if p.Ordinal >= int64(n-4) && p.Ordinal <= int64(n-2) {
			offs = append(offs, p.IndexPos)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(parent.Path(descriptor.Index))
	if err != nil {
		t.Fatal(err)
	}
	a, b := index[offs[0]:offs[1]], index[offs[1]:offs[2]]
	if len(a) != len(b) {
		t.Skipf("entries of %d and %d bytes cannot swap in place", len(a), len(b))
	}
	swapped := append(append(bytes.Clone(b), a...), index[offs[2]:]...)
	copy(index[offs[0]:], swapped)
	if err := os.WriteFile(parent.Path(descriptor.Index), index, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{
		fmt.Sprintf("(%s,%s]", toks[n-300].String(), toks[n-2].String()),
		fmt.Sprintf("(%s,%s]", toks[n-300].String(), toks[n-1].String()),
	} {
		ranges, ps := piecesOf(t, spec)
		if _, _, ok := summaryPlan(parent, ps, ranges); ok {
			t.Errorf("%s: planned across entries out of order", spec)
		}
	}
}
