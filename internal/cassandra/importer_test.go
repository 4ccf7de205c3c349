package cassandra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
)

const testTableID = "0123456789abcdef0123456789abcdef"

// importFixture is a staging directory, a data directory with the live table directory and
// a source directory holding n generated sstables, all on one file system.
type importFixture struct {
	im     *Importer
	src    string
	live   string // the live table directory
	calls  [][]string
	behave string // what the fake nodetool does: ok, ignore, fail, lose, error
}

func newImportFixture(t *testing.T, n int) *importFixture {
	t.Helper()
	root := t.TempDir()
	f := &importFixture{behave: "ok"}
	data := filepath.Join(root, "data")
	f.live = filepath.Join(data, "ks", "t-"+testTableID)
	if err := os.MkdirAll(f.live, 0o755); err != nil {
		t.Fatal(err)
	}
	genRoot := filepath.Join(root, "received")
	for i := 0; i < n; i++ {
		v := version.Writable[i%len(version.Writable)]
		if _, err := gen.Generate(context.Background(), genRoot, gen.Options{Version: v, Partitions: 20,
			PartitionSize: 4 << 10, RowSize: 1 << 10, Seed: uint64(i + 1), Keyspace: "ks", Table: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	f.src = gen.TableDir(genRoot, "ks", "t")
	f.im = &Importer{Node: "host-1", Nodetool: []string{"nodetool", "-p", "7199"}, StagingDir: filepath.Join(root, "staging"),
		DataDirs: []string{data}, Run: f.nodetool}
	return f
}

// nodetool is a fake `nodetool import KS TABLE DIR` that behaves as Cassandra does: it moves
// every sstable of DIR into the live table directory under a new generation (ok), imports
// nothing and says nothing (ignore: a directory whose path does not end in ks/table), lists
// the directory as failed (fail), imports and then loses the sstables to a compaction (lose),
// or cannot run at all (error).
func (f *importFixture) nodetool(ctx context.Context, argv []string) (string, int, error) {
	f.calls = append(f.calls, argv)
	dir := argv[len(argv)-1]
	switch f.behave {
	case "ignore":
		return "", 0, nil
	case "fail":
		return "Some directories failed to import, check server logs for details:\n" + dir + "\n", 1, nil
	case "error":
		return "", -1, errors.New("exec: nodetool: not found")
	}
	live, err := catalog.ListLive(dir)
	if err != nil {
		return "", 1, err
	}
	for i, s := range live {
		nd := descriptor.Descriptor{Dir: f.live, Version: s.Desc.Version, ID: fmt.Sprint(100 + i)}
		for _, c := range s.Comps {
			if err := os.Rename(s.Desc.Path(c), nd.Path(c)); err != nil {
				return "", 1, err
			}
			if f.behave == "lose" {
				os.Remove(nd.Path(c))
			}
		}
	}
	return "", 0, nil
}

func (f *importFixture) req() ImportRequest {
	return ImportRequest{Keyspace: "ks", Table: "t", TableID: testTableID, Dir: f.src}
}

func countLive(t *testing.T, dir string) int {
	t.Helper()
	ls, err := catalog.ListLive(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(ls)
}

func stagingEmpty(t *testing.T, f *importFixture) {
	t.Helper()
	ents, err := os.ReadDir(f.im.StagingDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("the staging directory keeps %d entries", len(ents))
	}
}

func TestImportMovesVerifiesAndConfirms(t *testing.T) {
	f := newImportFixture(t, 3)
	res, err := f.im.Import(context.Background(), f.req())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SSTables) != 3 || countLive(t, f.live) != 3 || countLive(t, f.src) != 0 {
		t.Fatalf("imported %d, live %d, left in the source %d", len(res.SSTables), countLive(t, f.live), countLive(t, f.src))
	}
	for _, s := range res.SSTables {
		if filepath.Dir(s.Live) != f.live || s.Copied || s.Bytes == 0 {
			t.Errorf("%+v", s)
		}
	}
	// One nodetool call: the prefix, then import KS TABLE DIR, DIR ending in ks/table-id, and no
	// option that would turn a check off or copy.
	if len(f.calls) != 1 {
		t.Fatalf("%d nodetool calls", len(f.calls))
	}
	argv := f.calls[0]
	if strings.Join(argv[:6], " ") != "nodetool -p 7199 import ks t" || !strings.HasSuffix(argv[6], filepath.Join("ks", "t-"+testTableID)) ||
		!strings.HasPrefix(argv[6], filepath.Join(f.im.StagingDir, StagingPrefix)) {
		t.Errorf("argv %q", argv)
	}
	stagingEmpty(t, f)
}

// nodetool import exits 0 having imported nothing: the Importer says so and gives the
// sstables back.
func TestImportExitZeroIsNotProof(t *testing.T) {
	f := newImportFixture(t, 2)
	f.behave = "ignore"
	_, err := f.im.Import(context.Background(), f.req())
	var ie *ImportError
	if !errors.Is(err, ErrNotConfirmed) || !errors.As(err, &ie) || ie.Node != "host-1" || ie.Table != "t" {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(err.Error(), "still in the staging directory") {
		t.Errorf("%v", err)
	}
	if countLive(t, f.src) != 2 || countLive(t, f.live) != 0 {
		t.Errorf("source %d, live %d", countLive(t, f.src), countLive(t, f.live))
	}
	stagingEmpty(t, f)
}

func TestImportNodetoolFailure(t *testing.T) {
	for _, behave := range []string{"fail", "error"} {
		f := newImportFixture(t, 2)
		f.behave = behave
		_, err := f.im.Import(context.Background(), f.req())
		if !errors.Is(err, ErrNodetool) {
			t.Fatalf("%s: %v", behave, err)
		}
		if behave == "fail" && !strings.Contains(err.Error(), "Some directories failed to import") {
			t.Errorf("the error does not say what nodetool printed: %v", err)
		}
		if countLive(t, f.src) != 2 {
			t.Errorf("%s: the source holds %d sstables after the failure, want its 2 back", behave, countLive(t, f.src))
		}
		stagingEmpty(t, f)
	}
}

func TestImportLostAfterMove(t *testing.T) {
	f := newImportFixture(t, 1)
	f.behave = "lose"
	if _, err := f.im.Import(context.Background(), f.req()); !errors.Is(err, ErrNotConfirmed) || !strings.Contains(err.Error(), "in no live directory") {
		t.Fatalf("%v", err)
	}
}

// A damaged sstable stops the import before anything moves or nodetool runs.
func TestImportVerifiesFirst(t *testing.T) {
	f := newImportFixture(t, 2)
	ls, err := catalog.ListLive(f.src)
	if err != nil {
		t.Fatal(err)
	}
	p := ls[1].Desc.Path(descriptor.Data)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = f.im.Import(context.Background(), f.req())
	if !errors.Is(err, ErrVerify) || len(f.calls) != 0 || countLive(t, f.src) != 2 {
		t.Fatalf("%v (nodetool calls %d)", err, len(f.calls))
	}
	stagingEmpty(t, f)
}

func TestImportRefusesBadRequests(t *testing.T) {
	f := newImportFixture(t, 1)
	for _, r := range []ImportRequest{
		{Keyspace: "../x", Table: "t", TableID: testTableID, Dir: f.src},
		{Keyspace: "ks", Table: "t", TableID: "nope", Dir: f.src},
		{Keyspace: "ks", Table: "t", TableID: testTableID, Dir: t.TempDir()},
	} {
		if _, err := f.im.Import(context.Background(), r); err == nil {
			t.Errorf("%+v accepted", r)
		}
	}
	if _, err := f.im.Import(context.Background(), ImportRequest{Keyspace: "ks", Table: "t", TableID: testTableID, Dir: t.TempDir()}); !errors.Is(err, ErrNothingToImport) {
		t.Errorf("empty directory: %v", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("nodetool ran %d times", len(f.calls))
	}
}
