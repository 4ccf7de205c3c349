package stream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// Fault tests: a disk that misbehaves at a chosen byte, through the I/O seam (faultStorage),
// without root or loop mounts. Each asserts the exact outcome: the error and what it names,
// and what the receiving directory holds afterwards.

// hidden lists the names in dir a reader would not see (leading dot), sorted, with the
// request keys and random parts cut to the prefix that says what each is.
func hidden(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// listing checks that dir holds exactly the installed sstables' files and, hidden, want:
// no other sstable file, install temporary, kept prefix or scratch directory.
func listing(t *testing.T, dir string, installed []Fetched, want ...string) {
	t.Helper()
	checkNothingHalfInstalled(t, dir, installed)
	if len(installed) == 0 && len(visible(t, dir)) != 0 {
		t.Errorf("visible: %v", visible(t, dir))
	}
	sort.Strings(want)
	if h := hidden(t, dir); !slices.Equal(h, want) {
		t.Errorf("hidden files %v, want %v", h, want)
	}
}

// record is the name of req's resume record.
func record(req FetchRequest) string {
	return filepath.Base(statePath(req.Dir, req.Peer, req.Keyspace, req.Table, req.Ranges.String()))
}

// A file system that returns fewer bytes than asked, without an error, costs nothing: the
// seam reads on (readFull), on every plane, and the fetch installs exactly the partitions.
func TestSenderShortReads(t *testing.T) {
	for _, tr := range []string{TransportQUIC, TransportTCP} {
		t.Run(tr, func(t *testing.T) {
			ca := newTestCA(t)
			root := t.TempDir()
			parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1, 2}, partitions: 300})
			store := &faultStorage{shortRead: 1000}
			n := startNode(t, Config{Transport: tr, storage: store}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
			for _, r := range []string{"(-6000000000000000000,5000000000000000000]", "(0,0]"} { // partial, entire
				ranges, _ := token.ParseRanges(token.Murmur3, r)
				res, err := Fetch(context.Background(), Config{Transport: tr}, ca.client(t, ca),
					FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}, nil)
				if err != nil {
					t.Fatal(r, err)
				}
				checkFetched(t, parents, ranges, res)
			}
			store.mu.Lock()
			defer store.mu.Unlock()
			var short int
			for _, rs := range store.reads {
				for _, s := range rs {
					if s.end-s.off > 1000 {
						t.Fatalf("a read of %d bytes: the seam was not used", s.end-s.off)
					}
					short++
				}
			}
			if short == 0 {
				t.Fatal("no read went through the seam")
			}
		})
	}
}

// EIO at byte N of a parent's Data.db on the sender. Over QUIC that sstable alone fails,
// with an error naming the file, and the other installs; nothing of the failed one is left in
// the receiving directory, not even a kept prefix (it failed for good).
func TestSenderEIOFailsTheSSTable(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1, 2}, partitions: 600})
	data := parents[0] + "-Data.db"
	fi, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	store := &faultStorage{suffix: filepath.Base(data), at: fi.Size() / 2, readErr: syscall.EIO}
	n := startNode(t, Config{storage: store, FrameSize: 16 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
	ranges, _ := token.ParseRanges(token.Murmur3, "(-8000000000000000000,8000000000000000000]")
	req := FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}
	res, err := Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	var se *SessionError
	if err == nil || errors.As(err, &se) {
		t.Fatalf("want one failed sstable, got %v", err)
	}
	if len(res.Failed) != 1 || len(res.SSTables) != 1 {
		t.Fatalf("failed %v, installed %+v", res.Failed, res.SSTables)
	}
	var fe *SSTableError
	if !errors.As(res.Failed[0], &fe) || fe.Code != wire.CodeInternal || !strings.HasPrefix(fe.SSTable, filepath.Base(parents[0])) {
		t.Fatalf("failure %#v", res.Failed[0])
	}
	if msg := fe.Error(); !strings.Contains(msg, data) || !strings.Contains(msg, "input/output error") {
		t.Errorf("the error does not name the file and the fault: %s", msg)
	}
	t.Log(fe)
	if !strings.HasPrefix(res.SSTables[0].SSTable, filepath.Base(parents[1])) {
		t.Errorf("installed %s, want the other parent's child", res.SSTables[0].SSTable)
	}
	checkFetchedPartitions(t, parents[1:], parents[1:], ranges, res)
	// The other parent's child and the record naming it; nothing of the failed one.
	listing(t, req.Dir, res.SSTables, record(req))
}

// EIO at byte N on the sender of the TLS plane, where one connection carries every sstable:
// the session fails with the sender's reason naming the file; the receiving directory shows
// nothing, and keeps at most the verified prefix its record names, from which a Fetch with
// Resume (from a healthy sender) completes.
func TestSenderEIOEndsATLSSession(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{5}, partitions: 600})
	data := parents[0] + "-Data.db"
	fi, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	store := &faultStorage{suffix: "-Data.db", at: fi.Size() / 2, readErr: syscall.EIO}
	n := startNode(t, Config{Transport: TransportTLS, storage: store, FrameSize: 16 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
	ranges, _ := token.ParseRanges(token.Murmur3, "(-8000000000000000000,8000000000000000000]")
	req := FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}
	res, err := Fetch(context.Background(), Config{Transport: TransportTLS}, ca.client(t, ca), req, nil)
	var se *SessionError
	if !errors.As(err, &se) || se.Code != wire.CodeInternal {
		t.Fatalf("want a failed session (internal), got %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, data) || !strings.Contains(msg, "input/output error") {
		t.Errorf("the error does not name the file and the fault: %s", msg)
	}
	t.Log(err)
	if len(res.SSTables) != 0 || len(visible(t, req.Dir)) != 0 {
		t.Fatalf("installed %+v, visible %v", res.SSTables, visible(t, req.Dir))
	}
	// The record and the prefix it names, when the session's end found chunks verified;
	// nothing at all when it ended before the receiver had verified any (the sender's
	// failure and the closed data connection race the frames already in flight).
	var want []string
	if _, err := os.Stat(statePath(req.Dir, req.Peer, req.Keyspace, req.Table, req.Ranges.String())); err == nil {
		want = append(want, record(req))
		if p := readState(t, req).Partial; p != nil {
			want = append(want, p.Path)
		}
	}
	listing(t, req.Dir, nil, want...)
	healthy := startNode(t, Config{Transport: TransportTLS}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
	req.Peer, req.Resume = healthy.addr, true
	res, err = Fetch(context.Background(), Config{Transport: TransportTLS}, ca.client(t, ca), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, parents, ranges, res)
}

// ENOSPC at byte N of the Data.db being received, for every kind and on the QUIC and plain
// TCP planes (whose splice falls back for a Writable without a file): that sstable fails with
// no_space and an error naming the directory, the session goes on to its end, and the
// directory holds nothing at all: no visible file, no temporary, no kept prefix, no scratch
// directory, no resume record.
func TestReceiverENOSPCFailsTheSSTable(t *testing.T) {
	for _, kind := range []struct {
		name, version, compression, ranges string
		rows                               bool
	}{
		{"partial_lz4", "oa", "lz4", "(-6000000000000000000,5000000000000000000]", false},
		{"partial_none", "nb", "none", "(-6000000000000000000,5000000000000000000]", false},
		{"entire", "oa", "lz4", "(0,0]", false},
		{"rows", "oa", "lz4", "(-6000000000000000000,5000000000000000000]", true},
	} {
		for _, tr := range []string{TransportQUIC, TransportTCP} {
			t.Run(kind.name+"/"+tr, func(t *testing.T) {
				ca := newTestCA(t)
				root := t.TempDir()
				parents := genTable(t, root, "t", genSpec{version: kind.version, compression: kind.compression, seeds: []uint64{7}, partitions: 300})
				if kind.rows {
					markLegacyCounterShards(t, parents[0])
				}
				n := startNode(t, Config{Transport: tr, FrameSize: 16 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
				ranges, _ := token.ParseRanges(token.Murmur3, kind.ranges)
				req := FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}
				store := &faultStorage{suffix: "-Data.db", at: 100 << 10, writeErr: syscall.ENOSPC}
				res, err := Fetch(context.Background(), Config{Transport: tr, storage: store}, ca.client(t, ca), req, nil)
				var se *SessionError
				if err == nil || errors.As(err, &se) || len(res.Failed) != 1 {
					t.Fatalf("want one failed sstable, got %v (%v)", err, res)
				}
				var fe *SSTableError
				if !errors.As(res.Failed[0], &fe) || fe.Code != wire.CodeNoSpace || !errors.Is(fe, syscall.ENOSPC) {
					t.Fatalf("failure %v", res.Failed[0])
				}
				if msg := fe.Error(); !strings.Contains(msg, "into "+req.Dir+":") || !strings.Contains(msg, "no space left on device") {
					t.Errorf("the error does not name the directory and the fault: %s", msg)
				}
				t.Log(fe)
				// Nothing was installed or kept, so not even a resume record was written.
				listing(t, req.Dir, nil)
			})
		}
	}
}

// A torn write (a file system that says it wrote a frame but kept only its first bytes)
// inside the verified prefix of a Fetch that is then cancelled: the record names the prefix
// (its chunks passed their CRCs in memory), the resumed Fetch re-verifies what the file holds
// as it replays it, fails the sstable with a checksum error and drops the prefix, and the
// next resume fetches the sstable whole. Nothing torn is ever visible.
func TestTornWriteCaughtOnResume(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{31}, partitions: bigPartitions})
	n := startNode(t, Config{FrameSize: 64 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
	ranges, _ := token.ParseRanges(token.Murmur3, "(-8000000000000000000,8000000000000000000]")
	req := FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}

	const tornAt = 1<<20 + 12345
	store := &faultStorage{suffix: "-Data.db", at: tornAt, torn: true}
	n.srv.SetThroughput(8<<20, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Fetch(ctx, Config{storage: store}, ca.client(t, ca), req, func(st SessionStatus) {
		if st.BytesDone >= 3<<20 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled fetch: %v", err)
	}
	store.mu.Lock()
	tears := store.tears
	store.mu.Unlock()
	if tears != 1 {
		t.Fatalf("%d torn writes, want 1", tears)
	}
	checkNothingHalfInstalled(t, req.Dir, res.SSTables)
	if p := readState(t, req).Partial; p == nil || p.Bytes <= tornAt {
		t.Fatalf("the record does not name a prefix past the torn write: %+v", p)
	}
	n.srv.SetThroughput(0, 0)

	req.Resume = true
	res, err = Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	if err == nil || len(res.Failed) != 1 || !errors.Is(res.Failed[0], ErrChecksum) {
		t.Fatalf("resume over a torn prefix: %v", err)
	}
	if msg := res.Failed[0].Error(); !strings.Contains(msg, "kept Data.db prefix") {
		t.Errorf("the error does not say the kept prefix failed: %s", msg)
	}
	t.Log(res.Failed[0])
	listing(t, req.Dir, nil, record(req)) // the prefix and its kept file dropped
	if st := readState(t, req); st.Partial != nil || len(st.Installed) != 0 {
		t.Errorf("resume record after the failed replay: %+v", st)
	}

	res, err = Fetch(context.Background(), Config{}, ca.client(t, ca), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, parents, ranges, res)
}

// The read-ahead policy asks the device for what is sent, ahead of sending it, and for
// nothing past a run: every byte the sender reads of a parent's Data.db was asked for
// before, and every hint lies inside what is read.
func TestReadAheadAsksForWhatIsSent(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{11}, partitions: 2000})
	store := &faultStorage{}
	n := startNode(t, Config{storage: store, FrameSize: 64 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
	ranges, _ := token.ParseRanges(token.Murmur3, "(-8000000000000000000,-2000000000000000000],(1000000000000000000,7000000000000000000]")
	res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
		FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, parents, ranges, res)
	if res.SSTables[0].Kind != "partial" {
		t.Fatalf("fetched %s", res.SSTables[0].Kind)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	data := parents[0] + "-Data.db"
	reads, hints := store.reads[data], store.hints[data]
	if len(reads) == 0 || len(hints) == 0 {
		t.Fatalf("%d reads, %d hints", len(reads), len(hints))
	}
	within := func(s span, in []span) bool {
		for _, x := range in {
			if x.off <= s.off && s.end <= x.end {
				return true
			}
		}
		return false
	}
	readRanges, hintRanges := merge(reads), merge(hints)
	for _, h := range hints {
		if !within(h, readRanges) {
			t.Errorf("hint %v reaches past what is sent, %v", h, readRanges)
		}
	}
	for _, r := range reads {
		var before []span
		for _, h := range hints {
			if h.seq < r.seq {
				before = append(before, h)
			}
		}
		if !within(r, merge(before)) {
			t.Errorf("read %v was not asked for before it (hints %v)", r, hintRanges)
			break
		}
	}
}

// merge joins touching or overlapping spans.
func merge(spans []span) []span {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b span) int { return int(a.off - b.off) })
	var out []span
	for _, x := range s {
		if len(out) > 0 && x.off <= out[len(out)-1].end {
			out[len(out)-1].end = max(out[len(out)-1].end, x.end)
			continue
		}
		out = append(out, x)
	}
	return out
}

// Writables without a file (File() nil) make every zero-copy path of the receiver fall back
// and lose nothing: splice on the plain TCP plane (payloads through memory), the rows copy
// (through memory) and a BTI child's keys read back from the Data.db being received
// (IndexPositions: a file of the rebuild's own).
func TestFetchThroughWritablesWithoutFiles(t *testing.T) {
	for _, tr := range []string{TransportQUIC, TransportTCP} {
		t.Run(tr, func(t *testing.T) {
			ca := newTestCA(t)
			root := t.TempDir()
			n := startNode(t, Config{Transport: tr, FrameSize: 16 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
			ranges, _ := token.ParseRanges(token.Murmur3, "(-6000000000000000000,5000000000000000000]")
			for name, spec := range map[string]genSpec{
				"big_lz4": {version: "oa", compression: "lz4", seeds: []uint64{1}, partitions: 300},
				"bti_lz4": {version: "da", compression: "lz4", seeds: []uint64{2}, partitions: 300},
				"rows":    {version: "oa", compression: "lz4", seeds: []uint64{3}, partitions: 300},
			} {
				parents := genTable(t, root, name, spec)
				if name == "rows" {
					markLegacyCounterShards(t, parents[0])
				}
				store := &faultStorage{}
				res, err := Fetch(context.Background(), Config{Transport: tr, storage: store}, ca.client(t, ca),
					FetchRequest{Peer: n.addr, Keyspace: "ks", Table: name, Ranges: ranges, Dir: t.TempDir()}, nil)
				if err != nil {
					t.Fatal(name, err)
				}
				checkFetched(t, parents, ranges, res)
			}
		})
	}
}
