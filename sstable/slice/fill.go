package slice

import (
	"fmt"

	"github.com/sluicedb/sluice/internal/lib/crcx"
)

// digest is the CRC32 of a byte stream made piece by piece: each piece's CRC32 folded in
// order (a child's Digest.crc32 written record by record).
type digest struct {
	crc     uint32
	started bool
}

// fold appends a piece of n bytes whose CRC32 is crc.
func (d *digest) fold(crc uint32, n int64) {
	if !d.started {
		d.crc, d.started = crc, true
		return
	}
	d.crc = crcx.Combine(d.crc, crc, n)
}

// The layout of a zero-copy child that every Cassandra reader reads as it is.
//
// Cassandra reads Data.db in two ways: from index positions (queries, range reads) and
// sequentially, partition after partition from a position to the next indexed key or the end
// (compaction's getScanner(), getScanner(range) for streaming, repair validation and cleanup,
// sstableverify -e, scrub, sstabledump). The second way requires that every byte from 0 to the
// child's uncompressed length belongs to a partition the index addresses, in token order,
// inside the child's ranges.
//
// A zero-copy child keeps most of its parent's compressed chunks as they are, which fixes
// where each run's bytes sit modulo the chunk length. So between runs (and before the first)
// there is a gap whose length the grid decides; planFill makes it a region of filler
// partitions (empty partitions with keys constructed for tokens next to the run they precede,
// filler.go), and re-encodes only the chunks at the runs' edges, which mix live bytes with
// filler bytes. A gap shorter than the smallest filler partition grows by one whole chunk. A
// run whose gap cannot be filled at all (a key type whose keys cannot be sized) is placed
// right after the previous run instead, and all its chunks re-encoded: the layout degrades
// run by run towards rechunk, never towards a file a reader misreads.

// region is a stretch of filler partitions: Len bytes at child position At, just before run Run.
type region struct {
	At, Len int64
	Run     int
}

// verbatim is a stretch of chunks the child takes as they are: child chunks [Chunk, Chunk+N)
// are parent chunks [Parent, Parent+N).
type verbatim struct {
	Chunk, Parent, N int
}

// fillLayout is a planned child: its uncompressed stream is, per run, an optional filler
// region then the run's bytes; its chunks are verbatim parent chunks or re-encoded.
type fillLayout struct {
	L          int64 // chunk length
	DataLength int64
	Chunks     int // the child's chunk count, a trailing empty chunk included
	Runs       []RunPlan
	Shift      []int64 // per run: child position = parent position - Shift[k]
	Regions    []region
	Verbatim   []verbatim
	// Encoded counts the runs placed off the chunk grid (every chunk of theirs re-encoded)
	// although they hold a whole parent chunk: their gap could not be filled.
	Encoded int
}

// planFill lays out runs (ascending, disjoint parent byte ranges [Lo, Hi) of a parent with
// chunk length L) so that the child's stream has no byte outside a partition. minFiller is the
// size of the smallest filler region that can be made (0 or less: none can).
//
// A run holding whole parent chunks [f, e) keeps them verbatim by starting at a child chunk
// boundary X at f: its head bytes [Lo, f) go just before X and the gap before them is a filler
// region. The last run's last chunk may be taken whole: its bytes past the child's end are
// beyond the data length, which every reader stops at.
// unfilled, when not nil, names runs whose gap must not be filled (no filler could be made for
// it): they are placed like runs without a whole chunk.
func planFill(L int64, runs []RunPlan, minFiller int64, unfilled map[int]bool) fillLayout {
	fl := fillLayout{L: L, Runs: runs, Shift: make([]int64, len(runs))}
	var cpos int64
	for k, r := range runs {
		p := placeRun(L, cpos, r, k == len(runs)-1, minFiller, unfilled[k])
		if p.region.Len > 0 {
			p.region.Run = k
			fl.Regions = append(fl.Regions, p.region)
		}
		if p.verbatim.N > 0 {
			fl.Verbatim = append(fl.Verbatim, p.verbatim)
		}
		if p.encoded {
			fl.Encoded++
		}
		fl.Shift[k] = p.shift
		cpos = p.end
	}
	fl.DataLength = cpos
	fl.Chunks = chunksFor(cpos, L)
	return fl
}

// chunksFor is the chunk count of data of length n: data ending on a chunk boundary ends with
// an empty chunk, as Cassandra writes it.
func chunksFor(n, L int64) int {
	c := int(ceilTo(n, L) / L)
	if n%L == 0 {
		c++
	}
	return c
}

// placement is where planFill puts one run: its shift (child position = parent position -
// shift), the filler region before it (Len 0: none), its verbatim chunks (N 0: none) and where
// the child's stream ends after it.
type placement struct {
	shift    int64
	region   region
	verbatim verbatim
	end      int64
	// encoded: the run holds a whole parent chunk but is placed off the grid (its gap could
	// not be filled), every chunk of it re-encoded.
	encoded bool
}

// placeRun places run r after the child's stream has reached cpos (planFill's step; a
// streaming fill places each run as its first key arrives). last: the child's last run, whose
// last chunk may be taken whole. unfilled: no filler can be made for its gap.
func placeRun(L, cpos int64, r RunPlan, last bool, minFiller int64, unfilled bool) placement {
	fillable := func(g int64) bool { return g == 0 || (minFiller > 0 && g >= minFiller) }
	f := ceilTo(r.Lo, L)
	e := r.Hi / L * L
	if last {
		e = ceilTo(r.Hi, L)
	}
	if f < e && !unfilled {
		h := f - r.Lo
		X := ceilTo(cpos+h, L)
		g := X - h - cpos
		if !fillable(g) && minFiller > 0 && minFiller <= L {
			X, g = X+L, g+L
		}
		if fillable(g) {
			p := placement{shift: f - X, end: X + r.Hi - f,
				verbatim: verbatim{Chunk: int(X / L), Parent: int(f / L), N: int((e - f) / L)}}
			if g > 0 {
				p.region = region{At: cpos, Len: g}
			}
			return p
		}
	}
	return placement{shift: r.Lo - cpos, end: cpos + r.Hi - r.Lo, encoded: f < e}
}

func ceilTo(x, L int64) int64 { return (x + L - 1) / L * L }

// layout is the position map of the child for the Builder: one segment per run.
func (fl *fillLayout) layout() Layout {
	l := Layout{Compressed: true, ChunkLength: fl.L, DataLength: fl.DataLength}
	for k, r := range fl.Runs {
		l.Segments = append(l.Segments, Segment{PLo: r.Lo, PHi: r.Hi, Shift: fl.Shift[k], Runs: 1})
	}
	return l
}

// fillerBytes counts the bytes of filler regions.
func (fl *fillLayout) fillerBytes() int64 {
	var n int64
	for _, r := range fl.Regions {
		n += r.Len
	}
	return n
}

// chunkSource says how child chunk c is made: verbatim from parent chunk p (ok), or encoded.
func (fl *fillLayout) chunkSource(c int, from int) (parent int, ok bool, next int) {
	for v := from; v < len(fl.Verbatim); v++ {
		s := fl.Verbatim[v]
		switch {
		case c < s.Chunk:
			return 0, false, v
		case c < s.Chunk+s.N:
			return s.Parent + c - s.Chunk, true, v
		}
	}
	return 0, false, len(fl.Verbatim)
}

// stretch is a piece of the child's stream: filler (Region >= 0) or the parent's bytes from PLo.
type stretch struct {
	At, Len int64
	Region  int // index into Regions, or -1
	PLo     int64
}

// stretches lists the child's stream in order.
func (fl *fillLayout) stretches() []stretch {
	out := make([]stretch, 0, len(fl.Runs)+len(fl.Regions))
	g := 0
	for k, r := range fl.Runs {
		if g < len(fl.Regions) && fl.Regions[g].Run == k {
			out = append(out, stretch{At: fl.Regions[g].At, Len: fl.Regions[g].Len, Region: g})
			g++
		}
		out = append(out, stretch{At: r.Lo - fl.Shift[k], Len: r.Hi - r.Lo, Region: -1, PLo: r.Lo})
	}
	return out
}

// check verifies the layout's invariants: stretches tile [0, DataLength), verbatim chunks lie
// on the grid inside one run at the same offset modulo L as in the parent.
func (fl *fillLayout) check() error {
	var at int64
	for _, s := range fl.stretches() {
		if s.At != at || s.Len <= 0 {
			return fmt.Errorf("slice: fill layout: stretch at %d of %d bytes, want it at %d", s.At, s.Len, at)
		}
		at += s.Len
	}
	if at != fl.DataLength {
		return fmt.Errorf("slice: fill layout: stretches end at %d, data at %d", at, fl.DataLength)
	}
	k := 0 // verbatim stretches come in run order: one pass over both
	for _, v := range fl.Verbatim {
		child := int64(v.Chunk) * fl.L
		parent := int64(v.Parent) * fl.L
		for k < len(fl.Runs) && fl.Runs[k].Hi <= parent {
			k++
		}
		ok := false
		if k < len(fl.Runs) {
			r := fl.Runs[k]
			ok = parent >= r.Lo && parent-fl.Shift[k] == child && (k == len(fl.Runs)-1 || parent+int64(v.N)*fl.L <= r.Hi)
		}
		if !ok {
			return fmt.Errorf("slice: fill layout: verbatim chunks %d+%d from parent %d leave their run", v.Chunk, v.N, v.Parent)
		}
	}
	return nil
}
