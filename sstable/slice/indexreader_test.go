package slice

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// IndexReader produces, in pieces, exactly the index slice Partials gathers in memory, for
// BIG and BTI children of one and of several runs, with and without promoted (row) indexes;
// IndexLater gathers only its length and the parent's partition count (for BIG in the plan's
// own pass); a reader whose pass disagrees with the planned length fails instead of sending
// short.
func TestIndexReaderMatchesGatheredSlice(t *testing.T) {
	old := indexPiece
	indexPiece = 1000 // many pieces per slice
	defer func() { indexPiece = old }()
	for _, tc := range []struct {
		vn         string
		partitions int64
		size, row  int
		block      int
	}{{"oa", 3000, 512, 128, 4 << 10}, {"da", 3000, 512, 128, 4 << 10}, {"oa", 300, 16 << 10, 512, 4 << 10}, {"da", 300, 16 << 10, 512, 4 << 10},
		{"nb", 100, 96 << 10, 256, 512}} { // promoted indexes longer than a piece
		vn := tc.vn
		v, _ := version.ParseWritable(vn)
		res, err := gen.Generate(context.Background(), filepath.Join(t.TempDir(), vn), gen.Options{Version: v,
			Partitions: tc.partitions, PartitionSize: tc.size, RowSize: tc.row, IndexBlockSize: tc.block, Seed: 8})
		if err != nil {
			t.Fatal(err)
		}
		parent := openTable(t, res.Desc.Prefix())
		for _, spec := range []string{"(-9000000000000000000,-1000000000000000000]",
			"(-9000000000000000000,-6000000000000000000],(0,3000000000000000000],(5000000000000000000,-9100000000000000000]"} {
			ranges, err := token.ParseRanges(token.Murmur3, spec)
			if err != nil {
				t.Fatal(err)
			}
			held, _, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Bounds: Bounds{MaxDeadRatio: -1}})
			if err != nil {
				t.Fatal(err)
			}
			later, _, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Bounds: Bounds{MaxDeadRatio: -1}, IndexLater: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(held) == 0 || len(held) != len(later) {
				t.Fatalf("%s %s: %d children held, %d later", vn, spec, len(held), len(later))
			}
			for i := range held {
				if later[i].Index != nil || later[i].IndexLength != int64(len(held[i].Index)) || held[i].IndexLength != int64(len(held[i].Index)) {
					t.Fatalf("%s %s: child %d: later %d bytes held / %d long, gathered %d", vn, spec, i, len(later[i].Index), later[i].IndexLength, len(held[i].Index))
				}
				if later[i].ParentPartitions != tc.partitions || held[i].ParentPartitions != tc.partitions {
					t.Fatalf("%s %s: child %d: parent of %d partitions counted %d (later), %d (held)", vn, spec, i, tc.partitions, later[i].ParentPartitions, held[i].ParentPartitions)
				}
				if later[i].Plan.IndexBytes != 0 && later[i].Plan.IndexBytes != later[i].IndexLength {
					t.Fatalf("%s %s: child %d: plan measured %d bytes, partial says %d", vn, spec, i, later[i].Plan.IndexBytes, later[i].IndexLength)
				}
				r, err := IndexReader(parent, later[i])
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(io.LimitReader(struct{ io.Reader }{r}, 1<<30)) // small reads, whatever ReadAll asks
				r.Close()
				if err != nil || !bytes.Equal(got, held[i].Index) {
					t.Fatalf("%s %s: child %d (%d runs): read %d bytes (%v), gathered %d", vn, spec, i, len(later[i].Plan.Runs), len(got), err, len(held[i].Index))
				}
			}
			wrong := later[0]
			wrong.IndexLength--
			r, _ := IndexReader(parent, wrong)
			if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "planned") {
				t.Errorf("%s: a slice longer than planned read without error: %v", vn, err)
			}
			r.Close()
			if v.Format == version.Big {
				// The plan's pass located each run's entries in Index.db; the reader reads only
				// those, and entries that are not the planned partitions fail it.
				moved := later[0]
				moved.Plan.Runs = append([]RunPlan(nil), moved.Plan.Runs...)
				if moved.Plan.Runs[0].IndexHi == 0 {
					t.Fatalf("%s %s: a BIG run planned without its Index.db entries", vn, spec)
				}
				moved.Plan.Runs[0].Partitions++
				r, _ = IndexReader(parent, moved)
				if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "planned") {
					t.Errorf("%s: a run of other entries than planned read without error: %v", vn, err)
				}
				r.Close()
			}
			r, _ = IndexReader(parent, later[0]) // closed before the end: the pass stops
			r.Read(make([]byte, 10))
			r.Close()
			if v.Format == version.Big {
				spansMatch(t, parent, ranges)
			}
		}
	}
}

// spansMatch checks that an IndexBig child's slice is its runs' Index.db spans, read in pieces
// that end on entries' ends (a piece smaller than an entry grows), and that a span planned with
// a partition too many, or whose first entry is not at its run's data start, fails the read
// naming Index.db.
func spansMatch(t *testing.T, parent *sstable.Table, ranges token.RangeSet) {
	t.Helper()
	spans, _, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Bounds: Bounds{MaxDeadRatio: -1}, Format: IndexBig})
	if err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(parent.Path(descriptor.Index))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range spans {
		var want []byte
		for _, r := range p.Plan.Runs {
			want = append(want, index[r.IndexLo:r.IndexHi]...)
		}
		r, err := IndexReader(parent, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, want) || int64(len(got)) != p.IndexLength {
			t.Fatalf("child %d: read %d bytes (%v), spans hold %d, planned %d", i, len(got), err, len(want), p.IndexLength)
		}
		for _, bad := range []func(*RunPlan){func(r *RunPlan) { r.Partitions++ }, func(r *RunPlan) { r.Lo++ }} {
			wrong := p
			wrong.Plan.Runs = append([]RunPlan(nil), p.Plan.Runs...)
			bad(&wrong.Plan.Runs[0])
			r, _ := IndexReader(parent, wrong)
			if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "Index.db") {
				t.Errorf("child %d: a span that is not its plan read without naming Index.db: %v", i, err)
			}
			r.Close()
		}
	}
}

// A slice that ends inside a record fails the rebuild at Finish, naming the record, in either
// format.
func TestPartialRebuildTruncatedSlice(t *testing.T) {
	for _, tc := range []struct {
		format IndexFormat
		rec    []byte
	}{
		{IndexRecords, AppendIndexRecord(nil, []byte("key"), 100, -1, nil)},
		{IndexBig, bigindex.AppendEntry(nil, []byte("key"), 100, []byte{1, 2, 3})},
	} {
		r := &PartialRebuild{prevPos: -1, p: token.Murmur3, format: tc.format}
		if err := r.Write(tc.rec[:len(tc.rec)-1]); err != nil {
			t.Fatal(err) // its end may yet come
		}
		if _, err := r.Finish(DataResult{}); err == nil || !strings.Contains(err.Error(), "record 0") {
			t.Errorf("%s: truncated slice: %v", tc.format, err)
		}
	}
}

// An Index.db entry no Cassandra writes (a position past int64) fails the rebuild with its
// offset in the slice; a BIG slice for a BTI sstable is refused before anything is rebuilt.
func TestPartialRebuildHostileEntries(t *testing.T) {
	bad := append([]byte{0, 1, 'b'}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0)
	r := &PartialRebuild{prevPos: -1, p: token.Murmur3, format: IndexBig}
	if err := r.Write(bad); err == nil || !strings.Contains(err.Error(), "exceeds int64") || !strings.Contains(err.Error(), "offset 0") {
		t.Errorf("position past int64: %v", err)
	}
	v, _ := version.ParseWritable("da")
	if _, err := NewPartialRebuild(&Spec{Version: v, Partitioner: token.Murmur3}, nil, descriptor.Descriptor{}, nil, RebuildOptions{Format: IndexBig}); err == nil {
		t.Error("a BIG index slice for a BTI sstable was taken")
	}
}

// A partition outside the ranges asked for fails the rebuild, in either format, before it
// reaches the builder: a sender cannot slip in data the receiver did not ask for.
func TestPartialRebuildRefusesPartitionsOutsideTheRanges(t *testing.T) {
	key := []byte("key")
	tok := token.Murmur3.Token(key)
	ranges := token.RangeSet{{Left: tok, Right: token.Token{Kind: tok.Kind, Long: tok.Long + 1000}}}
	for _, tc := range []struct {
		format IndexFormat
		rec    []byte
	}{
		{IndexRecords, AppendIndexRecord(nil, key, 100, -1, nil)},
		{IndexBig, bigindex.AppendEntry(nil, key, 100, nil)},
	} {
		r := &PartialRebuild{prevPos: -1, p: token.Murmur3, format: tc.format, within: ranges.Within()}
		if err := r.Write(tc.rec); err == nil || !strings.Contains(err.Error(), "outside the ranges") {
			t.Errorf("%s: a partition at the range's open end: %v", tc.format, err)
		}
	}
}

// positionsChild is a compressed BTI parent of small partitions and the one child a sender
// makes of it for ranges with an IndexPositions slice, the slice as IndexReader sends it.
type positionsChild struct {
	parent *sstable.Table
	ranges token.RangeSet
	pt     Partial
	slice  []byte
	stats  []byte
}

func newPositionsChild(tb testing.TB) *positionsChild {
	v, _ := version.ParseWritable("da")
	res, err := gen.Generate(context.Background(), tb.TempDir(), gen.Options{Version: v, Partitions: 300,
		PartitionSize: 512, RowSize: 128, Compression: "lz4", ChunkLength: 4 << 10, Seed: 5})
	if err != nil {
		tb.Fatal(err)
	}
	c := &positionsChild{parent: openTable(tb, res.Desc.Prefix())}
	c.ranges, _ = token.ParseRanges(token.Murmur3, "(-6000000000000000000,3000000000000000000]")
	partials, _, err := Partials(c.parent, c.ranges, PartialOptions{OnePerParent: true, Format: IndexPositions})
	if err != nil || len(partials) != 1 {
		tb.Fatalf("%d partials: %v", len(partials), err)
	}
	c.pt = partials[0]
	rd, err := IndexReader(c.parent, c.pt)
	if err != nil {
		tb.Fatal(err)
	}
	if c.slice, err = io.ReadAll(rd); err != nil {
		tb.Fatal(err)
	}
	if c.stats, err = os.ReadFile(c.parent.Path(descriptor.Statistics)); err != nil {
		tb.Fatal(err)
	}
	return c
}

// rebuild receives the child's runs into dir and rebuilds it from slice, handed over in
// pieces of the given sizes (the whole slice at once when none), Data.db arriving whole.
func (c *positionsChild) rebuild(tb testing.TB, dir string, slice []byte, pieces ...int) error {
	spec, err := SpecFromStatistics(c.parent.Version(), c.stats, c.pt.Rows)
	if err != nil {
		tb.Fatal(err)
	}
	d := descriptor.Descriptor{Dir: dir, Version: c.parent.Version(), ID: "1"}
	inst, err := fsx.NewInstall(dir, d.Filename(descriptor.TOC))
	if err != nil {
		tb.Fatal(err)
	}
	defer inst.Abort()
	f, err := inst.Create(d.Filename(descriptor.Data))
	if err != nil {
		tb.Fatal(err)
	}
	shipped := make([]Segment, len(c.pt.Layout.Segments))
	for i, s := range c.pt.Layout.Segments {
		shipped[i] = Segment{FirstChunk: s.FirstChunk, LastChunk: s.LastChunk, PLo: s.PLo, DstOff: s.DstOff, SrcEnd: s.Length()}
		if _, err := io.Copy(io.NewOffsetWriter(f, s.DstOff), io.NewSectionReader(c.parent.DataFile(), s.SrcOff, s.Length())); err != nil {
			tb.Fatal(err)
		}
	}
	lay, err := ReceivedLayout(true, c.pt.Layout.ChunkLength, c.pt.Layout.DataLength, shipped)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := NewPartialRebuild(spec, inst, d, lay, RebuildOptions{Format: IndexPositions, Ranges: c.ranges, Data: f, Compression: c.pt.Info})
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; len(slice) > 0; i++ {
		k := len(slice)
		if len(pieces) > 0 {
			k = min(k, max(1, pieces[i%len(pieces)]))
		}
		if err := r.Write(slice[:k]); err != nil {
			return err
		}
		slice = slice[k:]
	}
	_, err = r.Finish(DataResult{Compression: c.pt.Info, DataLength: lay.DataLength, FileLength: lay.FileLength})
	return err
}

// A positions slice comes from a peer too: a record that repeats the one before, one past the
// runs, one cut short, or one whose key the received Data.db does not hold where it says (a
// position inside a partition) fails the rebuild, naming the record, and is never indexed.
func TestPartialRebuildHostilePositions(t *testing.T) {
	c := newPositionsChild(t)
	first := AppendPositionRecord(nil, c.pt.Plan.Lo, -1)
	rest := c.slice[len(first):]
	for _, tc := range []struct {
		name, want string
		slice      []byte
	}{
		{"as sent", "", c.slice},
		{"a record repeated", "record 1: position increase 0", append(append(append([]byte{}, first...), AppendPositionRecord(nil, 0, -1)...), rest...)},
		{"past the runs", "record 0", AppendPositionRecord(nil, c.parent.DataLength()+1<<20, -1)},
		{"cut short", "record 1", append(append([]byte{}, first...), 0x80)},
		{"inside a partition", "record 0", append(AppendPositionRecord(nil, c.pt.Plan.Lo+7, -1), rest...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.rebuild(t, t.TempDir(), tc.slice)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("the slice as sent: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// FuzzPartialRebuildPositions hands a positions rebuild arbitrary slices, cut into arbitrary
// pieces: it fails or rebuilds, never panics, and what it rebuilds holds only partitions of the
// ranges, in order (the rebuild's own checks), read from the data received.
func FuzzPartialRebuildPositions(f *testing.F) {
	c := newPositionsChild(f)
	base := f.TempDir()
	f.Add(c.slice, uint16(0))
	f.Add(c.slice, uint16(7))
	f.Add(AppendPositionRecord(nil, c.pt.Plan.Lo+7, -1), uint16(1))
	f.Fuzz(func(t *testing.T, slice []byte, piece uint16) {
		var pieces []int
		if piece > 0 {
			pieces = []int{int(piece)}
		}
		dir, err := os.MkdirTemp(base, "")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		_ = c.rebuild(t, dir, slice, pieces...)
	})
}

// smallPositionsParent is a compressed BTI parent of 3000 small partitions without row indexes.
func smallPositionsParent(t *testing.T) *sstable.Table {
	t.Helper()
	v, _ := version.ParseWritable("da")
	res := generate(t, filepath.Join(t.TempDir(), "da"), gen.Options{Version: v,
		Partitions: 3000, PartitionSize: 512, RowSize: 128, IndexBlockSize: 4 << 10, Seed: 9})
	return openTable(t, res.Desc.Prefix())
}

// IndexKeep keeps the IndexPositions slice the plan's own pass made when it fits the bound:
// the very bytes IndexReader makes as the slice is sent. A slice past the bound is dropped
// (the plan then locates its runs for IndexReader), so what a sender holds stays bounded
// whatever the partition count.
func TestIndexKeepHoldsThePlannedSliceWithinItsBound(t *testing.T) {
	parent := smallPositionsParent(t)
	ranges, err := token.ParseRanges(token.Murmur3, "(-9000000000000000000,-6000000000000000000],(0,3000000000000000000]")
	if err != nil {
		t.Fatal(err)
	}
	opts := PartialOptions{OnePerParent: true, Bounds: Bounds{MaxDeadRatio: -1}, IndexLater: true, Format: IndexPositions}
	later, _, err := Partials(parent, ranges, opts)
	if err != nil || len(later) != 1 || later[0].Index != nil {
		t.Fatalf("made as sent: %v, %d children", err, len(later))
	}
	r, err := IndexReader(parent, later[0])
	if err != nil {
		t.Fatal(err)
	}
	made, err := io.ReadAll(r)
	r.Close()
	if err != nil || int64(len(made)) != later[0].IndexLength {
		t.Fatalf("IndexReader: %d bytes of %d, %v", len(made), later[0].IndexLength, err)
	}
	for _, c := range []struct {
		keep int64
		held bool
	}{{int64(len(made)), true}, {int64(len(made)) - 1, false}, {1 << 30, true}} {
		opts.IndexKeep = c.keep
		got, _, err := Partials(parent, ranges, opts)
		if err != nil || len(got) != 1 {
			t.Fatalf("keep %d: %v, %d children", c.keep, err, len(got))
		}
		switch {
		case c.held && !bytes.Equal(got[0].Index, made):
			t.Errorf("keep %d: held %d bytes, IndexReader makes %d (equal %v)", c.keep, len(got[0].Index), len(made), bytes.Equal(got[0].Index, made))
		case !c.held && got[0].Index != nil:
			t.Errorf("keep %d: held %d bytes past the bound", c.keep, len(got[0].Index))
		case !c.held:
			r, err := IndexReader(parent, got[0])
			if err != nil {
				t.Fatal(err)
			}
			again, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(again, made) {
				t.Errorf("keep %d: dropped slice made as sent: %d bytes, %v", c.keep, len(again), err)
			}
		}
	}
}

// A slice expected at more than twice the bound (the parent's partitions times the ranges'
// share of the ring, ~3 bytes a record) is not gathered at all.
func TestKeepableFromThePartitionCountAndTheRingShare(t *testing.T) {
	spec, err := SpecOf(smallPositionsParent(t))
	if err != nil {
		t.Fatal(err)
	}
	half, _ := token.ParseRanges(token.Murmur3, "(0,-9223372036854775808]") // half the ring: ~1500 partitions, ~4500 bytes
	for _, c := range []struct {
		keep int64
		want bool
	}{{1 << 20, true}, {2300, true}, {2200, false}, {100, false}} {
		if got := keepable(spec, half, c.keep); got != c.want {
			t.Errorf("keep %d bytes of a half-ring slice of 3000 partitions: keepable %v, want %v", c.keep, got, c.want)
		}
	}
	if share, ok := half.RingShare(); !ok || share != 0.5 {
		t.Errorf("RingShare of half the ring: %v %v", share, ok)
	}
	if share, _ := (token.RangeSet{{Left: token.Murmur3.MinToken(), Right: token.Murmur3.MinToken()}}).RingShare(); share != 1 {
		t.Errorf("RingShare of the whole ring: %v", share)
	}
}
