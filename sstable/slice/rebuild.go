package slice

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/bloom"
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// Spec is what a child inherits from its parent: everything the rebuild needs besides the
// partitions. A local split takes it from the opened parent; a streaming receiver from the
// sender's manifest.
type Spec struct {
	Version     version.Version
	Partitioner token.Partitioner
	Statistics  *stats.Statistics // the parent's, copied and adjusted per child
	// Compression is the parent's CompressionInfo (nil for an uncompressed parent).
	Compression *compress.Info
	// CRCChunkLength is the CRC.db chunk length of an uncompressed parent.
	CRCChunkLength   int
	MinIndexInterval int
	// ParentRows is the parent's Rows.db (BTI); children take the slice their entries need.
	ParentRows []byte
}

// SpecOf reads the Spec of an opened sstable.
func SpecOf(t *sstable.Table) (*Spec, error) {
	s := &Spec{Version: t.Version(), Partitioner: t.Partitioner, Statistics: t.Statistics,
		Compression: t.Compression, MinIndexInterval: bigindex.DefaultMinIndexInterval}
	if t.CRC != nil {
		s.CRCChunkLength = t.CRC.ChunkLength
	} else if t.Compression == nil {
		s.CRCChunkLength = compress.DefaultCRCChunkLength
	}
	if t.Version().Format == version.BTI {
		b, err := os.ReadFile(t.Path(descriptor.Rows))
		if err != nil {
			return nil, err
		}
		s.ParentRows = b
	}
	return s, nil
}

func (s *Spec) parentPartitions() int64 {
	if s.Statistics.Stats == nil {
		return 0
	}
	return s.Statistics.Stats.EstimatedPartitionSize.Total()
}

// Builder rebuilds a child's components from the parent's index entries alone: Index.db with
// rebased positions and promoted indexes copied verbatim, Summary.db, Filter.db, Statistics.db
// (BIG); Partitions.db and the child's slice of Rows.db with patched data positions (BTI). It
// keeps O(1) state per partition besides the 16-byte key hash the filter needs, and allocates
// nothing per partition in steady state.
//
// Add partitions in order; then Finish with what the mover produced. The Builder writes
// through inst, which the caller commits or aborts.
type Builder struct {
	spec *Spec
	desc descriptor.Descriptor
	inst *fsx.Install
	lay  *Layout
	seg  int // the segment of lay the last partition fell in

	// BIG
	index    *bufio.Writer
	indexPos int64
	summary  *bigindex.SummaryBuilder
	// BTI
	partitions *bufio.Writer
	pib        *bti.PartitionIndexBuilder
	trie       *trieFeed // pib's partitions, a batch behind
	rows       rowsSlice // the child's Rows.db, assembled from the parent's
	patches    []patch

	hashes [][2]uint64   // the keys' filter hashes, when the filter is built at the end
	filter *bloom.Filter // the filter, when sized up front (Expect)
	// pending holds the last keys' hashes until filterBatch have come, to set their bits
	// together (bloom.AddHashes): each key's bits are a few random cache lines of a filter
	// the data streaming through the receiver keeps evicting.
	pending     [filterBatch][2]uint64
	npending    int
	expected    int64
	sizes       stats.EstimatedHistogram
	sizeBucket  int // the bucket of the last size: a child's partitions are often alike
	cardinality *stats.Cardinality
	count       int64
	fillers     int64 // filler partitions among count
	prevPos     int64 // child position of the previous partition
	first, last []byte
	lastTok     token.Token

	// runs, when set, lays out each segment of lay (one per run) as its first partition comes
	// (an in-place fill, InPlaceFill): the run's shift and the filler partitions before it.
	runs RunEntrant
	// lasts are the parent positions of each entered run's last partition so far.
	lasts []int64
	// over, when positive, is an empty partition's size less its key: the child positions of
	// partitions of exactly a filler's size are kept (maybeFillers), which the caller reads to
	// tell the fillers a sluice-filled parent passed on from real partitions.
	over         int64
	maybeFillers []int64
	prevFiller   bool
}

// RunEntrant lays out a child's runs as its rebuild reaches them: Enter is given run k's first
// partition (its key and parent position) and returns the run's shift (child position = parent
// position - shift) and the filler partitions before it.
type RunEntrant interface {
	Enter(k int, key []byte, pos int64) (int64, []FillerPartition, error)
}

// filterBatch is how many keys' filter bits a Builder sets at once.
const filterBatch = 32

type patch struct {
	entry bti.RowIndexEntry
	shift int64 // child Rows.db offset - parent's
	pos   int64
}

// NewBuilder starts a child whose Data.db positions map from the parent's through lay. For
// BTI, rowsCut is where the child's slice of the parent Rows.db begins (a multiple of the 4 KiB
// page, so tries keep their page layout).
//
// Partition sizes (Statistics.db) are index spans: from a partition's position to the next
// one's, the last to the end of the data. On a single-run child that is each partition's exact
// size, as Cassandra records it; on a multi-run child the partition before a dead region also
// counts that region, which is what verify measures from the index too.
func NewBuilder(spec *Spec, inst *fsx.Install, desc descriptor.Descriptor, lay *Layout, rowsCut int64) (*Builder, error) {
	b := &Builder{spec: spec, desc: desc, inst: inst, lay: lay, prevPos: -1,
		cardinality: stats.NewCardinality()}
	buckets := stats.PartitionSizeBuckets5 + 1
	if spec.Statistics.Stats != nil {
		buckets = len(spec.Statistics.Stats.EstimatedPartitionSize.Counts)
	}
	b.sizes = stats.NewEstimatedHistogram(buckets)
	if spec.Version.Format == version.BTI {
		f, err := inst.Create(desc.Filename(descriptor.Partitions))
		if err != nil {
			return nil, err
		}
		b.partitions = indexWriters.Get().(*bufio.Writer)
		b.partitions.Reset(f)
		b.pib = bti.NewPartitionIndexBuilder(b.partitions)
		b.trie = newTrieFeed(b.pib)
		b.rows = rowsSlice{parent: spec.ParentRows}
		b.rows.begin(rowsCut)
	} else {
		f, err := inst.Create(desc.Filename(descriptor.Index))
		if err != nil {
			return nil, err
		}
		b.index = indexWriters.Get().(*bufio.Writer)
		b.index.Reset(f)
		b.summary = bigindex.NewSummaryBuilder(spec.MinIndexInterval)
		// Samples beyond a few hundred KiB wait in an unnamed file beside the child: the
		// receiver of a child of any partition count then holds 4 bytes per sample.
		b.summary.SpillTo(func() (*os.File, error) { return fsx.Scratch(inst.Dir()) })
	}
	return b, nil
}

// Expect tells the builder the child's partition count before the first Add, so that the
// filter is sized (as Cassandra sizes it, from the count) and filled as partitions arrive,
// instead of keeping 16 bytes per partition until Finish. Finish then fails unless exactly
// n partitions were added.
func (b *Builder) Expect(n int64) error {
	if b.summary != nil {
		b.summary.Expect(n)
	}
	fp := b.spec.Statistics.Validation.BloomFilterFPChance
	if b.count != 0 || n <= 0 || !bloom.Needed(fp) {
		return nil
	}
	f, err := bloom.NewOffHeap(n, fp)
	if err != nil {
		return err
	}
	b.filter, b.expected = f, n
	return nil
}

// Add appends one partition of the parent (positions as in the parent).
func (b *Builder) Add(p *sstable.Partition) error {
	if b.runs != nil {
		return b.addInRun(p)
	}
	pos, seg, err := b.lay.mapFrom(b.seg, p.Position)
	b.seg = seg
	if err != nil {
		return fmt.Errorf("partition %d: %w", p.Ordinal, err)
	}
	return b.addAt(p, pos)
}

// addInRun appends p to the run it starts or continues: every partition lies in a run, each
// run's first exactly at its start (RunEntrant checks), so no byte of the child is left to no
// partition.
func (b *Builder) addInRun(p *sstable.Partition) error {
	segs := b.lay.Segments
	k := len(b.lasts) - 1
	if k < 0 || p.Position >= segs[k].PHi {
		k++
		if k >= len(segs) || p.Position >= segs[k].PHi {
			return fmt.Errorf("slice: partition %d at parent position %d: run %d has no partition", p.Ordinal, p.Position, k)
		}
		shift, fillers, err := b.runs.Enter(k, p.Key, p.Position)
		if err != nil {
			return err
		}
		segs[k].Shift = shift
		for _, f := range fillers {
			if err := b.AddFiller(f.Key, f.Token, f.Position); err != nil {
				return err
			}
		}
		b.lasts = append(b.lasts, p.Position)
		b.seg = k
	}
	if p.Position < segs[k].PLo {
		return fmt.Errorf("slice: partition %d at parent position %d lies before run %d", p.Ordinal, p.Position, k)
	}
	b.lasts[k] = p.Position
	return b.addAt(p, p.Position-segs[k].Shift)
}

// RunLasts is, with runs laid out as they come, each run's last partition's parent position.
func (b *Builder) RunLasts() []int64 { return b.lasts }

// MaybeFillers are the child positions of the partitions (not added as fillers) whose size is
// exactly a filler's, with runs laid out as they come.
func (b *Builder) MaybeFillers() []int64 { return b.maybeFillers }

// AddFiller appends a filler partition (filler.go) at child position pos: an empty partition
// the index addresses like any other.
func (b *Builder) AddFiller(key []byte, tok token.Token, pos int64) error {
	p := sstable.Partition{Ordinal: -1, Key: key, Token: tok, IndexPos: -1}
	if err := b.addAt(&p, pos); err != nil {
		return fmt.Errorf("filler partition at %d: %w", pos, err)
	}
	b.fillers++
	return nil
}

// Fillers is the number of filler partitions added.
func (b *Builder) Fillers() int64 { return b.fillers }

// addAt appends p at child position pos.
func (b *Builder) addAt(p *sstable.Partition, pos int64) error {
	if pos <= b.prevPos || pos >= b.lay.DataLength {
		return fmt.Errorf("slice: partition %d at child position %d is out of order or past the data's end %d", p.Ordinal, pos, b.lay.DataLength)
	}
	if b.prevPos >= 0 {
		b.sizeBucket = b.sizes.AddNear(pos-b.prevPos, b.sizeBucket)
		if b.over > 0 && !b.prevFiller && pos-b.prevPos == b.over+int64(len(b.last)) {
			b.maybeFillers = append(b.maybeFillers, b.prevPos)
		}
	}
	b.prevFiller = p.Ordinal == -1 && p.IndexPos == -1 && b.runs != nil
	b.prevPos = pos
	if b.count == 0 {
		b.first = append(b.first[:0], p.Key...)
	}
	b.last = append(b.last[:0], p.Key...)
	b.count++
	h0, h1 := p.Hash[0], p.Hash[1]
	if !p.HasHash {
		h0, h1 = bloom.Hash(p.Key)
	}
	if b.filter != nil {
		b.pending[b.npending] = [2]uint64{h0, h1}
		if b.npending++; b.npending == filterBatch {
			b.filter.AddHashes(b.pending[:])
			b.npending = 0
		}
	} else {
		b.hashes = append(b.hashes, [2]uint64{h0, h1})
	}
	b.cardinality.Add(p.Key)

	if b.pib != nil {
		indexPos := ^pos
		if p.IndexPos >= 0 {
			e, childPos, shift, err := b.rows.entry(p.IndexPos)
			if err != nil {
				return err
			}
			b.patches = append(b.patches, patch{entry: e, shift: shift, pos: pos})
			indexPos = childPos
		}
		return b.trie.add(p.Token, p.Key, byte(h1), indexPos)
	}
	b.summary.Add(p.Key, b.indexPos)
	// The entry is encoded straight into the writer's free space (the Write is then a copy
	// onto itself); the buffer is flushed first when the entry would not fit what is left.
	n := bigindex.EntrySize(len(p.Key), pos, len(p.Promoted))
	if b.index.Available() < n {
		if err := b.index.Flush(); err != nil {
			return err
		}
	}
	if _, err := b.index.Write(bigindex.AppendEntry(b.index.AvailableBuffer(), p.Key, pos, p.Promoted)); err != nil {
		return err
	}
	b.indexPos += int64(n)
	return nil
}

// BeginRun tells a BTI builder that the next partition starts a new run of the parent, whose
// first Rows.db entry follows parent offset lastEnd: its row index entries are taken from a
// new page-aligned piece of the parent's Rows.db rather than everything in between.
func (b *Builder) BeginRun(lastEnd int64) {
	if b.pib != nil {
		b.rows.begin(lastEnd)
	}
}

// Count is the number of partitions added.
func (b *Builder) Count() int64 { return b.count }

// DataResult describes the child's Data.db as the mover left it.
type DataResult struct {
	Compression *compress.Info    // CompressionInfo.db of the child (compressed)
	CRC         *compress.CRCInfo // CRC.db of the child (uncompressed)
	DataLength  int64
	FileLength  int64
	Digest      uint32
	HasDigest   bool // false: write no Digest.crc32 (--no-digest)
}

// Finish writes every remaining component and returns the TOC it wrote. Data.db must already
// be complete in inst.
func (b *Builder) Finish(d DataResult) ([]descriptor.Component, error) {
	if b.count == 0 {
		return nil, fmt.Errorf("slice: child %s has no partitions", b.desc)
	}
	v := b.spec.Version
	if b.runs != nil {
		// Laid out run by run: the data's length is known only now.
		b.lay.DataLength = d.DataLength
		if b.over > 0 && !b.prevFiller && d.DataLength-b.prevPos == b.over+int64(len(b.last)) {
			b.maybeFillers = append(b.maybeFillers, b.prevPos)
		}
	}
	b.sizes.Add(b.lay.DataLength - b.prevPos)
	written := []descriptor.Component{descriptor.Data}
	if b.pib != nil {
		if err := b.trie.flush(); err != nil {
			return nil, err
		}
		if _, err := b.pib.Finish(b.first, b.last); err != nil {
			return nil, err
		}
		if err := b.partitions.Flush(); err != nil {
			return nil, err
		}
		recycle(&indexWriters, &b.partitions)
		rows := b.rows.bytes()
		for _, p := range b.patches {
			e := p.entry
			e.Pos += p.shift
			e.DataPositionOffset += p.shift
			if err := bti.PatchDataPosition(rows, e, p.pos); err != nil {
				return nil, err
			}
		}
		if err := b.write(descriptor.Rows, rows); err != nil {
			return nil, err
		}
		written = append(written, descriptor.Partitions, descriptor.Rows)
	} else {
		if err := b.index.Flush(); err != nil {
			return nil, err
		}
		recycle(&indexWriters, &b.index)
		// Encoded from the builder's samples: no entries or encoding held beside the filter.
		if err := b.writeWith(descriptor.Summary, func(w io.Writer) error { return b.summary.Encode(w, b.first, b.last) }); err != nil {
			return nil, err
		}
		written = append(written, descriptor.Index, descriptor.Summary)
	}

	fp := b.spec.Statistics.Validation.BloomFilterFPChance
	if bloom.Needed(fp) {
		f := b.filter
		// (Filler partitions a child's runs are laid out with as they come are not known up
		// front: the filter, sized for the rest, takes them too.)
		if f != nil && b.count != b.expected && !(b.runs != nil && b.count-b.fillers == b.expected) {
			return nil, fmt.Errorf("slice: %d partitions added to a child expected to hold %d", b.count, b.expected)
		}
		if f != nil {
			f.AddHashes(b.pending[:b.npending])
			b.npending = 0
		}
		if f == nil {
			var err error
			if f, err = bloom.New(b.count, fp); err != nil {
				return nil, err
			}
			f.AddHashes(b.hashes)
		}
		// Written through a small buffer: the filter is most of a big child's rebuild
		// memory, and a serialised copy of it would double that.
		if err := b.writeWith(descriptor.Filter, func(w io.Writer) error { return f.Encode(w, v.HasOldBfFormat()) }); err != nil {
			return nil, err
		}
		f.Free()
		b.filter, f = nil, nil
		written = append(written, descriptor.Filter)
	}

	st, err := childStatistics(b.spec.Statistics, v, childFacts{
		partitions: b.count, sizes: b.sizes, first: b.first, last: b.last,
		cardinality: b.cardinality.Bytes(), dataLength: d.DataLength, dataFileLength: d.FileLength,
		compressed: d.Compression != nil, parentPartitions: b.spec.parentPartitions(),
	})
	if err != nil {
		return nil, err
	}
	if err := b.write(descriptor.Statistics, st.Append(nil, v)); err != nil {
		return nil, err
	}
	written = append(written, descriptor.Statistics)
	if d.Compression != nil {
		if err := b.writeWith(descriptor.CompressionInfo, func(w io.Writer) error { return d.Compression.Encode(w, v) }); err != nil {
			return nil, err
		}
		written = append(written, descriptor.CompressionInfo)
	} else if d.CRC != nil {
		if err := b.write(descriptor.CRC, d.CRC.Append(nil)); err != nil {
			return nil, err
		}
		written = append(written, descriptor.CRC)
	}
	if d.HasDigest {
		if err := b.write(descriptor.Digest, compress.AppendDigest(nil, d.Digest)); err != nil {
			return nil, err
		}
		written = append(written, descriptor.Digest)
	}
	written = append(written, descriptor.TOC)
	if err := b.write(descriptor.TOC, descriptor.AppendTOC(nil, written)); err != nil {
		return nil, err
	}
	return written, nil
}

// writeWith creates component c and hands fn a buffered writer on it.
func (b *Builder) writeWith(c descriptor.Component, fn func(io.Writer) error) error {
	f, err := b.inst.Create(b.desc.Filename(c))
	if err != nil {
		return err
	}
	w := componentWriters.Get().(*bufio.Writer)
	w.Reset(f)
	if err := fn(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	recycle(&componentWriters, &w)
	return nil
}

// indexWriters and componentWriters recycle the builders' write buffers (Index.db or
// Partitions.db; the other components): a split builds its children one after another, and a
// receiver many, and a fresh 256 KiB buffer per child costs page faults and garbage where a
// recycled one costs nothing. Only flushed writers go back.
var (
	indexWriters     = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 256<<10) }}
	componentWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}
)

// recycle detaches the flushed writer *w from its file and returns it to pool.
func recycle(pool *sync.Pool, w **bufio.Writer) {
	(*w).Reset(nil)
	pool.Put(*w)
	*w = nil
}

func (b *Builder) write(c descriptor.Component, data []byte) error {
	f, err := b.inst.Create(b.desc.Filename(c))
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return err
}
