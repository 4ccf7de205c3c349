package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/gen"
)

func TestCassandraLoadPlan(t *testing.T) {
	snap := rebuildSnapshot()
	up, unavailable := upSidecars(snap, "self", rebuildMembers())
	jobs, err := planCassandraLoad(snap, up, unavailable, "self", []string{"both"})
	if err != nil {
		t.Fatal(err)
	}
	// Every range has its two dc1 replicas and the dc2 one; each replica gets its own ranges.
	var all []string
	byReplica := map[string]cassLoadJob{}
	for _, j := range jobs {
		byReplica[j.Replica] = j
		all = append(all, j.Replica)
	}
	if len(jobs) != 4 {
		t.Fatalf("jobs for replicas %v, want A, B, C and the local node", all)
	}
	if j := byReplica[hostL]; j.Sidecar != "self" || j.Ranges.String() != "(-9223372036854775808,-9223372036854775808]" {
		t.Errorf("local: %+v", j)
	}
	if j := byReplica[hostA]; j.Sidecar != "sa" || j.Why != "" || len(j.Ranges) == 0 {
		t.Errorf("A: %+v", j)
	}
	if j := byReplica[hostC]; j.Sidecar != "" || j.Why != "Cassandra DOWN" {
		t.Errorf("C (down): %+v", j)
	}
	// dc1's replicas together hold every range twice: each range is in exactly two of them.
	r, _, _ := snap.Ring()
	s, _ := snap.Strategy("both")
	for _, rr := range ring.RangeOwners(r, s) {
		n := 0
		for _, h := range []string{hostA, hostB, hostC} {
			if byReplica[h].Ranges.Contains(rr.Range.Right) {
				n++
			}
		}
		if n != 2 {
			t.Errorf("range %v is sent to %d dc1 replicas, want 2", rr.Range, n)
		}
	}
	if _, err := planCassandraLoad(snap, up, unavailable, "self", []string{"system"}); err == nil {
		t.Error("a keyspace sluice cannot place was planned")
	}
}

func TestCassandraLoadCollectAndStage(t *testing.T) {
	snap := rebuildSnapshot()
	src := t.TempDir()
	generate(t, src, "both", "t", 1)
	generate(t, src, "both", "t", 2)
	tdir := gen.TableDir(src, "both", "t")
	flat := t.TempDir()
	generate(t, flat, "both", "t", 3)
	flatDir := gen.TableDir(flat, "both", "t")

	// A tree, a table directory and a flat directory with names.
	for _, tc := range []struct {
		req  adminapi.CassandraLoadRequest
		dirs int
	}{
		{adminapi.CassandraLoadRequest{Dirs: []string{src}}, 1},
		{adminapi.CassandraLoadRequest{Dirs: []string{tdir}}, 1},
		{adminapi.CassandraLoadRequest{Dirs: []string{tdir, flatDir}, Keyspace: "both", Table: "t"}, 2},
	} {
		tables, err := collectLoad(snap, tc.req)
		if err != nil || len(tables) != 1 || tables[0].Keyspace != "both" || tables[0].Table != "t" || tables[0].ID != sidecarTableID || len(tables[0].Dirs) != tc.dirs {
			t.Fatalf("%+v: %+v %v", tc.req, tables, err)
		}
	}
	for _, tc := range []struct {
		req  adminapi.CassandraLoadRequest
		want string
	}{
		{adminapi.CassandraLoadRequest{}, "no directory"},
		{adminapi.CassandraLoadRequest{Dirs: []string{"relative"}}, "absolute"},
		{adminapi.CassandraLoadRequest{Dirs: []string{t.TempDir()}}, "holds no sstable"},
		{adminapi.CassandraLoadRequest{Dirs: []string{tdir}, Keyspace: "both"}, "go together"},
		{adminapi.CassandraLoadRequest{Dirs: []string{tdir}, Keyspace: "both", Table: "nope"}, "no table both.nope"},
		{adminapi.CassandraLoadRequest{Dirs: []string{tdir}, Keyspace: "system_auth", Table: "roles"}, "system keyspace"},
	} {
		_, err := collectLoad(snap, tc.req)
		var br badRequest
		if !errors.As(err, &br) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a bad request saying %q", tc.req, err, tc.want)
		}
	}

	// Staging links every sstable of both directories under fresh generations; the sources
	// stay; the catalog serves the staged ones only under the source id.
	tables, _ := collectLoad(snap, adminapi.CassandraLoadRequest{Dirs: []string{tdir, flatDir}, Keyspace: "both", Table: "t"})
	root := filepath.Join(t.TempDir(), "load-x")
	staged, err := stageLoad(root, tables)
	if err != nil {
		t.Fatal(err)
	}
	dst := staged[[2]string{"both", "t"}]
	if dst != filepath.Join(root, "both", "t-"+sidecarTableID) {
		t.Fatalf("staged into %s", dst)
	}
	ls, _ := catalog.ListLive(dst)
	if len(ls) != 3 {
		t.Fatalf("staged %d sstables, want 3", len(ls))
	}
	srcData, _ := os.Stat(filepath.Join(flatDir, dirEntry(t, flatDir, "Data.db")))
	linked := false
	for _, s := range ls {
		if fi, err := os.Stat(s.Desc.Path("Data.db")); err == nil && os.SameFile(fi, srcData) {
			linked = true
		}
	}
	if !linked {
		t.Error("the staged sstables are not hard links of the source")
	}
	if l, _ := catalog.ListLive(tdir); len(l) != 2 {
		t.Errorf("the source lost sstables: %d", len(l))
	}
	cat := catalog.New(nil, zerolog.Nop())
	if _, _, err := cat.HoldSource("x", "both", "t"); !errors.Is(err, catalog.ErrUnknownSource) {
		t.Errorf("an unregistered source: %v", err)
	}
	if err := cat.AddSource("x", staged); err != nil {
		t.Fatal(err)
	}
	if err := cat.AddSource("x", staged); err == nil {
		t.Error("a source registered twice")
	}
	ds, release, err := cat.HoldSource("x", "both", "t")
	if err != nil || len(ds) != 3 {
		t.Fatalf("HoldSource: %d %v", len(ds), err)
	}
	release()
	cat.RemoveSource("x")
	if _, _, err := cat.HoldSource("x", "both", "t"); !errors.Is(err, catalog.ErrUnknownSource) {
		t.Errorf("a removed source: %v", err)
	}

	// A symlinked component is refused.
	evil := t.TempDir()
	generate(t, evil, "both", "t", 4)
	ed := gen.TableDir(evil, "both", "t")
	f := filepath.Join(ed, dirEntry(t, ed, "Filter.db"))
	if err := os.Rename(f, f+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f+".real", f); err != nil {
		t.Fatal(err)
	}
	if _, err := stageLoad(filepath.Join(t.TempDir(), "load-y"), []loadTable{{Keyspace: "both", Table: "t", ID: sidecarTableID, Dirs: []string{ed}}}); err == nil {
		t.Error("a symlinked component was staged")
	}
}

// dirEntry is the name of the one file of dir ending in suffix.
func dirEntry(t *testing.T, dir, suffix string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			return e.Name()
		}
	}
	t.Fatalf("no *%s in %s", suffix, dir)
	return ""
}
