package stream

import (
	"context"
	"errors"
	"fmt"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// randomRanges draws n disjoint Murmur3 ranges, the last possibly wrapping.
func randomRanges(r *rand.Rand, n int) token.RangeSet {
	pts := make([]int64, 2*n)
	for i := range pts {
		pts[i] = int64(r.Uint64())
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i] < pts[j] })
	var rs token.RangeSet
	mk := func(v int64) token.Token { return token.Token{Kind: token.KindMurmur3, Long: v} }
	if r.IntN(2) == 0 {
		for i := 0; i < n; i++ {
			rs = append(rs, token.Range{Left: mk(pts[2*i]), Right: mk(pts[2*i+1])})
		}
		return rs
	}
	// Shift by one: the last range wraps from the top point round to the first.
	for i := 0; i < n-1; i++ {
		rs = append(rs, token.Range{Left: mk(pts[2*i+1]), Right: mk(pts[2*i+2])})
	}
	return append(rs, token.Range{Left: mk(pts[2*n-1]), Right: mk(pts[0])})
}

func TestFetchRandomRanges(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	tables := map[string]genSpec{
		"big_lz4":  {version: "oa", compression: "lz4", seeds: []uint64{1, 2}},
		"bti_lz4":  {version: "da", compression: "lz4", seeds: []uint64{3, 6}},
		"big_none": {version: "oa", compression: "none", seeds: []uint64{4}},
		"bti_none": {version: "da", compression: "none", seeds: []uint64{5}},
	}
	parents := map[string][]string{}
	for name, s := range tables {
		parents[name] = genTable(t, root, name, s)
	}
	srv, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	r := rand.New(rand.NewPCG(7, 8))
	names := []string{"big_lz4", "bti_lz4", "big_none", "bti_none"}
	for _, name := range names {
		for i, n := range []int{1 + r.IntN(3), 33, 1 + r.IntN(256)} {
			ranges := randomRanges(r, n)
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) {
				// The 33-range fetch as a Cassandra sidecar's: every partial verified strictly.
				strict := n == 33
				res, err := Fetch(context.Background(), Config{VerifyStrict: strict}, ca.client(t, ca),
					FetchRequest{Peer: addr, Keyspace: "ks", Table: name, Ranges: ranges, Dir: t.TempDir()}, nil)
				if err != nil {
					t.Fatalf("fetch %s: %v", ranges, err)
				}
				for _, f := range res.SSTables {
					if f.Kind != "partial" && f.Kind != "entire" {
						t.Errorf("kind %q", f.Kind)
					}
					if f.Runs < 1 || (f.Kind == "entire" && f.Runs != 1) {
						t.Errorf("%s: %d runs", f.SSTable, f.Runs)
					}
					if f.StrictVerified != strict {
						t.Errorf("%s: StrictVerified %v under VerifyStrict %v", f.SSTable, f.StrictVerified, strict)
					}
				}
				t.Logf("%d ranges: %d sstables, %d bytes", len(ranges), len(res.SSTables), res.BytesReceived)
				checkFetched(t, parents[name], ranges, res)
			})
		}
		if name == "bti_lz4" {
			// IndexPositions slices made as they are sent (a pass over each run of the
			// parent's trie) rather than kept from the plan's pass (indexKeep): with no
			// budget, both; with the shorter of the two parents' slices, one is kept and the
			// other made as sent, in one session.
			ranges := randomRanges(r, 33)
			var lengths []int64
			for _, prefix := range parents[name] {
				tb, err := sstable.Open(prefix)
				if err != nil {
					t.Fatal(err)
				}
				ps, _, err := slice.Partials(tb, ranges, slice.PartialOptions{OnePerParent: true, IndexLater: true, Format: slice.IndexPositions})
				tb.Close()
				if err != nil || len(ps) != 1 {
					t.Fatalf("%s: %v, %d partials", prefix, err, len(ps))
				}
				lengths = append(lengths, ps[0].IndexLength)
			}
			if lengths[0] == lengths[1] {
				t.Fatalf("the parents' slices are both %d bytes: no budget keeps one alone", lengths[0])
			}
			for _, keep := range []int64{0, min(lengths[0], lengths[1])} {
				t.Run(fmt.Sprintf("%s/kept-up-to-%d", name, keep), func(t *testing.T) {
					old := indexKeep
					indexKeep = keep
					defer func() { indexKeep = old }()
					res, err := Fetch(context.Background(), Config{VerifyStrict: true}, ca.client(t, ca),
						FetchRequest{Peer: addr, Keyspace: "ks", Table: name, Ranges: ranges, Dir: t.TempDir()}, nil)
					if err != nil {
						t.Fatalf("fetch %s: %v", ranges, err)
					}
					checkFetched(t, parents[name], ranges, res)
				})
			}
		}
		t.Run(name+"/everything", func(t *testing.T) {
			all, _ := token.ParseRanges(token.Murmur3, "(0,0]")
			res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
				FetchRequest{Peer: addr, Keyspace: "ks", Table: name, Ranges: all, Dir: t.TempDir()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.SSTables) != len(parents[name]) {
				t.Fatalf("%d sstables, want %d", len(res.SSTables), len(parents[name]))
			}
			for _, f := range res.SSTables {
				if f.Kind != "entire" {
					t.Errorf("%s: kind %s, want entire", f.SSTable, f.Kind)
				}
			}
			checkFetched(t, parents[name], all, res)
		})
	}
	for _, st := range srv.Sessions() {
		if st.State != "complete" || st.Direction != Sending {
			t.Errorf("server session %s: %s %s %s", st.ID, st.Direction, st.State, st.Error)
		}
	}
}

// visible lists the names in dir a reader would see: not temporaries, not our state file.
func visible(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestFetchCorruptChunkFailsThatSSTable(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	prefixes := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{9}})
	// Flip a byte in the middle of the parent's Data.db (a test copy).
	data := prefixes[0] + "-Data.db"
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	for _, spec := range []string{"(0,0]", "(-9000000000000000000,9000000000000000000]"} {
		ranges, _ := token.ParseRanges(token.Murmur3, spec)
		dir := t.TempDir()
		res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
			FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}, nil)
		if !errors.Is(err, ErrChecksum) {
			t.Fatalf("%s: err = %v, want a checksum error", spec, err)
		}
		var se *SSTableError
		if !errors.As(err, &se) || se.Code != wire.CodeChecksum || se.Peer != addr || se.SSTable == "" {
			t.Errorf("%s: error %v does not name the peer and sstable", spec, err)
		}
		if res == nil || len(res.SSTables) != 0 {
			t.Errorf("%s: installed %v", spec, res)
		}
		if v := visible(t, dir); len(v) != 0 {
			t.Errorf("%s: visible after a failed fetch: %v", spec, v)
		}
		tmp, _ := filepath.Glob(filepath.Join(dir, ".sluice-tmp-*"))
		if len(tmp) != 0 {
			t.Errorf("%s: temporaries left: %v", spec, tmp)
		}
	}
}

func TestFetchWithForeignCertificateGetsNoData(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	root := t.TempDir()
	genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1}, partitions: 20})
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	ranges, _ := token.ParseRanges(token.Murmur3, "(0,0]")
	dir := t.TempDir()
	res, err := Fetch(context.Background(), Config{HandshakeTimeout: 5e9}, other.client(t, ca),
		FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}, nil)
	if err == nil {
		t.Fatalf("fetch with a foreign certificate succeeded: %+v", res)
	}
	if res != nil && (len(res.SSTables) != 0 || res.BytesReceived != 0) {
		t.Errorf("received data: %+v", res)
	}
	if v := visible(t, dir); len(v) != 0 {
		t.Errorf("visible: %v", v)
	}
}

func TestFetchCancelThenResumeSkipsInstalled(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1, 2, 3, 4}})
	srv, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	ranges, _ := token.ParseRanges(token.Murmur3, "(-5000000000000000000,5000000000000000000]")
	dir := t.TempDir()
	req := FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}
	// Cancel once the first sstable is installed, while the rest stream (slowly); each
	// sstable commits alone (CommitBatch 1), so some are installed and some not.
	srv.SetThroughput(2<<20, 0)
	ctx, cancel := context.WithCancel(context.Background())
	res1, err := Fetch(ctx, Config{CommitBatch: 1}, ca.client(t, ca), req, func(st SessionStatus) {
		if st.FilesDone >= 1 {
			cancel()
		}
	})
	cancel()
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled fetch: err = %v", err)
	}
	if len(res1.SSTables) == 0 || len(res1.SSTables) == len(parents) {
		t.Fatalf("cancelled fetch installed %d of %d", len(res1.SSTables), len(parents))
	}
	srv.SetThroughput(0, 0)
	req.Resume = true
	res2, err := Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res2.Skipped) != len(res1.SSTables) {
		t.Errorf("resume skipped %v, first fetch installed %d", res2.Skipped, len(res1.SSTables))
	}
	for _, f := range res2.SSTables {
		for _, s := range res2.Skipped {
			if f.SSTable == s {
				t.Errorf("resume fetched %s again", s)
			}
		}
	}
	all := &FetchResult{SSTables: append(res1.SSTables, res2.SSTables...)}
	checkFetchedPartitions(t, parents, parents, ranges, all)
	if st, _ := filepath.Glob(filepath.Join(dir, ".sluice-part-*")); len(st) != 0 {
		t.Errorf("kept Data.db left after a complete fetch: %v", st)
	}

	// Resuming the completed fetch is idempotent: nothing is fetched again, and the directory
	// holds the same partitions, each once.
	res3, err := Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res3.SSTables) != 0 || len(res3.Skipped) != len(parents) {
		t.Errorf("resume after completion installed %d and skipped %d, want 0 and %d", len(res3.SSTables), len(res3.Skipped), len(parents))
	}
	checkDirHolds(t, dir, parents, ranges)
}

// checkDirHolds checks that the sstables in dir hold exactly the parents' partitions in
// ranges, each once.
func checkDirHolds(t *testing.T, dir string, parents []string, ranges token.RangeSet) {
	t.Helper()
	descs, err := descriptor.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	res := &FetchResult{}
	for _, d := range descs {
		n := int64(len(readAll(t, d.Prefix())))
		res.SSTables = append(res.SSTables, Fetched{Path: d.Prefix(), Kind: "entire", Partitions: n})
	}
	checkFetchedPartitions(t, parents, parents, ranges, res)
}

func TestFetchCrashRightAfterPublishResumesWithoutDuplicates(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1, 2, 3}})
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	ranges, _ := token.ParseRanges(token.Murmur3, "(-5000000000000000000,5000000000000000000]")
	dir := t.TempDir()
	req := FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir, Resume: true}
	// The process "dies" the instant the first batch is visible (one shared commit of all
	// three small sstables), before anything after the commit is written.
	crashAfterPublish = func() bool { return true }
	_, err := Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	crashAfterPublish = nil
	if !errors.Is(err, errCrashAfterPublish) {
		t.Fatalf("crashed fetch: err = %v", err)
	}
	visible, err := descriptor.List(dir)
	if err != nil || len(visible) != len(parents) {
		t.Fatalf("after the crash %d sstables are visible (%v), want the batch of %d", len(visible), err, len(parents))
	}
	res, err := Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != len(visible) || len(res.SSTables) != 0 {
		t.Errorf("resume skipped %v and fetched %d, want the %d sstables published before the crash and nothing else", res.Skipped, len(res.SSTables), len(visible))
	}
	checkDirHolds(t, dir, parents, ranges)
}

// A crash after every byte of a batch was received and written but before its shared sync
// publishes nothing, and leaves no file a reader would see; the resume record names the
// batch, but a resume fetches it again (no TOC, no install) and holds each partition once.
func TestFetchCrashBeforeSharedSyncPublishesNothing(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1, 2, 3, 4, 5}})
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	ranges, _ := token.ParseRanges(token.Murmur3, "(-5000000000000000000,5000000000000000000]")
	dir := t.TempDir()
	req := FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir, Resume: true}
	crash := errors.New("test crash before the shared sync")
	var commits int
	beforeSharedCommit = func() error { commits++; return crash }
	_, err := Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	beforeSharedCommit = nil
	if !errors.Is(err, crash) || commits != 1 {
		t.Fatalf("crashed fetch: err = %v after %d commits, want the crash at the first", err, commits)
	}
	if st := readState(t, req); len(st.Installed) != len(parents) {
		t.Errorf("the record names %d sstables before the commit, want the batch of %d", len(st.Installed), len(parents))
	}
	checkNothingHalfInstalled(t, dir, nil)
	res, err := Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 || len(res.SSTables) != len(parents) {
		t.Errorf("resume skipped %v and fetched %d, want nothing skipped and all %d fetched", res.Skipped, len(res.SSTables), len(parents))
	}
	checkDirHolds(t, dir, parents, ranges)
	checkNothingHalfInstalled(t, dir, res.SSTables)
}

// Batches of two: several shared commits in one session, each while the next sstables
// stream, install every sstable once.
func TestFetchCommitsInBatches(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1, 2, 3, 4, 5}})
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	ranges, _ := token.ParseRanges(token.Murmur3, "(-5000000000000000000,5000000000000000000]")
	dir := t.TempDir()
	var commits int
	beforeSharedCommit = func() error { commits++; return nil }
	defer func() { beforeSharedCommit = nil }()
	res, err := Fetch(context.Background(), Config{CommitBatch: 2}, ca.client(t, ca), FetchRequest{Peer: addr, Keyspace: "ks", Table: "t",
		Ranges: ranges, Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SSTables) != len(parents) || commits != 3 {
		t.Errorf("installed %d of %d sstables in %d commits, want 3 (2+2+1)", len(res.SSTables), len(parents), commits)
	}
	checkFetched(t, parents, ranges, res)
	checkNothingHalfInstalled(t, dir, res.SSTables)
}

// A one-range fetch gives one-run partials whose dead head the receiver fills with empty
// partitions, so Cassandra 5.0's sequential readers (compaction) read exactly their partitions
// (checkFetched holds each to that); BIG and BTI, compressed.
func TestFetchOneRangePartialsAreScannable(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	tables := map[string]genSpec{
		"big_lz4": {version: "oa", compression: "lz4", seeds: []uint64{11, 12}},
		"bti_lz4": {version: "da", compression: "lz4", seeds: []uint64{13}},
	}
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	ranges, _ := token.ParseRanges(token.Murmur3, "(-3000000000000000000,3000000000000000000]")
	for name, s := range tables {
		parents := genTable(t, root, name, s)
		t.Run(name, func(t *testing.T) {
			res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
				FetchRequest{Peer: addr, Keyspace: "ks", Table: name, Ranges: ranges, Dir: t.TempDir()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			filled := 0
			for _, f := range res.SSTables {
				if f.Kind != "partial" {
					t.Errorf("%s: %s, want a partial", f.SSTable, f.Kind)
				}
				if f.FillerPartitions > 0 {
					filled++
				}
			}
			if filled == 0 {
				t.Errorf("no fetched sstable had a dead head to fill: the test proves nothing")
			}
			checkFetched(t, parents, ranges, res)
		})
	}
}

// A BIG table fetched by a receiver that takes Index.db spans (its Hello offers them: the sender
// plans from Summary.db and sends the spans verbatim) and by one that takes only records
// installs the same partitions, each exactly the ranges' (checkFetched); so does a BTI table,
// whose slice is positions for the first (the keys read from the Data.db received) and records
// for the second.
func TestFetchBigIndexSlicesEitherWay(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	ranges, err := token.ParseRanges(token.Murmur3, "(-7000000000000000000,-2000000000000000000],(1000000000000000000,4000000000000000000]")
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string][]string{}
	for _, v := range []string{"oa", "da"} {
		parents[v] = genTable(t, root, "many_"+v, genSpec{version: v, compression: "lz4", seeds: []uint64{9}, partitions: 5000})
	}
	for _, recordsOnly := range []bool{false, true} {
		for _, v := range []string{"oa", "da"} {
			table := "many_" + v
			t.Run(fmt.Sprintf("%s/recordsOnly=%v", v, recordsOnly), func(t *testing.T) {
				res, err := Fetch(context.Background(), Config{recordsOnly: recordsOnly}, ca.client(t, ca),
					FetchRequest{Peer: addr, Keyspace: "ks", Table: table, Ranges: ranges, Dir: t.TempDir()}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.SSTables) != 1 || res.SSTables[0].Kind != "partial" {
					t.Fatalf("fetched %+v, want one partial", res.SSTables)
				}
				checkFetched(t, parents[v], ranges, res)
			})
		}
	}
}

// A receiver killed mid-fetch leaves its installs' temporaries behind, their owner locks no
// longer held. The next fetch into the directory (a --resume, or any other) removes them and
// says so, and leaves alone what an install in flight holds.
func TestFetchRemovesWhatDeadReceiversLeft(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{31}})
	ranges, _ := token.ParseRanges(token.Murmur3, "(-3000000000000000000,3000000000000000000]")
	dir := t.TempDir()
	dead := []string{fsx.TempPrefix + "00000000deadbeef-Data.db", fsx.TempPrefix + "00000000deadbeef-Index.db", fsx.TempPrefix + "00000000deadbeef.lock"}
	for _, n := range dead {
		if err := os.WriteFile(filepath.Join(dir, n), make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	live, err := fsx.NewInstall(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	if _, err := live.Create("in-flight"); err != nil {
		t.Fatal(err)
	}
	res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
		FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir, Resume: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, parents, ranges, res)
	for _, n := range dead {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			t.Errorf("%s is still there", n)
		}
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "removed 3 files") {
		t.Errorf("warnings %q, want one saying what was removed", res.Warnings)
	}
	ents, _ := os.ReadDir(dir)
	inFlight := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), fsx.TempPrefix) {
			inFlight++
		}
	}
	if inFlight != 2 { // the live install's temporary and its lock
		t.Errorf("%d temporaries in %s, want the live install's 2", inFlight, dir)
	}
}

// Under VerifyStrict an entire sstable, and a partial filled as it arrives, is verified by
// Cassandra's sequential rules before it is published, and the result says so (a sidecar's
// importer then skips its own read); without it the result does not claim it.
func TestFetchReportsStrictVerification(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1, 2}})
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	for _, c := range []struct {
		ranges string
		strict bool
		want   bool
	}{
		{"(0,0]", true, true},
		{"(0,0]", false, false},
		{"(-5000000000000000000,5000000000000000000]", true, true}, // partials, filled as they arrived
		{"(-5000000000000000000,5000000000000000000]", false, false},
	} {
		ranges, _ := token.ParseRanges(token.Murmur3, c.ranges)
		res, err := Fetch(context.Background(), Config{VerifyStrict: c.strict}, ca.client(t, ca), FetchRequest{Peer: addr, Keyspace: "ks", Table: "t",
			Ranges: ranges, Dir: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkFetched(t, parents, ranges, res)
		for _, f := range res.SSTables {
			if f.StrictVerified != c.want {
				t.Errorf("%s, VerifyStrict %v: %s (%s) StrictVerified %v, want %v", c.ranges, c.strict, f.Path, f.Kind, f.StrictVerified, c.want)
			}
		}
	}
}
