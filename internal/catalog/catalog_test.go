package catalog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
)

func TestHoldKeepsTheSSTablesReadableAfterTheOriginalsAreDeleted(t *testing.T) {
	root := t.TempDir()
	a := generate(t, root, "ks", "t", 1)
	b := generate(t, root, "ks", "t", 2)
	dir := a.Desc.Dir
	orig := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if orig[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}

	cat := New([]string{root}, zerolog.Nop())
	held, release, err := cat.Hold("ks", "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 2 || held[0].ID != a.Desc.ID || held[1].ID != b.Desc.ID || held[0].Dir != held[1].Dir {
		t.Fatalf("held %v", held)
	}
	snap := held[0].Dir
	if filepath.Dir(snap) != filepath.Join(dir, SnapshotsDir) || !strings.HasPrefix(filepath.Base(snap), HoldPrefix) {
		t.Fatalf("snapshot in %s", snap)
	}

	// Compaction deletes the originals.
	for name := range orig {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range orig {
		got, err := os.ReadFile(filepath.Join(snap, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s through the snapshot: %v", name, err)
		}
	}
	for _, d := range held {
		tbl, err := sstable.Open(d.Path(descriptor.Data))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		tbl.Close()
	}

	release()
	release() // idempotent
	if _, err := os.Stat(snap); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("snapshot survives release: %v", err)
	}
}

func TestHoldLinksOnlyLiveSSTablesOfEveryDataDirectory(t *testing.T) {
	roots := []string{t.TempDir(), t.TempDir()}
	a := generate(t, roots[0], "ks", "t", 1)
	b := generate(t, roots[1], "ks", "t", 2)
	dead := generate(t, roots[1], "ks", "t", 3)
	if err := os.Remove(dead.Desc.Path(descriptor.TOC)); err != nil {
		t.Fatal(err)
	}
	generate(t, roots[0], "ks", "other", 4)

	held, release, err := New(roots, zerolog.Nop()).Hold("ks", "t")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if len(held) != 2 || filepath.Dir(filepath.Dir(held[0].Dir)) != a.Desc.Dir || filepath.Dir(filepath.Dir(held[1].Dir)) != b.Desc.Dir {
		t.Fatalf("held %v", held)
	}
	// Every component the TOC lists is linked, and nothing of the sstable without a TOC.
	for i, d := range held {
		src := []gen.Result{a, b}[i].Desc
		toc, err := os.ReadFile(src.Path(descriptor.TOC))
		if err != nil {
			t.Fatal(err)
		}
		comps, err := descriptor.ParseTOC(toc)
		if err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(d.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != len(comps) {
			t.Fatalf("%s: %d files for %d components", d.Dir, len(ents), len(comps))
		}
		for _, c := range comps {
			si, err1 := os.Stat(src.Path(c))
			di, err2 := os.Stat(d.Path(c))
			if err1 != nil || err2 != nil || !os.SameFile(si, di) {
				t.Fatalf("%s: not a hard link of the original: %v %v", c, err1, err2)
			}
		}
	}
}

func TestHoldSkipsAnSSTableBeingDeletedAndRejectsABrokenOne(t *testing.T) {
	root := t.TempDir()
	a := generate(t, root, "ks", "t", 1)
	b := generate(t, root, "ks", "t", 2)
	cat := New([]string{root}, zerolog.Nop())

	// Cassandra deletes Data.db first: the TOC is still there, the sstable is already gone.
	if err := os.Remove(b.Desc.Path(descriptor.Data)); err != nil {
		t.Fatal(err)
	}
	held, release, err := cat.Hold("ks", "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 || held[0].ID != a.Desc.ID {
		t.Fatalf("held %v", held)
	}
	if _, err := os.Stat(filepath.Join(held[0].Dir, b.Desc.Filename(descriptor.TOC))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("links of the vanished sstable left behind: %v", err)
	}
	release()

	// A component missing from an sstable that still has its Data.db and TOC is damage.
	if err := os.Remove(a.Desc.Path(descriptor.Statistics)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cat.Hold("ks", "t"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Hold of a damaged sstable: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(a.Desc.Dir, SnapshotsDir)); len(ents) != 0 {
		t.Fatalf("a failed Hold left %d snapshots", len(ents))
	}
}

func TestHoldOfAnUnknownOrAmbiguousTableFails(t *testing.T) {
	root := t.TempDir()
	cat := New([]string{root, filepath.Join(root, "missing")}, zerolog.Nop())
	if _, _, err := cat.Hold("ks", "t"); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("unknown table: %v", err)
	}

	// A dropped table's old directory with only snapshots does not make the name ambiguous.
	old := generate(t, root, "ks", "t", 1)
	renamed := filepath.Join(root, "ks", "t-0123456789abcdef0123456789abcdef")
	if err := os.Rename(old.Desc.Dir, renamed); err != nil {
		t.Fatal(err)
	}
	current := generate(t, root, "ks", "t", 2)
	oldLive, err := descriptor.List(renamed)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range oldLive {
		if err := os.Remove(d.Path(descriptor.TOC)); err != nil {
			t.Fatal(err)
		}
	}
	held, release, err := cat.Hold("ks", "t")
	if err != nil || len(held) != 1 || filepath.Dir(filepath.Dir(held[0].Dir)) != current.Desc.Dir {
		t.Fatalf("held %v, %v", held, err)
	}
	release()

	// Live sstables under two ids are ambiguous.
	generate(t, root, "ks", "t", 3)
	if err := os.Rename(current.Desc.Dir, filepath.Join(root, "ks", "t-fedcba9876543210fedcba9876543210")); err != nil {
		t.Fatal(err)
	}
	generate(t, root, "ks", "t", 4)
	if _, _, err := cat.Hold("ks", "t"); !errors.Is(err, ErrAmbiguousTable) {
		t.Fatalf("ambiguous table: %v", err)
	}
}

// A component that is a symlink (to a secret elsewhere on the host) is never served: Hold
// refuses the table rather than hand the link's target to a peer, and leaves no snapshot.
func TestHoldRefusesASymlinkedComponent(t *testing.T) {
	root := t.TempDir()
	a := generate(t, root, "ks", "t", 1)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("not an sstable"), 0o600); err != nil {
		t.Fatal(err)
	}
	comp := a.Desc.Path(descriptor.Filter)
	if err := os.Remove(comp); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, comp); err != nil {
		t.Fatal(err)
	}
	cat := New([]string{root}, zerolog.Nop())
	_, _, err := cat.Hold("ks", "t")
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), comp) {
		t.Fatalf("Hold with a symlinked %s: %v, want ErrNotRegular naming it", comp, err)
	}
	snaps, _ := os.ReadDir(filepath.Join(a.Desc.Dir, SnapshotsDir))
	for _, s := range snaps {
		left, _ := os.ReadDir(filepath.Join(a.Desc.Dir, SnapshotsDir, s.Name()))
		if len(left) > 0 {
			t.Errorf("snapshot %s keeps %d files", s.Name(), len(left))
		}
	}
}

func generate(t *testing.T, root, keyspace, table string, seed uint64) gen.Result {
	t.Helper()
	v, err := version.ParseWritable("nb")
	if err != nil {
		t.Fatal(err)
	}
	res, err := gen.Generate(context.Background(), root, gen.Options{
		Version: v, Partitions: 20, PartitionSize: 4096, RowSize: 1024, Seed: seed,
		Keyspace: keyspace, Table: table,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
