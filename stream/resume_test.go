package stream

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// readState reads the resume record of req.
func readState(t testing.TB, req FetchRequest) *resumeState {
	t.Helper()
	b, err := os.ReadFile(statePath(req.Dir, req.Peer, req.Keyspace, req.Table, req.Ranges.String()))
	if err != nil {
		t.Fatalf("resume record: %v", err)
	}
	var st resumeState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// checkNothingHalfInstalled fails when dir shows a file a reader would see that does not
// belong to a complete, verifying sstable.
func checkNothingHalfInstalled(t testing.TB, dir string, installed []Fetched) {
	t.Helper()
	ok := map[string]bool{}
	for _, f := range installed {
		ok[filepath.Base(f.Path)] = true
		rep, err := sstable.Verify(f.Path, sstable.VerifyOptions{})
		if err != nil || !rep.OK {
			t.Errorf("installed %s does not verify: %v %v", f.Path, err, rep)
		}
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		i := strings.Index(name, "-big-")
		if i < 0 || !ok[name[:i+4]] {
			t.Errorf("visible file %s belongs to no installed sstable", name)
		}
	}
}

// cancelledFetch runs a Fetch of req (which the sender should throttle) and stops it once
// progress shows at least after bytes of its first sstable: by cancelling the Fetch's
// context, or with cancelBy when set.
func cancelledFetch(t *testing.T, ca *testCA, req FetchRequest, after int64, cancelBy func()) (*FetchResult, error) {
	return cancelledFetchWith(t, Config{}, ca, req, after, cancelBy)
}

// cancelledFetchWith is cancelledFetch with the receiver's Config cfg.
func cancelledFetchWith(t *testing.T, cfg Config, ca *testCA, req FetchRequest, after int64, cancelBy func()) (*FetchResult, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := cancel
	if cancelBy != nil {
		stop = cancelBy
	}
	var fired bool
	return Fetch(ctx, cfg, ca.client(t, ca), req, func(st SessionStatus) {
		if !fired && st.FilesDone == 0 && st.BytesDone >= after {
			fired = true
			stop()
		}
	})
}

const bigPartitions = 2500 // about 10 MiB of Data.db

// Chunk-level resume: a Fetch cancelled in the middle of a multi-MiB sstable keeps its
// verified Data.db prefix; a Fetch with Resume asks the sender to restart after it, sends
// correspondingly fewer bytes, and the result verifies and holds exactly the partitions.
func TestFetchResumesMidSSTable(t *testing.T) {
	for _, tc := range []struct {
		name, version, compression, ranges string
		rows                               bool
		cfg                                Config // the receiver's
	}{
		// Filled in place: the kept prefix is the child as written, taken up as it is.
		{"partial_lz4", "oa", "lz4", "(-8000000000000000000,8000000000000000000]", false, Config{}},
		{"partial_lz4_two_runs", "oa", "lz4", "(-8000000000000000000,-1000000000000000000],(0,8000000000000000000]", false, Config{}},
		{"partial_bti_lz4", "da", "lz4", "(-8000000000000000000,-1000000000000000000],(0,8000000000000000000]", false, Config{}},
		// Received as the sender laid it out, then filled: the kept prefix is replayed.
		{"partial_lz4_received_whole", "oa", "lz4", "(-8000000000000000000,-1000000000000000000],(0,8000000000000000000]", false, receivedWhole},
		{"entire_none", "nb", "none", "(0,0]", false, Config{}},
		{"partial_bti_none", "da", "none", "(-8000000000000000000,8000000000000000000]", false, Config{}},
		{"rows_lz4", "oa", "lz4", "(-8000000000000000000,8000000000000000000]", true, Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := newTestCA(t)
			root := t.TempDir()
			parents := genTable(t, root, "t", genSpec{version: tc.version, compression: tc.compression, seeds: []uint64{31}, partitions: bigPartitions})
			if tc.rows {
				markLegacyCounterShards(t, parents[0])
			}
			n := startNode(t, Config{FrameSize: 64 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
			ranges, _ := token.ParseRanges(token.Murmur3, tc.ranges)

			// What a whole fetch costs.
			before := n.sent.Load()
			full, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
				FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}, nil)
			if err != nil || len(full.SSTables) != 1 {
				t.Fatalf("full fetch: %v %+v", err, full)
			}
			fullSent := n.sent.Load() - before
			total := full.SSTables[0].Bytes
			if tc.rows != (full.SSTables[0].Kind == "rows") {
				t.Fatalf("fetched as %s", full.SSTables[0].Kind)
			}

			dir := t.TempDir()
			req := FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}
			n.srv.SetThroughput(8<<20, 0)
			res1, err := cancelledFetchWith(t, tc.cfg, ca, req, 3<<20, nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled fetch: %v", err)
			}
			var se *SessionError
			if !errors.As(err, &se) || se.Peer != n.addr {
				t.Errorf("cancelled fetch: %v is not a SessionError naming %s", err, n.addr)
			}
			checkNothingHalfInstalled(t, dir, res1.SSTables)
			if len(visible(t, dir)) != 0 {
				t.Fatalf("visible after a cancelled fetch: %v", visible(t, dir))
			}
			st := readState(t, req)
			if st.Partial == nil || st.Partial.VerifiedChunks == 0 || st.Partial.Bytes < 1<<20 || st.Partial.Bytes >= total {
				t.Fatalf("resume record after the cancel: %+v", st.Partial)
			}
			if fi, err := os.Stat(filepath.Join(dir, st.Partial.Path)); err != nil || fi.Size() < st.Partial.keptLength() {
				t.Fatalf("kept Data.db: %v %v", fi, err)
			}
			t.Logf("kept %d chunks, %d of %d bytes", st.Partial.VerifiedChunks, st.Partial.Bytes, total)

			n.srv.SetThroughput(0, 0)
			req.Resume = true
			before = n.sent.Load()
			res2, err := Fetch(context.Background(), tc.cfg, ca.client(t, ca), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			sent := n.sent.Load() - before
			if len(res2.SSTables) != 1 || res2.SSTables[0].Bytes != total-st.Partial.Bytes {
				t.Errorf("resumed fetch received %+v, want %d bytes (%d kept)", res2.SSTables, total-st.Partial.Bytes, st.Partial.Bytes)
			}
			// The sender skipped the kept prefix: its payload is exactly the rest, and its UDP
			// bytes shrank by much of the prefix (QUIC's retransmissions on a loaded loopback
			// make them vary by a few hundred KiB).
			sessions := n.srv.Sessions()
			if last := sessions[len(sessions)-1]; last.BytesDone != total-st.Partial.Bytes {
				t.Errorf("resumed session sent %d payload bytes, want %d", last.BytesDone, total-st.Partial.Bytes)
			}
			if sent > fullSent-st.Partial.Bytes/2 {
				t.Errorf("resumed fetch: sender sent %d bytes, a whole fetch %d, %d were kept", sent, fullSent, st.Partial.Bytes)
			}
			t.Logf("sender sent %d bytes resuming, %d for a whole fetch", sent, fullSent)
			checkFetched(t, parents, ranges, res2)
			if l := leftovers(t, dir); len(l) != 0 {
				t.Errorf("left behind: %v", l)
			}
			// The record stays, naming only installs: no kept prefix.
			if st := loadState(dir, req.Peer, "ks", "t", ranges.String(), true); st.Partial != nil || len(st.Installed) != len(res2.SSTables) {
				t.Errorf("record after a complete fetch: partial %v, %d installed (fetched %d)", st.Partial, len(st.Installed), len(res2.SSTables))
			}
		})
	}
}

// A kept prefix that no longer matches its chunk CRCs (a torn write after a crash) fails
// that sstable on resume, and is dropped: the next resume fetches it whole.
func TestFetchResumeRejectsDamagedPrefix(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{32}, partitions: bigPartitions})
	n := startNode(t, Config{FrameSize: 64 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
	ranges, _ := token.ParseRanges(token.Murmur3, "(-8000000000000000000,8000000000000000000]")
	dir := t.TempDir()
	req := FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}
	n.srv.SetThroughput(8<<20, 0)
	if _, err := cancelledFetch(t, ca, req, 2<<20, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled fetch: %v", err)
	}
	n.srv.SetThroughput(0, 0)
	st := readState(t, req)
	kept := filepath.Join(dir, st.Partial.Path)
	f, err := os.OpenFile(kept, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 100), st.Partial.keptLength()/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	req.Resume = true
	res, err := Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	var sse *SSTableError
	if !errors.Is(err, ErrChecksum) || !errors.As(err, &sse) || len(res.SSTables) != 0 {
		t.Fatalf("resume over a damaged prefix: %v %+v", err, res)
	}
	if v := visible(t, dir); len(v) != 0 {
		t.Errorf("visible: %v", v)
	}
	if _, err := os.Stat(kept); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("damaged prefix kept: %v", err)
	}
	res, err = Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, parents, ranges, res)
}

// Stopping the sender's node in the middle of a transfer ends the Fetch within seconds (the
// node says so as it closes; the idle timeout is 30 s) with a SessionError naming the peer
// and nothing half-installed; a new node on the same data and address serves the resume.
func TestFetchSenderStopsMidStream(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{33, 34}, partitions: bigPartitions / 2})
	n := startNode(t, Config{FrameSize: 64 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
	ranges, _ := token.ParseRanges(token.Murmur3, "(-8000000000000000000,8000000000000000000]")
	dir := t.TempDir()
	req := FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}
	n.srv.SetThroughput(8<<20, 0)
	var stopped time.Time
	res1, err := cancelledFetch(t, ca, req, 2<<20, func() {
		stopped = time.Now()
		go n.stop()
	})
	took := time.Since(stopped)
	var se *SessionError
	if !errors.As(err, &se) || se.Peer != n.addr || se.Code != wire.CodeShuttingDown {
		t.Fatalf("fetch from a stopping node: %v", err)
	}
	if took > 5*time.Second {
		t.Errorf("fetch returned %v after the sender stopped", took)
	}
	t.Logf("returned %v after the stop: %v", took, err)
	checkNothingHalfInstalled(t, dir, res1.SSTables)
	if readState(t, req).Partial == nil {
		t.Error("no verified prefix kept")
	}

	n2 := startNode(t, Config{}, dirCatalog{root}, ca.server(t), n.addr)
	req.Resume = true
	res2, err := Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n2.sent.Load() == 0 {
		t.Fatal("the new node sent nothing")
	}
	checkFetched(t, parents, ranges, &FetchResult{SSTables: append(res1.SSTables, res2.SSTables...)})
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

// The sweep removes this request's kept files that the record does not name and its
// scratch directories, and nothing of anyone else.
func TestFetchSweepsOnlyItsOwnLeftovers(t *testing.T) {
	dir := t.TempDir()
	ranges, _ := token.ParseRanges(token.Murmur3, "(0,0]")
	st := loadState(dir, "peer:1", "ks", "t", ranges.String(), true)
	other := loadState(dir, "peer:2", "ks", "t", ranges.String(), true)
	mine := []string{partPrefix + st.key + "-dead", partPrefix + st.key + "-kept"}
	theirs := []string{partPrefix + other.key + "-dead", ".sluice-tmp-0123-oa-1-big-Data.db", "oa-2-big-Data.db"}
	for _, name := range append(append([]string(nil), mine...), theirs...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("0123456789"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{scratchPrefix + st.key + "-x", scratchPrefix + other.key + "-y"} {
		if err := os.MkdirAll(filepath.Join(dir, d, "rewritten"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	st.Partial = &partialState{ID: "oa-1-big@0+5", Path: mine[1], VerifiedChunks: 2, Bytes: 10}
	if err := st.save(); err != nil {
		t.Fatal(err)
	}
	st = loadState(dir, "peer:1", "ks", "t", ranges.String(), true)
	if st.Partial == nil || st.Partial.Path != mine[1] {
		t.Fatalf("record lost its partial: %+v", st.Partial)
	}
	if err := st.sweep(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{mine[0], scratchPrefix + st.key + "-x"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not swept: %v", name, err)
		}
	}
	for _, name := range append([]string{mine[1], scratchPrefix + other.key + "-y"}, theirs...) {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s swept: %v", name, err)
		}
	}
	// A kept file shorter than its record claims is not resumed from, and is swept.
	if err := os.Truncate(filepath.Join(dir, mine[1]), 5); err != nil {
		t.Fatal(err)
	}
	st = loadState(dir, "peer:1", "ks", "t", ranges.String(), true)
	if st.Partial != nil {
		t.Errorf("resuming from a truncated kept file: %+v", st.Partial)
	}
	if err := st.sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, mine[1])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("truncated kept file not swept: %v", err)
	}
}

// A resume record's entries name files of the target directory itself. An entry that points
// elsewhere (`../A/...`, an absolute path) or at a symbolic link is ignored with a warning, so
// that sstable is fetched again: a planted record cannot make a fetch skip what it must install.
func TestResumeRecordIsConfinedToItsDirectory(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "A"), filepath.Join(root, "B")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	toc := "oa-1-big-TOC.txt"
	if err := os.WriteFile(filepath.Join(a, toc), []byte("Data.db\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(a, toc), filepath.Join(b, "oa-2-big-TOC.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "oa-3-big-TOC.txt"), []byte("Data.db\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ranges := "(0,100]"
	st := loadState(b, "peer:1", "ks", "t", ranges, false)
	st.Installed = map[string]string{
		"up":       "../A/" + toc,
		"absolute": filepath.Join(a, toc),
		"link":     "oa-2-big-TOC.txt",
		"here":     "oa-3-big-TOC.txt",
	}
	if err := st.save(); err != nil {
		t.Fatal(err)
	}
	got := loadState(b, "peer:1", "ks", "t", ranges, true)
	if len(got.Installed) != 1 || got.Installed["here"] != "oa-3-big-TOC.txt" {
		t.Errorf("installed %v, want only the entry naming a file of B", got.Installed)
	}
	if len(got.warnings) != 3 {
		t.Errorf("%d warnings, want one per ignored entry: %q", len(got.warnings), got.warnings)
	}
}

// receivedWhole is a receiver's Config that receives every compressed partial as the sender
// laid it out, then fills a copy, rather than filling it in place.
var receivedWhole = Config{FillAfterReceive: true}
