package slice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/internal/testkit/sstabletest"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// A compressed partial filled as it arrives, from nothing but what the wire carries (the
// sender's whole parent chunks per segment, in pieces cut anywhere, the index slice in pieces
// between them, each run's exact span): the child verifies (extended), a sequential reader
// finds exactly its index's partitions from byte 0 (fillers between runs), and it holds exactly
// the parent's partitions in the ranges. Many small ranges make many runs, some sharing a
// chunk, some starting on a chunk boundary.
func TestInPlaceFillFromShippedMaterial(t *testing.T) {
	for _, vn := range []string{"oa", "da"} {
		for _, comp := range []string{"lz4"} {
			forms := []IndexFormat{IndexRecords, IndexBig}
			if vn == "da" {
				forms = []IndexFormat{IndexRecords, IndexPositions}
			}
			for _, form := range forms {
				for _, rs := range []string{
					"(-6000000000000000000,-1000000000000000000],(2000000000000000000,-8000000000000000000]",
					vnodeRanges(40, 7),
				} {
					name := fmt.Sprintf("%s/%s/%s/%d-ranges", vn, comp, form, len(mustRanges(t, rs)))
					t.Run(name, func(t *testing.T) {
						parent, ranges := inPlaceParent(t, vn, comp, rs)
						partials, _, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Format: form})
						if err != nil || len(partials) != 1 {
							t.Fatalf("partials: %v (%d)", err, len(partials))
						}
						d := receiveInPlace(t, parent, partials[0], ranges, t.TempDir(), nil)
						checkInPlaceChild(t, parent, ranges, d)
					})
				}
			}
		}
	}
}

// A fill cut at its last clean point resumes in a second fill from the child as written: the
// prefix copied and proven, the rest of the received bytes taken after it; the child is the
// same as an uninterrupted one's.
func TestInPlaceFillResumesFromItsCleanPoint(t *testing.T) {
	parent, ranges := inPlaceParent(t, "oa", "lz4", vnodeRanges(12, 3))
	partials, _, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Format: IndexBig})
	if err != nil || len(partials) != 1 {
		t.Fatalf("partials: %v (%d)", err, len(partials))
	}
	whole := receiveInPlace(t, parent, partials[0], ranges, t.TempDir(), nil)
	cut := &inPlaceCut{at: partials[0].Layout.FileLength / 2}
	resumed := receiveInPlace(t, parent, partials[0], ranges, t.TempDir(), cut)
	if cut.state.Chunks == 0 || cut.state.Written == 0 {
		t.Fatalf("no clean point before %d bytes: %+v", cut.at, cut.state)
	}
	if cut.placed == 0 {
		t.Error("no received bytes after the resume were placeable (written through)")
	}
	checkInPlaceChild(t, parent, ranges, resumed)
	a, _ := os.ReadFile(whole.Path(descriptor.Data))
	b, _ := os.ReadFile(resumed.Path(descriptor.Data))
	if string(a) != string(b) {
		t.Errorf("the resumed child's Data.db differs from an uninterrupted one's (%d and %d bytes)", len(b), len(a))
	}
}

// inPlaceCut stops a fill after at received bytes, keeping the child as written and its
// clean point, and resumes a second fill from them.
type inPlaceCut struct {
	at     int64
	state  FillState
	placed int // frames the test placed itself after the resume (Placeable)
}

func mustRanges(t *testing.T, s string) token.RangeSet {
	t.Helper()
	r, err := token.ParseRanges(token.Murmur3, s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// vnodeRanges is n disjoint ranges of random widths across the ring, as vnodes make.
func vnodeRanges(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, seed))
	toks := make([]int64, 0, 2*n)
	for len(toks) < 2*n {
		toks = append(toks, rng.Int64()-rng.Int64()/2)
	}
	sortInt64(toks)
	s := ""
	for i := 0; i+1 < len(toks); i += 2 {
		if toks[i] == toks[i+1] {
			continue
		}
		if s != "" {
			s += ","
		}
		s += fmt.Sprintf("(%d,%d]", toks[i], toks[i+1])
	}
	return s
}

func sortInt64(a []int64) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func inPlaceParent(t *testing.T, vn, comp, rs string) (*sstable.Table, token.RangeSet) {
	t.Helper()
	v, _ := version.ParseWritable(vn)
	res, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Partitions: 400,
		PartitionSize: 3 << 10, RowSize: 300, IndexBlockSize: 1 << 10, Compression: comp, ChunkLength: 4 << 10, Seed: 23})
	if err != nil {
		t.Fatal(err)
	}
	return openTable(t, res.Desc.Prefix()), mustRanges(t, rs)
}

// receiveInPlace plays the receiver of a compressed partial filled in place: Data.db bytes in
// pieces of 1 to 9,000 bytes, the index slice in pieces between them, the rebuild told of each.
// With cut, the first fill stops after cut.at bytes and a second one resumes from its clean
// point.
func receiveInPlace(t *testing.T, parent *sstable.Table, pt Partial, ranges token.RangeSet, dir string, cut *inPlaceCut) descriptor.Descriptor {
	t.Helper()
	d, err := receiveInPlaceProving(t, parent, pt, ranges, dir, cut)
	if err != nil {
		t.Errorf("run ends: %v", err)
	}
	return d
}

// receiveInPlaceProving is receiveInPlace returning what VerifyEnds found of the written child.
func receiveInPlaceProving(t *testing.T, parent *sstable.Table, pt Partial, ranges token.RangeSet, dir string, cut *inPlaceCut) (descriptor.Descriptor, error) {
	t.Helper()
	pt.Index = indexSlice(t, parent, pt)
	lay, spec, sent := shippedMaterial(t, parent, pt)
	opts := InPlaceOptions{Spec: spec, Ranges: ranges, Runs: pt.Plan.Runs}

	start := func(d descriptor.Descriptor) (*fsx.Install, *os.File, *InPlaceFill, *PartialRebuild) {
		inst, err := fsx.NewInstall(d.Dir, d.Filename(descriptor.TOC))
		if err != nil {
			t.Fatal(err)
		}
		f, err := inst.Create(d.Filename(descriptor.Data))
		if err != nil {
			t.Fatal(err)
		}
		fill, err := NewInPlaceFill(lay, pt.Info, opts, f, f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewPartialRebuild(spec, inst, d, fill.RebuildLayout(), RebuildOptions{Partitions: pt.Plan.Partitions,
			Format: pt.IndexFormat, Ranges: ranges, Fill: fill})
		if err != nil {
			t.Fatal(err)
		}
		return inst, f, fill, r
	}
	rng := rand.New(rand.NewPCG(5, 9))
	placed := 0
	feed := func(fill *InPlaceFill, r *PartialRebuild, f *os.File, data []byte, index []byte) {
		for len(data) > 0 || len(index) > 0 {
			if len(data) > 0 {
				k := min(len(data), 1+rng.IntN(9000))
				// Where the bytes are written through, half the time the test places them
				// itself, as a splicing data plane does.
				if at, ok := fill.Placeable(int64(k)); ok && rng.IntN(2) == 0 {
					if _, err := f.WriteAt(data[:k], at); err != nil {
						t.Fatal(err)
					}
					if err := fill.Placed(data[:k]); err != nil {
						t.Fatal(fmt.Errorf("fill: %w", err))
					}
					placed++
				} else if err := fill.Write(data[:k]); err != nil {
					t.Fatal(fmt.Errorf("fill: %w", err))
				}
				data = data[k:]
				if err := r.Arrived(0); err != nil {
					t.Fatal(fmt.Errorf("rebuild: %w", err))
				}
			}
			if len(index) > 0 && rng.IntN(3) == 0 {
				k := min(len(index), 1+rng.IntN(700))
				if err := r.Write(index[:k]); err != nil {
					t.Fatal(fmt.Errorf("rebuild: %w", err))
				}
				index = index[k:]
			}
		}
	}

	d := descriptor.Descriptor{Dir: dir, Version: parent.Version(), ID: "1"}
	received := int64(0)
	var kept *os.File
	var err error
	if cut != nil {
		inst, f, fill, _ := start(d)
		rest := sent
		for received < cut.at {
			k := min(int64(len(rest)), 1+rng.Int64N(9000))
			if err := fill.Write(rest[:k]); err != nil {
				t.Fatal(err)
			}
			rest, received = rest[k:], received+k
		}
		st, ok := fill.Clean()
		if !ok {
			t.Fatal("no clean point")
		}
		cut.state = st
		if kept, err = os.CreateTemp(dir, "kept-"); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, st.Written)
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		kept.Write(b)
		inst.Abort()
		defer os.Remove(kept.Name())
		d.ID = "2"
	}
	inst, out, fill, r := start(d)
	defer inst.Abort()
	data := sent
	if cut != nil {
		if err := fill.Resume(cut.state, kept); err != nil {
			t.Fatal(err)
		}
		data = sent[cut.state.Bytes:]
	}
	feed(fill, r, out, data, pt.Index)
	if cut != nil {
		cut.placed = placed
	}
	fd, err := fill.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Finish(DataResult{Compression: fd.Info, DataLength: fd.DataLength, FileLength: fd.FileLength, Digest: fd.Digest, HasDigest: true}); err != nil {
		t.Fatal(fmt.Errorf("rebuild: %w", err))
	}
	if err := inst.Commit(); err != nil {
		t.Fatal(err)
	}
	data2, err := os.Open(d.Path(descriptor.Data))
	if err != nil {
		t.Fatal(err)
	}
	defer data2.Close()
	return d, fill.VerifyEnds(data2, fd.Info, fd.FileLength, r.RunLasts())
}

// A sender that claims a run ends past its last partition (bytes of the next, unasked-for
// partition taken in) is caught: the child would hold bytes no partition owns.
func TestInPlaceFillRefusesARunLongerThanItsPartitions(t *testing.T) {
	parent, ranges := inPlaceParent(t, "oa", "lz4", vnodeRanges(12, 3))
	partials, _, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Format: IndexBig})
	if err != nil || len(partials) != 1 {
		t.Fatalf("partials: %v (%d)", err, len(partials))
	}
	pt := partials[0]
	pt.Plan.Runs = append([]RunPlan(nil), pt.Plan.Runs...)
	lied := false
	for k := range pt.Plan.Runs[:len(pt.Plan.Runs)-1] {
		r := &pt.Plan.Runs[k]
		// Ten bytes more, inside the chunks the sender sends for it.
		if seg := segmentOf(pt.Layout, r.Hi-1); seg >= 0 && r.Hi+10 <= pt.Layout.Segments[seg].PHi && r.Hi+10 <= pt.Plan.Runs[k+1].Lo {
			r.Hi += 10
			lied = true
			break
		}
	}
	if !lied {
		t.Skip("no run has room to lie about")
	}
	if _, err := receiveInPlaceProving(t, parent, pt, ranges, t.TempDir(), nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a run ten bytes longer than its partitions: %v", err)
	}
}

func segmentOf(l Layout, pos int64) int {
	for i, s := range l.Segments {
		if pos >= s.PLo && pos < s.PHi {
			return i
		}
	}
	return -1
}

func checkInPlaceChild(t *testing.T, parent *sstable.Table, ranges token.RangeSet, d descriptor.Descriptor) {
	t.Helper()
	rep, err := sstable.Verify(d.Prefix(), sstable.VerifyOptions{Extended: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("filled child: %s", p)
	}
	parts := readAll(t, d.Prefix())
	if err := sstabletest.CheckScannable(d.Prefix(), sstabletest.Keys(parts)); err != nil {
		t.Errorf("filled child is not what its index says to a sequential reader: %v", err)
	}
	want := map[string][]byte{}
	for _, p := range readAll(t, parent.Desc.Prefix()) {
		if ranges.Contains(p.Token) {
			want[string(p.Key)] = p.Bytes
		}
	}
	got := 0
	for _, p := range parts {
		if len(p.Bytes) == 0 {
			continue // a filler
		}
		if w, ok := want[string(p.Key)]; !ok || string(w) != string(p.Bytes) {
			t.Errorf("filled child: partition %x is not the parent's", p.Key)
		}
		got++
	}
	if got != len(want) {
		t.Errorf("filled child holds %d partitions, want %d", got, len(want))
	}
}

// Every compressed fixture Cassandra wrote (each compressor, both formats, every key type)
// filled in place from the material one multi-run child per parent ships.
func TestInPlaceFillEveryFixture(t *testing.T) {
	for _, f := range fixtures.All(t) {
		ranges, ok := fixtureRanges(t, f)
		if !ok {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			parent := openTable(t, f.Prefix)
			if parent.Compression == nil {
				t.Skip("uncompressed: received back to back, nothing to fill")
			}
			if rep, err := sstable.Verify(f.Prefix, sstable.VerifyOptions{}); err != nil || !rep.Scannable {
				t.Skipf("a parent with bytes no partition owns is filled after receiving (%v)", err)
			}
			forms := []IndexFormat{IndexRecords, IndexBig}
			if parent.Version().Format == version.BTI {
				forms = []IndexFormat{IndexRecords, IndexPositions}
			}
			for _, form := range forms {
				partials, reason, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Bounds: Bounds{MaxDeadRatio: -1}, Format: form})
				if err != nil || len(partials) != 1 {
					t.Fatalf("%s: %d partials (%s): %v", form, len(partials), reason, err)
				}
				d := receiveInPlace(t, parent, partials[0], ranges, t.TempDir(), nil)
				checkInPlaceChild(t, parent, ranges, d)
			}
		})
	}
}

// shippedMaterial is what a receiver of partial pt of parent has: the received layout, the
// spec from the shipped Statistics.db, and the Data.db bytes as sent (the segments in order).
func shippedMaterial(t *testing.T, parent *sstable.Table, pt Partial) (*Layout, *Spec, []byte) {
	t.Helper()
	statsBytes, err := os.ReadFile(parent.Path(descriptor.Statistics))
	if err != nil {
		t.Fatal(err)
	}
	shipped := make([]Segment, len(pt.Layout.Segments))
	var sent []byte
	for i, s := range pt.Layout.Segments {
		shipped[i] = Segment{FirstChunk: s.FirstChunk, LastChunk: s.LastChunk, PLo: s.PLo, DstOff: s.DstOff, SrcEnd: s.Length()}
		b := make([]byte, s.Length())
		if _, err := parent.DataFile().ReadAt(b, s.SrcOff); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, b...)
	}
	lay, err := ReceivedLayout(true, pt.Layout.ChunkLength, pt.Layout.DataLength, shipped)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := SpecFromStatistics(parent.Version(), statsBytes, pt.Rows)
	if err != nil {
		t.Fatal(err)
	}
	return lay, spec, sent
}

// probeWriter is a fill's child Data.db that, before each write, has probe read keys through
// the fill from another goroutine, as a rebuild does while the fill writes.
type probeWriter struct {
	f     *os.File
	probe func()
}

func (w probeWriter) WriteAt(p []byte, off int64) (int, error) {
	w.probe()
	return w.f.WriteAt(p, off)
}

// KeyAt, called from the rebuild's goroutine while the fill is inside a Write, reads only
// chunks whose bytes are in the file: a chunk written through is counted as written only once
// its coalesced write is done, so a key is never read from bytes still in the fill's buffer
// (which read as a checksum failure, or worse, the file's old bytes).
func TestInPlaceFillKeyAtNeverReadsUnwrittenChunks(t *testing.T) {
	parent, ranges := inPlaceParent(t, "da", "lz4", "(-6000000000000000000,-1000000000000000000],(2000000000000000000,-8000000000000000000]")
	partials, _, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Format: IndexPositions})
	if err != nil || len(partials) != 1 {
		t.Fatalf("partials: %v (%d)", err, len(partials))
	}
	pt := partials[0]
	lay, spec, sent := shippedMaterial(t, parent, pt)
	type want struct {
		pos int64
		key []byte
	}
	var wants []want
	if err := parent.ScanPartitions(func(p *sstable.Partition) error {
		if ranges.Contains(p.Token) {
			wants = append(wants, want{p.Position, append([]byte(nil), p.Key...)})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "child-Data.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fill *InPlaceFill
	var probes sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	read := 0
	var reader sync.Mutex // KeyAt has one caller at a time (the rebuild's goroutine)
	probe := func() {
		done := make(chan struct{})
		probes.Add(1)
		go func() {
			defer probes.Done()
			defer close(done)
			reader.Lock()
			defer reader.Unlock()
			for _, w := range wants {
				key, ok, err := fill.KeyAt(w.pos)
				mu.Lock()
				switch {
				case err != nil:
					problems = append(problems, fmt.Sprintf("KeyAt(%d): %v", w.pos, err))
				case ok && !bytes.Equal(key, w.key):
					problems = append(problems, fmt.Sprintf("KeyAt(%d) = %x, want %x", w.pos, key, w.key))
				case ok:
					read++
				}
				mu.Unlock()
				if !ok || err != nil {
					return
				}
			}
		}()
		select { // the fill may hold its lock here (a re-encoded chunk's write): go on then
		case <-done:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if fill, err = NewInPlaceFill(lay, pt.Info, InPlaceOptions{Spec: spec, Ranges: ranges, Runs: pt.Plan.Runs}, probeWriter{f, probe}, f); err != nil {
		t.Fatal(err)
	}
	// The index slice's keys are what places runs; feed them through a rebuild as a receiver
	// does, and the data in frames of many chunks, written through in one write each.
	d := descriptor.Descriptor{Dir: t.TempDir(), Version: parent.Version(), ID: "1"}
	inst, err := fsx.NewInstall(d.Dir, d.Filename(descriptor.TOC))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Abort()
	r, err := NewPartialRebuild(spec, inst, d, fill.RebuildLayout(), RebuildOptions{Partitions: pt.Plan.Partitions, Format: pt.IndexFormat, Ranges: ranges, Fill: fill})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(indexSlice(t, parent, pt)); err != nil {
		t.Fatal(err)
	}
	for data := sent; len(data) > 0; {
		k := min(len(data), 64<<10)
		if err := fill.Write(data[:k]); err != nil {
			t.Fatal(err)
		}
		data = data[k:]
	}
	probes.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i, p := range problems {
		if i == 5 {
			t.Errorf("and %d more", len(problems)-5)
			break
		}
		t.Error(p)
	}
	if read == 0 {
		t.Error("no probe read a key: the test proves nothing")
	}
}
