package stream

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// orderStorage is the production storage, recording in one sequence the read-ahead hints and
// reads of every Readable and how often Readables are closed; wait, when set, runs before
// every read.
type orderStorage struct {
	mu     sync.Mutex
	seq    int
	events []ioEvent
	closed int
	made   int
	wait   func(name string)
}

type ioEvent struct {
	name     string
	hint     bool
	off, end int64
	seq      int
}

func (s *orderStorage) readable(f *os.File, owned bool) Readable {
	s.mu.Lock()
	s.made++
	s.mu.Unlock()
	return &orderReadable{s: s, Readable: fileStorage{}.readable(f, owned)}
}

func (s *orderStorage) writable(f *os.File) Writable { return fileStorage{}.writable(f) }

func (s *orderStorage) record(name string, hint bool, off, end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.events = append(s.events, ioEvent{name, hint, off, end, s.seq})
}

// hintedFiles is how many files were hinted so far.
func (s *orderStorage) hintedFiles() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, e := range s.events {
		if e.hint {
			seen[e.name] = true
		}
	}
	return len(seen)
}

type orderReadable struct {
	Readable
	s *orderStorage
}

func (r *orderReadable) ReadAt(p []byte, off int64) error {
	if r.s.wait != nil {
		r.s.wait(r.Name())
	}
	r.s.record(r.Name(), false, off, off+int64(len(p)))
	return r.Readable.ReadAt(p, off)
}

func (r *orderReadable) WillRead(off, n int64) {
	r.s.record(r.Name(), true, off, off+n)
	r.Readable.WillRead(off, n)
}

func (r *orderReadable) Close() error {
	r.s.mu.Lock()
	r.s.closed++
	r.s.mu.Unlock()
	return r.Readable.Close()
}

// The sender makes the next sstable (its manifest, digest and first hints) while the one
// before it is sent, and only that one: each parent's runs are asked for before the previous
// parent's bytes are all read, and never before the bytes of the parent two before it are.
// A sender that made each sstable only at its turn would leave every read of a parent waiting
// for the next one's hint, which fails the test after a timeout.
func TestSenderMakesTheNextSSTableAhead(t *testing.T) {
	for _, compression := range []string{"lz4", "none"} {
		t.Run(compression, func(t *testing.T) {
			ca := newTestCA(t)
			root := t.TempDir()
			parents := genTable(t, root, "t", genSpec{version: "oa", compression: compression, seeds: []uint64{21, 22, 23, 24}, partitions: 400})
			store := &orderStorage{}
			var (
				mu       sync.Mutex
				order    []string // Data.db files in the order their first byte was read
				timedOut string
			)
			store.wait = func(name string) {
				mu.Lock()
				k := slices.Index(order, name)
				if k < 0 {
					order = append(order, name)
					k = len(order) - 1
				}
				failed := timedOut != ""
				mu.Unlock()
				if failed {
					return
				}
				// While the k-th sstable is sent, the (k+1)-th is made ahead and hinted.
				want := min(k+2, len(parents))
				for deadline := time.Now().Add(10 * time.Second); store.hintedFiles() < want; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						mu.Lock()
						timedOut = name
						mu.Unlock()
						return
					}
				}
			}
			n := startNode(t, Config{storage: store, FrameSize: 16 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
			ranges, _ := token.ParseRanges(token.Murmur3, "(-8000000000000000000,-2000000000000000000],(1000000000000000000,7000000000000000000]")
			res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
				FetchRequest{Peer: n.addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: t.TempDir()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkFetched(t, parents, ranges, res)
			if timedOut != "" {
				t.Fatalf("reading %s, the next sstable was not made ahead within 10 s", filepath.Base(timedOut))
			}
			if len(order) != len(parents) {
				t.Fatalf("read %d parents, want %d", len(order), len(parents))
			}
			store.mu.Lock()
			defer store.mu.Unlock()
			firstHint, lastRead := map[string]int{}, map[string]int{}
			for _, e := range store.events {
				if e.hint {
					if _, ok := firstHint[e.name]; !ok {
						firstHint[e.name] = e.seq
					}
				} else {
					lastRead[e.name] = e.seq
				}
			}
			for k, name := range order {
				if k+1 < len(order) && firstHint[order[k+1]] > lastRead[name] {
					t.Errorf("%s was first hinted after the last read of %s", filepath.Base(order[k+1]), filepath.Base(name))
				}
				if k+2 < len(order) && firstHint[order[k+2]] < lastRead[name] {
					t.Errorf("%s was hinted before the last read of %s: more than %d sstable made ahead",
						filepath.Base(order[k+2]), filepath.Base(name), sstablesAhead)
				}
			}
			if store.closed != store.made {
				t.Errorf("%d Readables made, %d closed", store.made, store.closed)
			}
		})
	}
}

// A preparer closed early closes the sources of every sstable it made, taken or not.
func TestPreparerCloseReleasesWhatItMade(t *testing.T) {
	store := &orderStorage{}
	var todo []*prepared
	for seed := range uint64(3) {
		p, tb, st, pa := outgoingPartial(t, "lz4", 30+seed, 200)
		todo = append(todo, &prepared{o: &outgoing{planned: wire.PlannedSSTable{ID: filepath.Base(p) + "@1", Kind: wire.KindPartial,
			Partitions: uint64(pa.Plan.Partitions)}, parent: tb, stats: st, partial: pa}})
	}
	pr := prepareAhead(todo, store)
	p, ok := pr.next()
	if !ok || p.err != nil || p.o != todo[0].o {
		t.Fatalf("first made: %v, %+v", ok, p)
	}
	closeSources(p.srcs)
	pr.close()
	if store.made == 0 || store.closed != store.made {
		t.Errorf("%d Readables made, %d closed", store.made, store.closed)
	}
	if _, ok := pr.next(); ok {
		t.Error("a closed preparer gave another sstable")
	}
}

// aheadOf asks for up to two windows ahead of the frame being sent, over the end of one run
// into the next file sources (sources in memory take none of it), never past a source's end,
// and asks again only once less than a window is left asked for.
func TestAheadOfAcrossSources(t *testing.T) {
	store := &orderStorage{}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := func() Readable { return store.readable(f, false) }
	const w = runAheadWindow
	srcs := []source{
		{r: r(), off: 100, n: w / 2},
		{mem: []byte("rows")},
		{r: r(), off: 10 * w, n: w},
		{r: r(), off: 20 * w, n: 4 * w},
	}
	hints := func() []ioEvent {
		store.mu.Lock()
		defer store.mu.Unlock()
		out := slices.Clone(store.events)
		store.events = nil
		return out
	}
	aheadOf(srcs, 0, 0)
	want := []ioEvent{{off: 100, end: 100 + w/2}, {off: 10 * w, end: 11 * w}, {off: 20 * w, end: 20*w + w/2}}
	check := func(what string, got, want []ioEvent) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: hints %+v, want %+v", what, got, want)
		}
		for i := range got {
			if got[i].off != want[i].off || got[i].end != want[i].end || !got[i].hint {
				t.Fatalf("%s: hints %+v, want %+v", what, got, want)
			}
		}
	}
	check("first frame", hints(), want)
	// More than a window still asked for ahead: nothing new.
	aheadOf(srcs, 0, w/4)
	aheadOf(srcs, 2, 0)
	check("a window ahead", hints(), nil)
	// Less than a window left asked for: on to two windows ahead of the frame.
	aheadOf(srcs, 2, w/2+1)
	check("less than a window ahead", hints(), []ioEvent{{off: 20*w + w/2, end: 20*w + 3*w/2 + 1}})
	// Never past the end of the last source.
	aheadOf(srcs, 3, 3*w+w/2)
	check("the end", hints(), []ioEvent{{off: 23*w + w/2, end: 24 * w}})
	aheadOf(srcs, 3, 4*w-1)
	check("past the end", hints(), nil)
}
