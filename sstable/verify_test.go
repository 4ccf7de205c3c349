package sstable

import (
	"fmt"
	"github.com/sluicedb/sluice/sstable/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
)

// Every Cassandra-written fixture verifies clean, with and without the row pass.
func TestVerifyAcceptsEveryFixture(t *testing.T) {
	for _, f := range fixtures.All(t) {
		for _, ext := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/extended=%v", f.Name, ext), func(t *testing.T) {
				rep, err := Verify(f.Path("Data.db"), VerifyOptions{Extended: ext})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range rep.Problems {
					t.Errorf("problem: %s", p)
				}
				if want := int64(len(f.Keys(t))); rep.Partitions != want {
					t.Errorf("verified %d partitions, want %d", rep.Partitions, want)
				}
				if ext && rep.Rows == 0 {
					t.Error("extended verify read no rows")
				}
			})
		}
	}
}

// With ranges, a partition outside them is a problem naming it, in the partition index, once;
// ranges that hold every partition leave the report clean.
func TestVerifyRanges(t *testing.T) {
	for _, f := range pick(t, corruptionFixtures) {
		t.Run(f.Name, func(t *testing.T) {
			t0, err := Open(f.Path("Data.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer t0.Close()
			var toks []token.Token
			if err := t0.ScanPartitions(func(p *Partition) error { toks = append(toks, p.Token); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(toks) < 3 || toks[0].Kind != token.KindMurmur3 {
				t.Skip("needs three Murmur3 partitions")
			}
			all := token.RangeSet{{Left: t0.Partitioner.MinToken(), Right: t0.Partitioner.MinToken()}}
			if rep, err := Verify(f.Path("Data.db"), VerifyOptions{Ranges: all}); err != nil || !rep.OK {
				t.Fatalf("the whole ring: %v %v", err, rep.Problems)
			}
			// Every partition but the second.
			gap := token.RangeSet{{Left: toks[1], Right: toks[0]}}
			rep, err := Verify(f.Path("Data.db"), VerifyOptions{Ranges: gap})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "partition 1 ") || !strings.Contains(rep.Problems[0].Message, "outside the ranges") {
				t.Fatalf("ranges without partition 1: %v", rep.Problems)
			}
		})
	}
}

// copyFixture copies a fixture's components into a temporary directory (fixtures are read-only).
func copyFixture(t testing.TB, f fixtures.SSTable) string {
	t.Helper()
	dir := t.TempDir()
	matches, err := filepath.Glob(f.Prefix + "-*")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(m)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, filepath.Base(f.Prefix))
}

// corruptionFixtures are one of each shape: multi-chunk Murmur3 BIG, BIG with promoted
// indexes, old-format md, uncompressed md with CRC.db, and BTI with and without row index.
var corruptionFixtures = []string{
	"sstable-transformer/oa/spark_test.testtable_10k/oa-13-big",
	"apache-legacy/nb/legacy_tables/legacy_nb_clust/nb-1-big",
	"apache-legacy/md/legacy_tables/legacy_md_simple/md-1-big",
	"sstable-to-arrow/md/datasets.iris/md-1-big",
	"apache-legacy/da/legacy_tables/legacy_da_clust/da-1-bti",
	"apache-legacy/da/legacy_tables/legacy_da_simple/da-1-bti",
}

func pick(t testing.TB, names []string) []fixtures.SSTable {
	var out []fixtures.SSTable
	for _, f := range fixtures.All(t) {
		for _, n := range names {
			if f.Name == n {
				out = append(out, f)
			}
		}
	}
	if len(out) != len(names) {
		t.Fatalf("found %d of %d named fixtures", len(out), len(names))
	}
	return out
}

// mustFailNaming runs an extended verify (and, separately, the error paths of Verify) and checks
// that it fails with a problem naming the damaged component.
func mustFailNaming(t *testing.T, prefix, component, what string) {
	t.Helper()
	rep, err := Verify(prefix, VerifyOptions{Extended: true})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if rep.OK {
		t.Fatalf("%s: verify passed", what)
	}
	for _, p := range rep.Problems {
		if strings.HasSuffix(p.File, component) {
			return
		}
	}
	t.Errorf("%s: no problem names %s; got %v", what, component, rep.Problems)
}

// A single flipped byte anywhere in any component is detected and blamed on that component.
// Components without checksums of their own are covered by cross-checks: Index.db against
// Data.db keys, Summary.db and Filter.db against Index.db, TOC.txt against the directory.
func TestVerifyDetectsOneFlippedByteInEachComponent(t *testing.T) {
	for _, f := range pick(t, corruptionFixtures) {
		comps, _ := filepath.Glob(f.Prefix + "-*")
		for _, path := range comps {
			comp := strings.TrimPrefix(filepath.Base(path), filepath.Base(f.Prefix)+"-")
			if comp == "keys.tsv" {
				continue
			}
			size := fileSize(t, path)
			if size == 0 {
				continue // an empty Rows.db (no partition has a row index) has no byte to flip
			}
			for _, off := range flipOffsets(comp, size) {
				t.Run(fmt.Sprintf("%s/%s@%d", f.Name, comp, off), func(t *testing.T) {
					prefix := copyFixture(t, f)
					p := prefix + "-" + comp
					b, _ := os.ReadFile(p)
					b[off] ^= flipMask(comp)
					if err := os.WriteFile(p, b, 0o644); err != nil {
						t.Fatal(err)
					}
					mustFailNaming(t, prefix, blameFor(comp), "flip")
				})
			}
		}
	}
}

// Truncating any component at several offsets is detected, never a panic.
func TestVerifyDetectsTruncation(t *testing.T) {
	for _, f := range pick(t, corruptionFixtures) {
		comps, _ := filepath.Glob(f.Prefix + "-*")
		for _, path := range comps {
			comp := strings.TrimPrefix(filepath.Base(path), filepath.Base(f.Prefix)+"-")
			if comp == "keys.tsv" {
				continue
			}
			size := fileSize(t, path)
			for _, cut := range []int64{0, 1, size / 2, size - 1} {
				if cut < 0 || cut >= size {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s@%d", f.Name, comp, cut), func(t *testing.T) {
					prefix := copyFixture(t, f)
					if err := os.Truncate(prefix+"-"+comp, cut); err != nil {
						t.Fatal(err)
					}
					mustFailNaming(t, prefix, blameFor(comp), "truncate")
				})
			}
		}
	}
}

func fileSize(t *testing.T, p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// flipOffsets picks where to flip a byte. TOC.txt and Digest.crc32 are text: flipping the
// final newline of TOC.txt only renames nothing, so flip inside a name.
func flipOffsets(comp string, size int64) []int64 {
	if size <= 2 {
		return []int64{0}
	}
	return []int64{0, size / 3, size / 2, size - 2}
}

// flipMask keeps text components text-like so the flip is a content change, not just garbage.
func flipMask(comp string) byte {
	if comp == "TOC.txt" || comp == "Digest.crc32" {
		return 0x01
	}
	return 0x40
}

// blameFor is the component a damaged file must be reported against. A flipped Data.db byte
// is caught by the chunk CRC or Digest; the others by their own checks.
func blameFor(comp string) string { return comp }

// FuzzVerify damages one byte (or cuts) one component of a small BTI and a small BIG fixture:
// Verify must report, never panic.
func FuzzVerify(f *testing.F) {
	f.Add(uint8(0), uint32(10), byte(0xff), false)
	f.Add(uint8(3), uint32(0), byte(0x01), true)
	fs := pick(f, []string{"apache-legacy/da/legacy_tables/legacy_da_clust/da-1-bti", "apache-legacy/nb/legacy_tables/legacy_nb_clust/nb-1-big"})
	f.Fuzz(func(t *testing.T, which uint8, off uint32, x byte, cut bool) {
		fx := fs[int(which)%len(fs)]
		prefix := copyFixture(t, fx)
		comps, _ := filepath.Glob(prefix + "-*")
		sort.Strings(comps)
		p := comps[int(which/2)%len(comps)]
		b, _ := os.ReadFile(p)
		if len(b) == 0 {
			return
		}
		at := int(off) % len(b)
		if cut {
			b = b[:at]
		} else {
			b[at] ^= x | 1
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(prefix, VerifyOptions{Extended: true}); err != nil {
			t.Fatal(err)
		}
	})
}

// An index entry without a promoted index holds an empty, non-nil Promoted slice; after a wide
// partition the pending copy still has capacity, and it must not be taken for a promoted index
// (Cassandra-written BIG files with a wide partition followed by small ones failed `verify
// --extended` with "promoted index header length 0"; found by the interop suite).
func TestPendingPartitionWithoutPromotedIndex(t *testing.T) {
	var pp pendingPartition
	pp.set(&Partition{Key: []byte("wide"), Promoted: []byte{7, 0x80, 1, 2, 3}}, false, true, "Index.db", 0)
	if !pp.hasPromoted {
		t.Fatal("a promoted index was not kept")
	}
	idx := []byte{0, 1, 2}
	pp.set(&Partition{Key: []byte("small"), Promoted: idx[3:]}, false, true, "Index.db", 0)
	if pp.hasPromoted {
		t.Error("an empty promoted index after a wide partition is taken for one")
	}
}
