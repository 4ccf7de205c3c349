package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/testkit/loopfs"
	"github.com/sluicedb/sluice/sstable/descriptor"
)

// jbodFixture is a node with two data directories, each with its staging directory, and a
// fake nodetool that places every sstable as Cassandra's importer does: in the data
// directory its first token falls to by the disk boundaries, moved by rename (a copy and a
// delete across file systems, as Java's move falls back to).
type jbodFixture struct {
	*importFixture
	data    []string
	staging []string
	bounds  []int64
	firsts  map[string]int64 // the source sstables' first tokens, by Data.db base name
}

// newJBODFixture makes the fixture with n sstables; second, when set, is where the second
// data directory and its staging directory go (another file system).
func newJBODFixture(t *testing.T, n int, second string) *jbodFixture {
	t.Helper()
	f := &jbodFixture{importFixture: newImportFixture(t, n), firsts: map[string]int64{}}
	root := filepath.Dir(filepath.Dir(filepath.Dir(f.live))) // the fixture's temporary root
	if second == "" {
		second = root
	}
	f.data = []string{filepath.Join(root, "data"), filepath.Join(second, "data2")}
	f.staging = []string{filepath.Join(root, "staging"), filepath.Join(second, "staging2")}
	for _, d := range append(f.data[1:], f.staging...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := catalog.ListLive(f.src)
	if err != nil {
		t.Fatal(err)
	}
	var firsts []int64
	for _, s := range ls {
		tk, err := FirstToken(s.Desc.Path(descriptor.Data))
		if err != nil {
			t.Fatal(err)
		}
		f.firsts[filepath.Base(s.Desc.Path(descriptor.Data))] = tk
		firsts = append(firsts, tk)
	}
	slices.Sort(firsts)
	// The first disk ends at the smallest first token: one sstable there, the rest on the
	// second disk.
	f.bounds = []int64{firsts[0], math.MaxInt64}
	f.im.DataDirs, f.im.Staging, f.im.Boundaries, f.im.StagingDir = f.data, f.staging, f.bounds, ""
	f.im.Run = f.place
	return f
}

func (f *jbodFixture) liveDir(disk int) string {
	return filepath.Join(f.data[disk], "ks", "t-"+testTableID)
}

// place is the fake nodetool import of a JBOD node.
func (f *jbodFixture) place(ctx context.Context, argv []string) (string, int, error) {
	f.calls = append(f.calls, argv)
	dir := argv[len(argv)-1]
	live, err := catalog.ListLive(dir)
	if err != nil {
		return "", 1, err
	}
	for i, s := range live {
		tk, err := FirstToken(s.Desc.Path(descriptor.Data))
		if err != nil {
			return "", 1, err
		}
		dst := f.liveDir(DiskFor(f.bounds, tk))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return "", 1, err
		}
		nd := descriptor.Descriptor{Dir: dst, Version: s.Desc.Version, ID: fmt.Sprint(100 + len(f.calls)*10 + i)}
		for _, c := range s.Comps {
			if err := os.Rename(s.Desc.Path(c), nd.Path(c)); err != nil {
				// Java's Files.move falls back to copy and delete across file systems.
				if err := copyFile(s.Desc.Path(c), nd.Path(c)); err != nil {
					return "", 1, err
				}
				os.Remove(s.Desc.Path(c))
			}
		}
	}
	return "", 0, nil
}

// Each sstable is staged beside the data directory its first token falls to and handed over
// from there: one nodetool call per data directory, each from a staging directory of its own
// disk, every sstable confirmed in the directory Cassandra put it in.
func TestImportJBODPlacesByFirstToken(t *testing.T) {
	f := newJBODFixture(t, 3, "")
	res, err := f.im.Import(context.Background(), f.req())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SSTables) != 3 || len(f.calls) != 2 {
		t.Fatalf("imported %d in %d nodetool calls", len(res.SSTables), len(f.calls))
	}
	for i, argv := range f.calls {
		if dir := argv[len(argv)-1]; !strings.HasPrefix(dir, filepath.Join(f.staging[i], StagingPrefix)) {
			t.Errorf("call %d imports %s, want it staged in %s", i, dir, f.staging[i])
		}
	}
	if countLive(t, f.liveDir(0)) != 1 || countLive(t, f.liveDir(1)) != 2 {
		t.Errorf("live: %d and %d, want 1 and 2", countLive(t, f.liveDir(0)), countLive(t, f.liveDir(1)))
	}
	for _, s := range res.SSTables {
		tk, err := FirstToken(s.Live)
		if err != nil {
			t.Fatal(err)
		}
		if want := f.liveDir(DiskFor(f.bounds, tk)); filepath.Dir(s.Live) != want {
			t.Errorf("%s is not in %s", s.Live, want)
		}
	}
	for _, st := range f.staging {
		if ents, _ := os.ReadDir(st); len(ents) != 0 {
			t.Errorf("%s keeps %d entries", st, len(ents))
		}
	}
}

// With the second data directory on a file system of its own (a loop mount): sstables bound
// there are staged on it and the import is a rename (confirmed by inode, never a copy); with
// no staging directory on that file system, they are refused by the data directory's path and
// nothing is lost.
func TestImportJBODTwoFileSystems(t *testing.T) {
	mnt, unmount, err := loopfs.Mount(t.TempDir(), 64<<20, "mkfs.ext4", "e2fsprogs", "-q")
	if errors.Is(err, loopfs.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Error(err)
		}
	})
	f := newJBODFixture(t, 3, mnt)
	pairs, problems := PairStaging(f.data, f.staging)
	if !slices.Equal(pairs, f.staging) || len(problems) != 0 {
		t.Fatalf("pairs %v, problems %v", pairs, problems)
	}
	res, err := f.im.Import(context.Background(), f.req())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SSTables) != 3 || countLive(t, f.liveDir(1)) != 2 {
		t.Fatalf("imported %d, on the second disk %d", len(res.SSTables), countLive(t, f.liveDir(1)))
	}
	for _, s := range res.SSTables {
		if strings.HasPrefix(s.Live, mnt) != (filepath.Dir(s.Live) == f.liveDir(1)) {
			t.Errorf("%s", s.Live)
		}
	}

	// The staging directory of the loop file system left out: the first disk's sstable is
	// imported, the others are refused naming the second data directory and stay in the
	// source.
	g := newJBODFixture(t, 3, mnt)
	g.im.Staging = []string{g.staging[0], ""}
	_, err = g.im.Import(context.Background(), g.req())
	if !errors.Is(err, ErrCrossDevice) || !strings.Contains(err.Error(), g.data[1]) {
		t.Fatalf("%v", err)
	}
	if countLive(t, g.src) != 2 || countLive(t, g.liveDir(0)) != 1 {
		t.Errorf("source %d, first disk %d", countLive(t, g.src), countLive(t, g.liveDir(0)))
	}
	// Pairing says so at start-up.
	if _, problems := PairStaging(g.data, g.staging[:1]); len(problems) != 1 || !strings.Contains(problems[0], g.data[1]) {
		t.Errorf("problems %q", problems)
	}
}

// A data directory whose disk has no room for what must be copied onto it is named, and
// nothing moves: the sstables stay in the source.
func TestImportJBODFullDisk(t *testing.T) {
	mnt, unmount, err := loopfs.Mount(t.TempDir(), 4<<20, "mkfs.ext4", "e2fsprogs", "-q")
	if errors.Is(err, loopfs.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Error(err)
		}
	})
	f := newJBODFixture(t, 1, mnt)
	ls, err := catalog.ListLive(f.src)
	if err != nil {
		t.Fatal(err)
	}
	// Every sstable bound for the second disk, and more to copy there than it has free.
	f.im.Boundaries = []int64{math.MinInt64, math.MaxInt64}
	big := ls[0].Desc.Path(descriptor.Data)
	fh, err := os.OpenFile(big, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fh.Write(make([]byte, 8<<20))
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	f.im.Verify = func(string) error { return nil } // the padding is not an sstable's: only the space check matters here
	_, err = f.im.Import(context.Background(), f.req())
	var nse *fsx.NoSpaceError
	if !errors.As(err, &nse) || !strings.Contains(err.Error(), f.staging[1]) {
		t.Fatalf("%v", err)
	}
	if countLive(t, f.src) != 1 || len(f.calls) != 0 {
		t.Errorf("source %d, nodetool calls %d", countLive(t, f.src), len(f.calls))
	}
}
