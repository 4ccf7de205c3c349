package interop

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/internal/loopfs"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/token"
)

// splitReport is the part of `sluice sstable split --json` the checks use.
type splitReport struct {
	Children []struct {
		Path        string `json:"path"`
		Range       string `json:"range"`
		Partitions  int64  `json:"partitions"`
		DeadBytes   int64  `json:"dead_bytes"`
		Unscannable string `json:"unscannable"`
	} `json:"children"`
	Mode string `json:"mode"`
}

// parent is an sstable to cut: a gen output or a Cassandra-written fixture.
type parent struct {
	Name, Path string
}

func splitParents(t *testing.T) []parent {
	var ps []parent
	for _, g := range generated(t) {
		ps = append(ps, parent{Name: "gen-" + g.Name, Path: g.Path})
	}
	// Cassandra-written md and me sstables (3.x; Cassandra 5.0 still reads them) from the
	// repository's read-only fixtures.
	for _, v := range []string{"md", "me"} {
		for _, tb := range []string{"simple", "clust", "clust_compact", "simple_counter", "clust_counter"} {
			name := "legacy_" + v + "_" + tb
			p := filepath.Join(repo, "..", "shared", "testdata", "cassandra", "apache-legacy", v, "legacy_tables", name, v+"-1-big-Data.db")
			if _, err := os.Stat(p); err == nil {
				ps = append(ps, parent{Name: "legacy-" + name, Path: p})
			}
		}
	}
	seen := map[string]int{}
	for _, f := range fixtures(t) {
		seen[f.Table]++
		ps = append(ps, parent{Name: fmt.Sprintf("cassandra-%s-%d", f.Table, seen[f.Table]), Path: f.Path})
	}
	return ps
}

var (
	xfsOnce   sync.Once
	xfsDir    string
	xfsReason string
)

// xfs loop-mounts a reflink-capable XFS for the reflink mode, once; without root or xfsprogs
// the reflink cases skip with the reason.
func xfs(t *testing.T) (string, string) {
	xfsOnce.Do(func() {
		base := filepath.Join(work, "xfs")
		if err := os.MkdirAll(base, 0o755); err != nil {
			xfsReason = err.Error()
			return
		}
		mnt, unmount, err := loopfs.MountXFS(base, 1<<30)
		if err != nil {
			if errors.Is(err, loopfs.ErrUnavailable) {
				xfsReason = err.Error()
				return
			}
			t.Fatalf("mounting XFS: %v", err)
		}
		xfsDir = mnt
		cleanups = append(cleanups, func() { _ = unmount() })
	})
	return xfsDir, xfsReason
}

// cleanups run after every test (loop mounts).
var cleanups []func()

// Every split mode over every parent (gen outputs of every version and the Cassandra-written
// fixtures): the union of Cassandra's per-partition digests over the children equals the
// parent's, each child holds only partitions of its range, Cassandra's metadata check passes,
// rechunk and rewrite children pass sstableverify -e and read the same sequentially (as
// compaction reads) as through the index. For reflink/copy children Cassandra's verdict is held
// to exactly what the README states: a child whose first partition is at position 0 is like any
// other; one with a dead prefix reads correctly through the index (queries, range reads,
// streaming) and passes sstableverify, but sstableverify -e rejects it with "First row position
// from index != 0" and the sequential read that compaction, sstabledump and sstablepartitions
// use (SSTableSimpleScanner, from position 0) fails on the dead bytes or misreads them.
func TestSplitChildrenReadByCassandra(t *testing.T) {
	need(t)
	defer func() {
		for _, c := range cleanups {
			c()
		}
		cleanups = nil
	}()
	parents := splitParents(t)
	modes := []string{"copy", "rechunk", "rewrite", "reflink"}
	type job struct {
		p        parent
		mode     string
		rep      splitReport
		err      error
		skip     string
		firstPos map[string]int64
	}
	var jobs []*job
	var paths []string
	for _, p := range parents {
		paths = append(paths, p.Path)
		for _, mode := range modes {
			j := &job{p: p, mode: mode, firstPos: map[string]int64{}}
			jobs = append(jobs, j)
			base := filepath.Join(work, "split")
			if mode == "rewrite" && strings.HasPrefix(p.Name, "legacy-") {
				j.skip = "not-run: sluice does not rewrite md/me parents (it writes nb and later; README known gaps)"
				continue
			}
			src := p.Path
			if mode == "reflink" {
				dir, reason := xfs(t)
				if dir == "" {
					j.skip = "not-run: reflink needs a loop-mounted XFS: " + reason
					continue
				}
				base = dir
				// An explicit reflink clones or fails with the reason (it no longer copies
				// silently), so the parent must share the children's file system.
				var err error
				if src, err = copySSTable(p.Path, filepath.Join(dir, p.Name, "parent")); err != nil {
					j.err = err
					continue
				}
			}
			out := filepath.Join(base, p.Name, mode)
			stdout, err := sluice(t, "sstable", "split", src, "--out", out, "--ways", "3", "--mode", mode, "--json")
			if err != nil {
				j.err = err
				continue
			}
			if err := json.Unmarshal([]byte(stdout), &j.rep); err != nil {
				j.err = fmt.Errorf("split --json: %v: %s", err, stdout)
				continue
			}
			for _, c := range j.rep.Children {
				paths = append(paths, c.Path)
				if ks := sluiceKeys(t, c.Path); len(ks) > 0 {
					j.firstPos[c.Path] = ks[0].Position
				}
			}
		}
	}
	views := cassandra(t, paths...)
	filled := map[string]int{}
	for _, j := range jobs {
		t.Run(j.p.Name+"/"+j.mode, func(t *testing.T) {
			if j.skip != "" {
				t.Skip(j.skip)
			}
			if j.err != nil {
				t.Fatal(j.err)
			}
			pv := views[j.p.Path]
			if !pv.readOK() {
				t.Fatalf("Cassandra cannot read the parent: %s", pv.Read)
			}
			pt, err := sstable.Open(j.p.Path)
			if err != nil {
				t.Fatal(err)
			}
			part := pt.Partitioner
			pt.Close()
			var children []*view
			for _, c := range j.rep.Children {
				v := views[c.Path]
				children = append(children, v)
				if !v.readOK() {
					t.Errorf("Cassandra cannot read child %s: %s", c.Path, v.Read)
					continue
				}
				if !v.metaOK() {
					t.Errorf("Cassandra's metadata check of child %s: %s", c.Path, v.Meta)
				}
				rowIndexOK(t, v)
				r, err := token.ParseRanges(part, c.Range)
				if err != nil {
					t.Fatal(err)
				}
				sameDigests(t, "child "+filepath.Base(c.Path)+" of range "+c.Range, inRanges(t, pv, r, part), digests(t, v))
				if !strings.HasPrefix(v.Basic, "ok") {
					t.Errorf("sstableverify rejects child %s: %s", c.Path, v.Basic)
				}
				zeroCopy := j.mode == "copy" || j.mode == "reflink"
				first := j.firstPos[c.Path]
				// A compaction (Cassandra 5.0's sequential read from position 0) must see exactly
				// what the index sees, whatever the mode: a dead head is filled with empty
				// partitions, which compaction drops (the harness counts them apart).
				if !v.scanAgrees() {
					t.Errorf("child %s (%s, unscannable %q): Cassandra's sequential read (compaction's) differs from its index-driven read: %s / %s",
						c.Path, j.mode, c.Unscannable, v.Scan, v.Read)
				}
				if zeroCopy && first > 0 {
					filled[j.mode]++
					// Stock verify still wants the first partition at position 0 (FORMAT.md §5 rule 9).
					if !strings.Contains(v.Extended, "First row position from index != 0: "+fmt.Sprint(first)) {
						t.Errorf("sstableverify -e on child %s with a %d-byte filled head: got %q, the README says it rejects it with \"First row position from index != 0\"", c.Path, first, v.Extended)
					}
					t.Logf("child %s, filled head %d bytes: sequential read: %s", filepath.Base(c.Path), first, tail(v.Scan, 240))
				} else if !strings.HasPrefix(v.Extended, "ok") {
					t.Errorf("sstableverify -e rejects child %s (first partition at %d): %s", c.Path, first, v.Extended)
				}
			}
			sameDigests(t, "union of the children", digests(t, pv), digests(t, children...))
		})
	}
	t.Logf("children with a filled dead head, by mode: %v", filled)
}

// copySSTable copies every component of the sstable whose Data.db is data into dir and returns
// the copy's Data.db path.
func copySSTable(data, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	files, err := filepath.Glob(strings.TrimSuffix(data, "Data.db") + "*")
	if err != nil {
		return "", err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, filepath.Base(data)), nil
}
