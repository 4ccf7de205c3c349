package slice

import (
	"fmt"
	"sort"

	"github.com/sluicedb/sluice/sstable/compress"
)

// Segment is one contiguous piece of a child's Data.db copied verbatim from its parent: whole
// parent chunks [FirstChunk, LastChunk] (compressed; runs less than a chunk apart share a
// segment, and the partitions between them become dead bytes that no index entry addresses),
// or exactly one run of an uncompressed parent (FirstChunk..LastChunk then name the CRC.db
// chunks it touches, for information).
type Segment struct {
	FirstChunk, LastChunk int   // parent chunks (the CRC.db chunks touched, uncompressed)
	SrcOff, SrcEnd        int64 // parent Data.db file bytes copied
	DstOff                int64 // where they land in the child's Data.db
	PLo, PHi              int64 // parent uncompressed span the segment holds
	Shift                 int64 // child uncompressed position = parent position - Shift
	Runs                  int   // planned runs the segment holds
}

// Length is the segment's byte count in Data.db.
func (s Segment) Length() int64 { return s.SrcEnd - s.SrcOff }

// Chunks is the segment's chunk count.
func (s Segment) Chunks() int { return s.LastChunk - s.FirstChunk + 1 }

// Layout is where a child's Data.db bytes come from and how its positions map: the parent's
// chunk runs for all the child's runs, concatenated in parent (token) order with consecutive
// chunk ordinals, behind an optional head pad.
type Layout struct {
	Segments    []Segment
	Compressed  bool
	ChunkLength int64 // compression chunk length, or the CRC.db chunk length
	Pad         int64 // head pad: parent bytes [Segments[0].SrcOff-Pad, SrcOff) copied first
	DataLength  int64 // the child's uncompressed length
	FileLength  int64 // the child's Data.db length
	// Dead counts the child's uncompressed bytes no partition of the child occupies: the head
	// of each segment's first chunk, the partitions between runs sharing a segment and the tail
	// of each segment's last chunk but the child's last (its data ends with its last
	// partition). It is what verify counts as dead bytes.
	Dead int64
}

// Chunks is the child's chunk count.
func (l *Layout) Chunks() int {
	n := 0
	for _, s := range l.Segments {
		n += s.Chunks()
	}
	return n
}

// Geometry is what the layout needs of a parent.
type Geometry struct {
	Info           *compress.Info // nil for an uncompressed parent
	FileLength     int64          // the parent's Data.db length
	DataLength     int64          // the parent's uncompressed length
	CRCChunkLength int64          // uncompressed parents: the CRC.db grid
}

// NewLayout maps a child's runs (in parent order, non-overlapping) onto the parent's Data.db.
//
// Compressed parents: whole chunks, runs whose chunks touch or share one merged into one
// segment, consecutive chunk ordinals in the child. align > 1 adds a head pad so that the
// first segment sits at the same offset modulo align as in the parent, which lets FICLONERANGE
// share its blocks.
//
// Uncompressed parents have no chunk structure to keep: every run is copied exactly, back to
// back, so the child has no dead bytes (but a head pad when align > 1) and its CRC.db is
// computed over the proven bytes.
func NewLayout(g Geometry, runs []RunPlan, align int64) Layout {
	if g.Info == nil {
		return uncompressedLayout(g, runs, align)
	}
	l := Layout{Compressed: true, ChunkLength: int64(g.Info.ChunkLength)}
	L := l.ChunkLength
	chunkBase := 0
	var live int64
	for _, r := range runs {
		live += r.Hi - r.Lo
		i, j := int(r.Lo/L), int((r.Hi-1)/L)
		if n := len(l.Segments); n > 0 && i <= l.Segments[n-1].LastChunk+1 {
			// Less than a chunk apart: extend the segment over the gap.
			s := &l.Segments[n-1]
			if j > s.LastChunk {
				chunkBase += j - s.LastChunk
				s.LastChunk = j
			}
			s.Runs++
			continue
		}
		l.Segments = append(l.Segments, Segment{FirstChunk: i, LastChunk: j, Runs: 1, Shift: int64(i-chunkBase) * L})
		chunkBase += j - i + 1
	}
	var dst int64
	for k := range l.Segments {
		s := &l.Segments[k]
		s.PLo = int64(s.FirstChunk) * L
		s.PHi = min(int64(s.LastChunk+1)*L, g.DataLength)
		s.SrcOff = g.Info.Offsets[s.FirstChunk]
		// The end of the last chunk comes from the next offset: the file length only when it
		// is the parent's last entry (a trailing empty chunk must not be taken in).
		if s.LastChunk+1 < len(g.Info.Offsets) {
			s.SrcEnd = g.Info.Offsets[s.LastChunk+1]
		} else {
			s.SrcEnd = g.FileLength
		}
		if k == 0 && align > 1 {
			l.Pad = s.SrcOff % align
			dst = l.Pad
		}
		s.DstOff = dst
		dst += s.Length()
	}
	last := &l.Segments[len(l.Segments)-1]
	l.FileLength = last.DstOff + last.Length()
	// The child's data ends with its last partition.
	l.DataLength = runs[len(runs)-1].Hi - last.Shift
	l.Dead = l.DataLength - live
	return l
}

// uncompressedLayout copies each run exactly; a head pad keeps the first block-congruent.
func uncompressedLayout(g Geometry, runs []RunPlan, align int64) Layout {
	l := Layout{ChunkLength: g.CRCChunkLength}
	if align > 1 {
		l.Pad = runs[0].Lo % align
	}
	dst := l.Pad
	for _, r := range runs {
		s := Segment{PLo: r.Lo, PHi: r.Hi, SrcOff: r.Lo, SrcEnd: r.Hi, DstOff: dst, Shift: r.Lo - dst, Runs: 1}
		if C := g.CRCChunkLength; C > 0 {
			s.FirstChunk, s.LastChunk = int(r.Lo/C), int((r.Hi-1)/C)
		}
		l.Segments = append(l.Segments, s)
		dst += r.Hi - r.Lo
	}
	// The pad is data too (Cassandra reads an uncompressed Data.db as it is): dead bytes.
	l.FileLength, l.DataLength, l.Dead = dst, dst, l.Pad
	return l
}

// Map returns the child position of parent position pos, which must lie in a segment.
func (l *Layout) Map(pos int64) (int64, error) {
	child, _, err := l.mapFrom(0, pos)
	return child, err
}

// mapFrom is Map for a caller whose positions ascend: it tries segment k (the one the
// previous position fell in) before searching, and returns the segment pos fell in.
func (l *Layout) mapFrom(k int, pos int64) (child int64, seg int, err error) {
	if k >= len(l.Segments) || pos < l.Segments[k].PLo || pos >= l.Segments[k].PHi {
		k = sort.Search(len(l.Segments), func(k int) bool { return l.Segments[k].PHi > pos })
		if k == len(l.Segments) || pos < l.Segments[k].PLo {
			return 0, 0, fmt.Errorf("slice: parent position %d lies in no run of the child", pos)
		}
	}
	return pos - l.Segments[k].Shift, k, nil
}

// Info is the child's CompressionInfo.db: the parent's compressor, options, chunk length and
// maxCompressedLength, the segments' chunk offsets rebased and concatenated, and the child's
// length.
func (l *Layout) Info(parent *compress.Info) *compress.Info {
	c := *parent
	c.DataLength = l.DataLength
	c.Offsets = make([]int64, 0, l.Chunks())
	for _, s := range l.Segments {
		base := parent.Offsets[s.FirstChunk]
		for k := s.FirstChunk; k <= s.LastChunk; k++ {
			c.Offsets = append(c.Offsets, s.DstOff+parent.Offsets[k]-base)
		}
	}
	return &c
}

// Bounds limits a multi-run child; past them a caller falls back to one child per run.
type Bounds struct {
	// MaxRuns is the most segments one child may have (0: DefaultMaxRuns).
	MaxRuns int
	// MaxDeadRatio is the most dead bytes a child may have, as a fraction of its uncompressed
	// length (0: DefaultMaxDeadRatio; negative: no limit).
	MaxDeadRatio float64
}

// DefaultMaxRuns is CASSANDRA-21550's bound on the runs of one slice.
const DefaultMaxRuns = 16384

// DefaultMaxDeadRatio: a child at most 90% dead. Each run costs at most two chunks of dead
// bytes, so this bites only when runs hold a small part of their chunks (a tiny partition per
// range). The bound is loose on purpose: one child per run carries the same dead chunk edges,
// so the fallback buys nothing but more sstables until the child is mostly dead. Cleanup
// rechunks past the bounds instead (Options.RechunkPastBounds).
const DefaultMaxDeadRatio = 0.9

// Exceeded says why l breaks the bounds, or "".
func (b Bounds) Exceeded(l *Layout) string {
	maxRuns := b.MaxRuns
	if maxRuns <= 0 {
		maxRuns = DefaultMaxRuns
	}
	ratio := b.MaxDeadRatio
	if ratio == 0 {
		ratio = DefaultMaxDeadRatio
	}
	if len(l.Segments) > maxRuns {
		return fmt.Sprintf("%d runs exceed the bound of %d runs per sstable", len(l.Segments), maxRuns)
	}
	if ratio > 0 && l.DataLength > 0 && float64(l.Dead) > ratio*float64(l.DataLength) {
		return fmt.Sprintf("%d dead bytes of %d exceed the dead-bytes ratio %.2f", l.Dead, l.DataLength, ratio)
	}
	return ""
}

// parentChunk maps the child's chunk c at child file offset off to the parent's chunk and
// file offset.
func (l *Layout) parentChunk(c int, off int64) (int, int64) {
	for _, s := range l.Segments {
		if c < s.Chunks() {
			return s.FirstChunk + c, off - s.DstOff + s.SrcOff
		}
		c -= s.Chunks()
	}
	return c, off
}
