package stream

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
)

// copyTree copies the regular files under src into dst (a replica of a node's data).
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// One receiver fetches two disjoint ranges of one table from two replicas at once, into one
// directory: the two Fetches never pick the same generation, and together they install
// exactly the partitions of both ranges.
func TestFetchFromTwoSendersIntoOneDir(t *testing.T) {
	ca := newTestCA(t)
	rootA, rootB := t.TempDir(), t.TempDir()
	parents := genTable(t, rootA, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{41, 42, 43, 44, 45, 46}, partitions: 100})
	copyTree(t, rootA, rootB)
	a := startNode(t, Config{}, dirCatalog{rootA}, ca.server(t), "127.0.0.1:0")
	b := startNode(t, Config{}, dirCatalog{rootB}, ca.server(t), "127.0.0.1:0")
	dir := t.TempDir()
	specs := map[*node]string{a: "(-9000000000000000000,0]", b: "(0,9000000000000000000]"}
	results := map[*node]*FetchResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for n, spec := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ranges, _ := token.ParseRanges(token.Murmur3, spec)
			res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
				FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}, nil)
			if err != nil {
				t.Errorf("fetch %s from %s: %v", spec, n.addr, err)
				return
			}
			mu.Lock()
			results[n] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	all := &FetchResult{}
	paths := map[string]bool{}
	for n, res := range results {
		if len(res.SSTables) != len(parents) {
			t.Errorf("from %s: %d sstables, want one per parent (%d)", n.addr, len(res.SSTables), len(parents))
		}
		for _, f := range res.SSTables {
			if paths[f.Path] {
				t.Errorf("two fetches installed %s", f.Path)
			}
			paths[f.Path] = true
		}
		all.SSTables = append(all.SSTables, res.SSTables...)
	}
	union, _ := token.ParseRanges(token.Murmur3, "(-9000000000000000000,9000000000000000000]")
	for _, res := range results {
		checkOnePerParent(t, res)
	}
	checkFetchedPartitions(t, parents, parents, union, all)
	checkNothingHalfInstalled(t, dir, all.SSTables)
}

// A chain: B fetches a range from A into its own table directory, then serves it; C fetches
// from B a part of that range (partial children of B's partial children) and all of it. Every step verifies and holds exactly A's partitions.
func TestFetchChain(t *testing.T) {
	ca := newTestCA(t)
	rootA, rootB := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		table string
		spec  genSpec
	}{
		{"big", genSpec{version: "oa", compression: "lz4", seeds: []uint64{51, 52}}},
		{"bti", genSpec{version: "da", compression: "none", seeds: []uint64{53}}},
	} {
		t.Run(tc.table, func(t *testing.T) {
			parents := genTable(t, rootA, tc.table, tc.spec)
			a := startNode(t, Config{}, dirCatalog{rootA}, ca.server(t), "127.0.0.1:0")
			b := startNode(t, Config{}, dirCatalog{rootB}, ca.server(t), "127.0.0.1:0")
			rAB, _ := token.ParseRanges(token.Murmur3, "(-6000000000000000000,2000000000000000000],(5000000000000000000,7000000000000000000]")
			ab, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
				FetchRequest{Peer: a.addr, Keyspace: "ks", Table: tc.table, Ranges: rAB, Dir: gen.TableDir(rootB, "ks", tc.table)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkFetched(t, parents, rAB, ab)

			rBC, _ := token.ParseRanges(token.Murmur3, "(-3000000000000000000,6000000000000000000]")
			inBoth := token.RangeSet{}
			for _, r := range []string{"(-3000000000000000000,2000000000000000000]", "(5000000000000000000,6000000000000000000]"} {
				rs, _ := token.ParseRanges(token.Murmur3, r)
				inBoth = append(inBoth, rs...)
			}
			bc, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
				FetchRequest{Peer: b.addr, Keyspace: "ks", Table: tc.table, Ranges: rBC, Dir: t.TempDir()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range bc.SSTables {
				if f.Kind != "partial" {
					t.Errorf("B to C, part of the range: %s is %s", f.SSTable, f.Kind)
				}
			}
			var atB []string
			for _, f := range ab.SSTables {
				atB = append(atB, f.Path)
			}
			checkFetchedVia(t, parents, atB, inBoth, bc)

			everything, _ := token.ParseRanges(token.Murmur3, "(0,0]")
			whole, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
				FetchRequest{Peer: b.addr, Keyspace: "ks", Table: tc.table, Ranges: everything, Dir: t.TempDir()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(whole.SSTables) != len(ab.SSTables) {
				t.Errorf("B to C, everything: %d sstables, B holds %d", len(whole.SSTables), len(ab.SSTables))
			}
			for _, f := range whole.SSTables {
				// Every partition of B's sstable is asked for: its files travel as they are, dead
				// regions included.
				if f.Kind != "entire" {
					t.Errorf("B to C, everything: %s is %s, want entire", f.SSTable, f.Kind)
				}
			}
			checkFetchedVia(t, parents, atB, rAB, whole)
		})
	}
}
