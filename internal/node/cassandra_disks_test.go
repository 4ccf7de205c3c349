package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/testkit/loopfs"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// jbodSnapshot is one Cassandra node, alone with one token: it replicates the whole ring, and
// Cassandra splits it evenly between two data directories at token -1.
func jbodSnapshot() cassandra.Snapshot {
	return cassandra.Snapshot{ClusterName: "c1", Partitioner: cassandra.Murmur3Partitioner,
		Nodes: []cassandra.Node{{HostID: "11111111-0000-0000-0000-000000000001", Address: "127.0.0.1", DC: "dc1", Rack: "r1",
			Tokens: []int64{1000}, State: cassandra.Up, Local: true}},
		Keyspaces: []cassandra.Keyspace{{Name: "ks", Replication: map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "1"}}},
		Tables:    []cassandra.Table{{Keyspace: "ks", Name: "t", ID: sidecarTableID}},
	}
}

// jbodDirs are two data directories, the second on a loop-mounted file system of its own
// when this machine can make one (else beside the first), with the default staging
// directories (sluice-staging beside each).
func jbodDirs(t *testing.T) (data []string, loop bool) {
	t.Helper()
	root := t.TempDir()
	second := filepath.Join(root, "disk2")
	mnt, unmount, err := loopfs.Mount(t.TempDir(), 64<<20, "mkfs.ext4", "e2fsprogs", "-q")
	switch {
	case errors.Is(err, loopfs.ErrUnavailable):
		t.Logf("one file system: %v", err)
	case err != nil:
		t.Fatal(err)
	default:
		t.Cleanup(func() {
			if err := unmount(); err != nil {
				t.Error(err)
			}
		})
		second, loop = mnt, true
	}
	data = []string{filepath.Join(root, "disk1", "data"), filepath.Join(second, "data")}
	for _, d := range data {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return data, loop
}

// A sidecar of a node with two data directories stages each sstable of an import beside the
// data directory Cassandra's disk boundaries put it in (one handover per directory, from the
// staging directory on its file system), cuts received ranges the same way, and refuses a
// share whose data directory has no staging directory on its file system, naming it.
func TestSidecarJBOD(t *testing.T) {
	data, loop := jbodDirs(t)
	cfg := Config{Name: "n1", AdminAddr: "127.0.0.1:0", TLSDir: t.TempDir(),
		Cassandra: &cassandra.Config{NativeAddress: "127.0.0.1:9042", DataFileDirectories: data, Nodetool: []string{"nodetool"}}}
	n, err := New(Options{Config: cfg, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	staging := n.sidecar.cfg.StagingDirs
	if len(staging) != 2 || staging[0] != filepath.Join(filepath.Dir(data[0]), "sluice-staging") || staging[1] != filepath.Join(filepath.Dir(data[1]), "sluice-staging") {
		t.Fatalf("staging dirs %q", staging)
	}
	bounds := []int64{-1, math.MaxInt64}
	var mu sync.Mutex
	var calls []string
	ring := &fakeRing{snap: jbodSnapshot(), changes: make(chan struct{}, 1)}
	n.sidecar.dial = func(context.Context) (ringReader, error) { return ring, nil }
	n.sidecar.runNodetool = func(ctx context.Context, argv []string) (string, int, error) {
		dir := argv[len(argv)-1]
		mu.Lock()
		calls = append(calls, dir)
		mu.Unlock()
		ls, err := catalog.ListLive(dir)
		if err != nil {
			return err.Error(), 1, nil
		}
		for i, s := range ls {
			tk, err := cassandra.FirstToken(s.Desc.Path(descriptor.Data))
			if err != nil {
				return err.Error(), 1, nil
			}
			live := filepath.Join(data[cassandra.DiskFor(bounds, tk)], "ks", "t-"+sidecarTableID)
			if err := os.MkdirAll(live, 0o755); err != nil {
				return err.Error(), 1, nil
			}
			nd := descriptor.Descriptor{Dir: live, Version: s.Desc.Version, ID: fmt.Sprint(len(calls)*10 + i)}
			for _, c := range s.Comps {
				if err := os.Rename(s.Desc.Path(c), nd.Path(c)); err != nil {
					return err.Error(), 1, nil // a copy would not be Cassandra's rename
				}
			}
		}
		return "", 0, nil
	}
	r := runSidecar(t, n)

	snap := jbodSnapshot()
	if b, err := n.sidecar.diskBoundaries(snap, "ks"); err != nil || len(b) != 2 || b[0] != -1 {
		t.Fatalf("boundaries %v %v", b, err)
	}

	// One-partition sstables until both data directories have one: the first token decides.
	src := t.TempDir()
	v, _ := version.ParseWritable("nb")
	want := map[int]int{}
	for seed := uint64(1); want[0] == 0 || want[1] == 0; seed++ {
		res, err := gen.Generate(context.Background(), src, gen.Options{Version: v, Partitions: 1, PartitionSize: 2048, RowSize: 512,
			Seed: seed, Keyspace: "ks", Table: "t"})
		if err != nil {
			t.Fatal(err)
		}
		tk, err := cassandra.FirstToken(res.Desc.Path(descriptor.Data))
		if err != nil {
			t.Fatal(err)
		}
		want[cassandra.DiskFor(bounds, tk)]++
	}
	var res adminapi.CassandraImportResult
	body := fmt.Sprintf(`{"keyspace":"ks","table":"t","dir":%q}`, gen.TableDir(src, "ks", "t"))
	if code := call(t, http.MethodPost, r.url("/v1/cassandra/import"), body, &res); code != 200 {
		t.Fatalf("POST /v1/cassandra/import: %d %+v", code, res)
	}
	if len(res.SSTables) != want[0]+want[1] || len(calls) != 2 {
		t.Fatalf("imported %d of %d in %d calls", len(res.SSTables), want[0]+want[1], len(calls))
	}
	for d := range data {
		if !strings.HasPrefix(calls[d], staging[d]+string(filepath.Separator)) {
			t.Errorf("call %d imported from %s, not from %s", d, calls[d], staging[d])
		}
		ls, _ := catalog.ListLive(filepath.Join(data[d], "ks", "t-"+sidecarTableID))
		if len(ls) != want[d] {
			t.Errorf("%s holds %d sstables, want %d", data[d], len(ls), want[d])
		}
	}

	// Received ranges: cut at -1, each share staged on its data directory's file system.
	rs := token.RangeSet{{Left: tk(-500), Right: tk(500)}}
	shares, _, err := n.sidecar.shares(snap, "ks", rs)
	if err != nil || len(shares) != 2 {
		t.Fatalf("shares %+v %v", shares, err)
	}
	if shares[0].ranges.String() != "(-500,-1]" || shares[1].ranges.String() != "(-1,500]" || shares[0].staging != staging[0] || shares[1].staging != staging[1] {
		t.Errorf("shares %+v", shares)
	}
	if !loop {
		return
	}
	// Without a staging directory on the second disk, its share is refused by name.
	n.sidecar.cfg.StagingDirs = staging[:1]
	if _, _, err := n.sidecar.shares(snap, "ks", rs); !errors.Is(err, cassandra.ErrCrossDevice) || !strings.Contains(err.Error(), data[1]) {
		t.Errorf("%v", err)
	}
	if sh, _, err := n.sidecar.shares(snap, "ks", token.RangeSet{{Left: tk(-500), Right: tk(-10)}}); err != nil || len(sh) != 1 {
		t.Errorf("the first disk's share alone: %+v %v", sh, err)
	}
}

// The import skips its strict verification only for an sstable the receiver verified
// strictly, and only while its Data.db is the very file the receiver checked: a file put in
// its place is verified (and here refused: it is not an sstable).
func TestImportSkipsOnlyWhatTheReceiverVerified(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "oa-1-big-Data.db")
	if err := os.WriteFile(data, []byte("not an sstable"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := skipVerified(map[string]os.FileInfo{data: fi})(data); err != nil {
		t.Errorf("the file the receiver verified was verified again: %v", err)
	}
	if err := skipVerified(nil)(data); err == nil {
		t.Error("a file the receiver did not verify passed without verification")
	}
	swapped := data + ".new"
	if err := os.WriteFile(swapped, []byte("not an sstable"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(swapped, data); err != nil {
		t.Fatal(err)
	}
	if err := skipVerified(map[string]os.FileInfo{data: fi})(data); err == nil {
		t.Error("a file put in place of the verified one passed without verification")
	}
}
