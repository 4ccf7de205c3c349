package interop

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/token"
)

// Every sstable CQLSSTableWriter wrote (every scalar type, collections frozen and not, UDTs,
// tuples, statics, TTLs, row/range/partition/cell deletions, DESC clustering, compound partition
// keys, wide partitions, BIG oa and nb, BTI da, LZ4/Snappy/Deflate/Zstd/none): Cassandra accepts
// its own file, `sluice sstable verify --extended` accepts it, and `sluice sstable keys` lists
// exactly the partitions Cassandra's scanner returns, in its order, with its tokens.
func TestCassandraFixturesReadBySluice(t *testing.T) {
	need(t)
	fs := fixtures(t)
	var paths []string
	for _, f := range fs {
		paths = append(paths, f.Path)
	}
	views := cassandra(t, paths...)
	seen := map[string]int{}
	for _, f := range fs {
		seen[f.Table]++
		t.Run(f.Table+"/"+strings.TrimSuffix(filepath.Base(f.Path), "-Data.db"), func(t *testing.T) {
			acceptedWhole(t, views[f.Path])
			if out, err := sluice(t, "sstable", "verify", "--extended", f.Path); err != nil {
				t.Errorf("sluice verify --extended: %v\n%s", err, out)
			}
			sameKeys(t, views[f.Path], sluiceKeys(t, f.Path))
		})
	}
	for _, n := range fixNotes {
		t.Logf("CQLSSTableWriter: %s", n)
	}
}

// Repair's row reconciliation against Cassandra's: for every fixture table written as several
// sstables (inserts, then appends; inserts, then row, range, partition and cell deletions;
// rows, then static-only partitions), Cassandra merges them (UnfilteredPartitionIterators.merge,
// the reconciliation reads and compaction use) and writes the result as one sstable. The Merkle
// tree repair builds over the separate sstables must equal the one over Cassandra's merge, at a
// depth where every leaf holds a few partitions. Without the last sstable the trees must differ
// (the check can fail).
func TestRepairReconcilesAsCassandra(t *testing.T) {
	need(t)
	names, tables := byTable(fixtures(t))
	full := token.Range{Left: token.Murmur3.MinToken(), Right: token.Murmur3.MinToken()}
	for _, name := range names {
		fs := tables[name]
		if len(fs) < 2 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var paths []string
			for _, f := range fs {
				paths = append(paths, f.Path)
			}
			out := filepath.Join(work, "merged", name)
			stdout, err := harness(t, append([]string{"merge", "--out", out}, paths...)...)
			if err != nil {
				t.Fatal(err)
			}
			merged := dataFiles(t, out)
			if len(merged) != 1 {
				t.Fatalf("Cassandra's merge wrote %d sstables: %s", len(merged), stdout)
			}
			tree := func(paths []string) *repair.Tree {
				var ts []*sstable.Table
				for _, p := range paths {
					tb, err := sstable.Open(p)
					if err != nil {
						t.Fatal(err)
					}
					defer tb.Close()
					ts = append(ts, tb)
				}
				trees, err := repair.Build(context.Background(), ts, []repair.Spec{{Range: full, Depth: 8}})
				if err != nil {
					t.Fatalf("repair.Build over %d sstables: %v", len(paths), err)
				}
				return trees[0]
			}
			sluiceTree, cassandraTree := tree(paths), tree(merged)
			diff, err := repair.Diff(sluiceTree, cassandraTree)
			if err != nil {
				t.Fatal(err)
			}
			if len(diff) > 0 {
				t.Errorf("repair's reconciliation of %d sstables differs from Cassandra's merge in %d leaf range(s): %v", len(paths), len(diff), diff[:min(len(diff), 5)])
			}
			if short, err := repair.Diff(tree(paths[:len(paths)-1]), cassandraTree); err != nil || len(short) == 0 {
				t.Errorf("without %s the trees still agree (%v): the check cannot fail", filepath.Base(paths[len(paths)-1]), err)
			}
		})
	}
}
