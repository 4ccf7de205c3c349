package sstable

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/bloom"
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/generation"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// Defaults of WriterOptions, as Cassandra's.
const (
	DefaultChunkLength      = 16 << 10
	DefaultBloomFPChance    = 0.01
	DefaultBigIndexBlock    = 64 << 10 // BigFormatPartitionWriter.DEFAULT_GRANULARITY
	DefaultBTIIndexBlock    = 16 << 10 // BTI's default row index granularity
	defaultMinIndexInterval = bigindex.DefaultMinIndexInterval
)

// ErrWriter reports a misuse of Writer (partitions out of order, rows outside a partition).
var ErrWriter = errors.New("sstable writer")

// WriterOptions describes the sstable to write. The zero value of each optional field means
// Cassandra's default.
type WriterOptions struct {
	Version     version.Version   // required: one of version.Writable
	Partitioner token.Partitioner // required
	Header      *schema.Header    // required: the serialization header rows are encoded against

	Compressor        string            // compressor class ("LZ4Compressor"); "" writes uncompressed with CRC.db
	CompressorOptions []compress.Option // e.g. lz4_compressor_type
	ChunkLength       int               // default 16 KiB
	MinCompressRatio  float64           // 0 (default) never stores chunks raw
	// MaxCompressedLength, when not 0, is the raw-chunk threshold itself (overriding
	// MinCompressRatio), for rewrites that must keep an existing sstable's.
	MaxCompressedLength int32
	BloomFPChance       float64 // default 0.01; 1.0 writes no Filter.db
	MinIndexInterval    int     // Summary.db sampling interval, default 128
	IndexBlockSize      int     // row index granularity: default 64 KiB (BIG), 16 KiB (BTI)
	// ExpectedPartitions sizes the bloom filter up front, as Cassandra does from its estimate.
	// With 0 the writer keeps each key's 16-byte hash and sizes the filter exactly at Finish.
	ExpectedPartitions int64
}

func (o *WriterOptions) validate() error {
	if o.Partitioner == nil || o.Header == nil {
		return fmt.Errorf("%w: options: Partitioner and Header are required", ErrWriter)
	}
	if _, err := version.ParseWritable(o.Version.Name); err != nil || o.Version.Format == 0 {
		return fmt.Errorf("%w: options: Version %q: %v", ErrWriter, o.Version, err)
	}
	if o.ChunkLength == 0 {
		o.ChunkLength = DefaultChunkLength
	}
	if o.BloomFPChance == 0 {
		o.BloomFPChance = DefaultBloomFPChance
	}
	if o.BloomFPChance < 0 || o.BloomFPChance > 1 {
		return fmt.Errorf("%w: options: BloomFPChance %v outside (0, 1]", ErrWriter, o.BloomFPChance)
	}
	if o.MinIndexInterval == 0 {
		o.MinIndexInterval = defaultMinIndexInterval
	}
	if o.IndexBlockSize == 0 {
		o.IndexBlockSize = DefaultBigIndexBlock
		if o.Version.Format == version.BTI {
			o.IndexBlockSize = DefaultBTIIndexBlock
		}
	}
	if o.MinIndexInterval < 1 || o.IndexBlockSize < 1 || o.ExpectedPartitions < 0 {
		return fmt.Errorf("%w: options: MinIndexInterval, IndexBlockSize and ExpectedPartitions must be positive", ErrWriter)
	}
	return nil
}

// Writer writes one complete sstable: partitions are appended in partitioner order with
// BeginPartition, AppendRow/AppendMarker and EndPartition; Finish writes the remaining
// components and installs the set atomically (temporary names, fsync, rename with TOC.txt
// last, directory fsync). Either Finish or Abort must be called; after a failure only Abort.
// A Writer is not safe for concurrent use.
type Writer struct {
	opts  WriterOptions
	v     version.Version
	table *schema.Table
	desc  descriptor.Descriptor
	inst  *fsx.Install

	dataFile *os.File
	dataBuf  *fsx.AsyncWriter
	data     *compress.Writer
	buf      []byte // partition bytes not yet handed to data
	rw       *rows.Writer

	// BIG
	index      *bufio.Writer
	indexPos   int64
	summary    *bigindex.SummaryBuilder
	entry      []byte
	promoted   []byte
	infoOffset []int32
	// BTI
	partitions *btiIndex

	filter   *bloom.Filter
	hashes   [][2]uint64 // when the filter is sized at Finish
	collect  *stats.Collector
	cmp      clusteringBounds
	count    int64
	firstKey []byte
	lastKey  []byte
	lastTok  token.Token

	// the partition in progress
	inPartition  bool
	key          []byte
	tok          token.Token
	deletion     rows.DeletionTime
	start        int64 // Data.db position of the partition
	headerLength int64
	wroteStatic  bool
	written      int
	block        indexBlock
	openMarker   rows.DeletionTime
	failed       error
}

// indexBlock tracks the row index block being filled (SortedTablePartitionWriter).
type indexBlock struct {
	open            bool
	start           int64 // partition-relative position of the block's first unfiltered
	first, last     [][]byte
	firstKind       uint8
	lastKind        uint8
	firstBuf        []byte
	lastBuf         []byte
	startOpenMarker rows.DeletionTime
	count           int
}

// btiIndex holds the BTI index writers.
type btiIndex struct {
	partitionsBuf *bufio.Writer
	rowsBuf       *bufio.Writer
	pib           *bti.PartitionIndexBuilder
	riw           *bti.RowIndexWriter
	comparable    []byte
	first, last   []byte
}

// NewWriter starts an sstable in dir with the next free generation.
func NewWriter(dir string, opts WriterOptions) (*Writer, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	table, err := schema.Compile(opts.Header)
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrWriter, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := &Writer{
		opts: opts, v: opts.Version, table: table,
		rw:      rows.NewWriter(table, opts.Version),
		collect: stats.NewCollector(opts.Version),
		cmp:     newClusteringBounds(opts.Header.ClusteringTypes),
	}
	w.inst, w.desc, err = generation.Install(dir, opts.Version, func(inst *fsx.Install, d descriptor.Descriptor) error {
		var err error
		w.dataFile, err = inst.Create(d.Filename(descriptor.Data))
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := w.open(); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

func (w *Writer) create(c descriptor.Component) (*os.File, error) {
	return w.inst.Create(w.desc.Filename(c))
}

func (w *Writer) open() error {
	var err error
	w.dataBuf = fsx.NewAsyncWriter(w.dataFile, 1<<20, 4)
	w.data, err = compress.NewWriter(w.dataBuf, compress.WriterOptions{
		Version: w.v, Compressor: w.opts.Compressor, Options: w.opts.CompressorOptions,
		ChunkLength: w.opts.ChunkLength, MinCompressRatio: w.opts.MinCompressRatio,
		MaxCompressedLength: w.opts.MaxCompressedLength,
	})
	if err != nil {
		return err
	}
	if w.v.Format == version.BTI {
		pf, err := w.create(descriptor.Partitions)
		if err != nil {
			return err
		}
		rf, err := w.create(descriptor.Rows)
		if err != nil {
			return err
		}
		b := &btiIndex{partitionsBuf: bufio.NewWriterSize(pf, 256<<10), rowsBuf: bufio.NewWriterSize(rf, 256<<10)}
		b.pib = bti.NewPartitionIndexBuilder(b.partitionsBuf)
		b.riw = bti.NewRowIndexWriter(b.rowsBuf)
		w.partitions = b
	} else {
		f, err := w.create(descriptor.Index)
		if err != nil {
			return err
		}
		w.index = bufio.NewWriterSize(f, 256<<10)
		w.summary = bigindex.NewSummaryBuilder(w.opts.MinIndexInterval)
		w.summary.SpillTo(func() (*os.File, error) { return fsx.Scratch(w.inst.Dir()) })
	}
	if bloom.Needed(w.opts.BloomFPChance) && w.opts.ExpectedPartitions > 0 {
		if w.filter, err = bloom.New(w.opts.ExpectedPartitions, w.opts.BloomFPChance); err != nil {
			return err
		}
	}
	return nil
}

// Descriptor names the sstable being written (its files appear only at Finish).
func (w *Writer) Descriptor() descriptor.Descriptor { return w.desc }

// Table is the compiled serialization header rows must follow.
func (w *Writer) Table() *schema.Table { return w.table }

func (w *Writer) fail(err error) error {
	if w.failed == nil {
		w.failed = err
	}
	return err
}

// BeginPartition starts a partition. Keys must arrive in partitioner order, each once.
func (w *Writer) BeginPartition(key []byte, deletion rows.DeletionTime) error {
	if w.failed != nil {
		return w.failed
	}
	if w.inPartition {
		return w.fail(fmt.Errorf("%w: BeginPartition inside a partition", ErrWriter))
	}
	tok := w.opts.Partitioner.Token(key)
	if w.count > 0 && token.CompareKeys(w.lastTok, w.lastKey, tok, key) >= 0 {
		return w.fail(fmt.Errorf("%w: key %x is not after the previous key %x in partitioner order", ErrWriter, key, w.lastKey))
	}
	w.key = append(w.key[:0], key...)
	w.tok = w.opts.Partitioner.Token(w.key)
	w.deletion = deletion
	w.start = w.data.Position() + int64(len(w.buf))
	var err error
	if w.buf, err = w.rw.BeginPartition(w.buf, key, deletion); err != nil {
		return w.fail(err)
	}
	w.inPartition, w.wroteStatic, w.written = true, false, 0
	w.block = indexBlock{firstBuf: w.block.firstBuf, lastBuf: w.block.lastBuf, first: w.block.first[:0], last: w.block.last[:0]}
	w.openMarker = rows.Live
	w.headerLength = -1
	w.promoted, w.infoOffset = w.promoted[:0], w.infoOffset[:0]
	w.collect.AddKey(key)
	w.collect.PartitionDeletion(deletion.MarkedForDeleteAt, deletion.LocalDeletionTime)
	return nil
}

// AppendStatic writes the partition's static row (only for tables with static columns, and
// only before any row). Without it an empty static row is written, as Cassandra does.
func (w *Writer) AppendStatic(r *rows.Row) error {
	if err := w.check(); err != nil {
		return err
	}
	var err error
	if w.buf, err = w.rw.AppendStatic(w.buf, r); err != nil {
		return w.fail(err)
	}
	w.wroteStatic = true
	collectRow(w.collect, r)
	return nil
}

func (w *Writer) check() error {
	if w.failed != nil {
		return w.failed
	}
	if !w.inPartition {
		return w.fail(fmt.Errorf("%w: no partition begun", ErrWriter))
	}
	return nil
}

// beforeUnfiltered writes the (empty) static row if needed and returns the partition-relative
// position where the next unfiltered starts.
func (w *Writer) beforeUnfiltered() (int64, error) {
	if w.table.HasStatic() && !w.wroteStatic {
		empty := rows.Row{Static: true, Liveness: rows.EmptyLiveness, Deletion: rows.Live}
		var err error
		if w.buf, err = w.rw.AppendStatic(w.buf, &empty); err != nil {
			return 0, err
		}
		w.wroteStatic = true
	}
	pos := w.rw.PartitionSize()
	if w.headerLength < 0 {
		w.headerLength = pos
	}
	return pos, nil
}

// AppendRow writes a row. Rows must arrive in clustering order.
func (w *Writer) AppendRow(r *rows.Row) error {
	if err := w.check(); err != nil {
		return err
	}
	pos, err := w.beforeUnfiltered()
	if err != nil {
		return w.fail(err)
	}
	if w.buf, err = w.rw.AppendRow(w.buf, r); err != nil {
		return w.fail(err)
	}
	collectRow(w.collect, r)
	w.cmp.add(r.Clustering)
	return w.afterUnfiltered(pos, clusteringKind, r.Clustering)
}

// AppendMarker writes a range tombstone marker.
func (w *Writer) AppendMarker(m *rows.Marker) error {
	if err := w.check(); err != nil {
		return err
	}
	pos, err := w.beforeUnfiltered()
	if err != nil {
		return w.fail(err)
	}
	if w.buf, err = w.rw.AppendMarker(w.buf, m); err != nil {
		return w.fail(err)
	}
	collectMarker(w.collect, m)
	w.openMarker = openAfter(m)
	return w.afterUnfiltered(pos, uint8(m.Kind), m.Values)
}

const clusteringKind = 4 // ClusteringPrefix.Kind.CLUSTERING

// openAfter is the range tombstone open after marker m: a start bound or boundary opens a
// range, an end bound closes it.
func openAfter(m *rows.Marker) rows.DeletionTime {
	switch m.Kind {
	case rows.InclStartBound, rows.ExclStartBound:
		return m.Deletion
	case rows.ExclEndInclStartBoundary, rows.InclEndExclStartBoundary:
		return m.Start
	}
	return rows.Live
}

// collectMarker feeds a range tombstone marker's deletion times to c.
func collectMarker(c *stats.Collector, m *rows.Marker) {
	c.Deletion(m.Deletion.MarkedForDeleteAt, m.Deletion.LocalDeletionTime)
	if m.Kind.IsBoundary() {
		c.Deletion(m.Start.MarkedForDeleteAt, m.Start.LocalDeletionTime)
	}
}

// collectRow feeds a row (static or not) to c as MetadataCollector sees it: the writer to
// fill Statistics.db, verify to recompute it.
func collectRow(c *stats.Collector, r *rows.Row) {
	if !r.Liveness.IsEmpty() {
		c.Liveness(r.Liveness.Timestamp, r.Liveness.TTL, r.Liveness.LocalExpirationTime)
	}
	if !r.Deletion.IsLive() {
		c.Deletion(r.Deletion.MarkedForDeleteAt, r.Deletion.LocalDeletionTime)
	}
	for i := range r.Columns {
		cd := &r.Columns[i]
		if !cd.Deletion.IsLive() {
			c.Deletion(cd.Deletion.MarkedForDeleteAt, cd.Deletion.LocalDeletionTime)
		}
		for j := range cd.Cells {
			cell := &cd.Cells[j]
			c.Cell(cell.Timestamp, cell.TTL, cell.LocalDeletionTime)
		}
	}
	if !r.Static {
		c.Row(int64(len(r.Columns)))
	}
}

// afterUnfiltered does the row-index bookkeeping of SortedTablePartitionWriter.addUnfiltered:
// a block starts at the first unfiltered after the previous block closed and closes once it
// holds at least IndexBlockSize bytes.
func (w *Writer) afterUnfiltered(pos int64, kind uint8, clustering [][]byte) error {
	b := &w.block
	if !b.open {
		b.open, b.start, b.startOpenMarker = true, pos, w.openMarker
		b.firstKind = kind
		b.first, b.firstBuf = copyValues(b.first[:0], b.firstBuf[:0], clustering)
	}
	b.lastKind = kind
	b.last, b.lastBuf = copyValues(b.last[:0], b.lastBuf[:0], clustering)
	w.written++
	if w.rw.PartitionSize()-b.start >= int64(w.opts.IndexBlockSize) {
		if err := w.addIndexBlock(); err != nil {
			return w.fail(err)
		}
	}
	return w.flushBuf(false)
}

// copyValues copies clustering values into one reusable arena.
func copyValues(dst [][]byte, arena []byte, values [][]byte) ([][]byte, []byte) {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	if cap(arena) < n {
		arena = make([]byte, 0, 2*n)
	}
	for _, v := range values {
		if v == nil {
			dst = append(dst, nil)
			continue
		}
		start := len(arena)
		arena = append(arena, v...)
		dst = append(dst, arena[start:len(arena):len(arena)])
	}
	return dst, arena
}

func (w *Writer) addIndexBlock() error {
	b := &w.block
	end := w.rw.PartitionSize()
	if w.partitions != nil {
		p := w.partitions
		var err error
		first, err := bti.AppendClusteringComparable(nil, w.opts.Header.ClusteringTypes, b.first, bti.ClusteringKind(b.firstKind))
		if err != nil {
			return err
		}
		last, err := bti.AppendClusteringComparable(nil, w.opts.Header.ClusteringTypes, b.last, bti.ClusteringKind(b.lastKind))
		if err != nil {
			return err
		}
		if err := p.riw.AddBlock(first, last, b.start, indexDeletion(b.startOpenMarker)); err != nil {
			return err
		}
	} else {
		w.infoOffset = append(w.infoOffset, int32(len(w.promoted)))
		w.promoted = rows.AppendClusteringPrefix(w.promoted, w.table, b.firstKind, b.first)
		w.promoted = rows.AppendClusteringPrefix(w.promoted, w.table, b.lastKind, b.last)
		w.promoted = appendIndexInfoTail(w.promoted, w.v, b.start, end-b.start, w.openMarker)
	}
	b.count++
	b.open = false
	return nil
}

// indexDeletion is d with any live deletion as Live: inside rows a complex-deletion slot may
// read back live with a writer-dependent local deletion time, which the index codecs must not
// see.
func indexDeletion(d rows.DeletionTime) rows.DeletionTime {
	if d.IsLive() {
		return rows.Live
	}
	return d
}

// EndPartition closes the partition and indexes it.
func (w *Writer) EndPartition() error {
	if err := w.check(); err != nil {
		return err
	}
	if w.table.HasStatic() && !w.wroteStatic {
		if _, err := w.beforeUnfiltered(); err != nil {
			return w.fail(err)
		}
	}
	endPos := w.rw.PartitionSize() // where the end-of-partition flag starts
	var err error
	if w.buf, err = w.rw.EndPartition(w.buf); err != nil {
		return w.fail(err)
	}
	// As in BigFormatPartitionWriter.finish, the last block is closed after the end-of-partition
	// flag, so in BIG its width takes that byte in too.
	if w.written > 0 && w.block.open {
		if err := w.addIndexBlock(); err != nil {
			return w.fail(err)
		}
	}
	size := w.rw.PartitionSize()
	if err := w.indexPartition(endPos); err != nil {
		return w.fail(err)
	}
	w.collect.EndPartition(size)
	if w.filter != nil {
		w.filter.Add(w.key)
	} else if bloom.Needed(w.opts.BloomFPChance) {
		h0, h1 := bloom.Hash(w.key)
		w.hashes = append(w.hashes, [2]uint64{h0, h1})
	}
	if w.count == 0 {
		w.firstKey = append(w.firstKey[:0], w.key...)
	}
	w.lastKey = append(w.lastKey[:0], w.key...)
	w.lastTok = w.opts.Partitioner.Token(w.lastKey)
	w.count++
	w.inPartition = false
	return w.flushBuf(false)
}

func (w *Writer) indexPartition(endPos int64) error {
	if w.partitions != nil {
		p := w.partitions
		pos, err := p.riw.FinishPartition(w.key, w.start, endPos, indexDeletion(w.deletion))
		if err != nil {
			return err
		}
		p.comparable = bti.AppendDecoratedKey(p.comparable[:0], w.tok, w.key)
		_, h1 := bloom.Hash(w.key)
		return p.pib.Add(p.comparable, byte(h1), pos)
	}
	var promoted []byte
	if w.block.count > 1 {
		// RowIndexEntry.IndexedEntry: headerLength, partition deletion, blocks, offsets.
		body := encoding.AppendUVint(nil, uint64(w.headerLength))
		body = bigindex.AppendDeletionTime(body, indexDeletion(w.deletion), w.v)
		body = encoding.AppendUVint(body, uint64(w.block.count))
		body = append(body, w.promoted...)
		for _, off := range w.infoOffset {
			body = append(body, byte(off>>24), byte(off>>16), byte(off>>8), byte(off))
		}
		promoted = body
	}
	w.summary.Add(w.key, w.indexPos)
	w.entry = bigindex.AppendEntry(w.entry[:0], w.key, w.start, promoted)
	if _, err := w.index.Write(w.entry); err != nil {
		return err
	}
	w.indexPos += int64(len(w.entry))
	return nil
}

// flushBuf hands buffered partition bytes to the chunk writer once there are enough of them
// (or all of them at the end).
func (w *Writer) flushBuf(all bool) error {
	if len(w.buf) == 0 || (!all && len(w.buf) < 64<<10) {
		return nil
	}
	if _, err := w.data.Write(w.buf); err != nil {
		return w.fail(err)
	}
	w.buf = w.buf[:0]
	return nil
}

// Finish writes the remaining components and installs the sstable. It fails on an empty
// sstable, which Cassandra never writes.
func (w *Writer) Finish() (descriptor.Descriptor, error) {
	if err := w.finish(); err != nil {
		w.Abort()
		return descriptor.Descriptor{}, err
	}
	return w.desc, nil
}

func (w *Writer) finish() error {
	if w.failed != nil {
		return w.failed
	}
	if w.inPartition {
		return fmt.Errorf("%w: Finish inside a partition", ErrWriter)
	}
	if w.count == 0 {
		return fmt.Errorf("%w: no partitions", ErrWriter)
	}
	if err := w.flushBuf(true); err != nil {
		return err
	}
	res, err := w.data.Close()
	w.data = nil
	if err != nil {
		return err
	}
	err = w.dataBuf.Close()
	w.dataBuf = nil
	if err != nil {
		return err
	}
	written := []descriptor.Component{descriptor.Data}

	if w.partitions != nil {
		p := w.partitions
		if _, err := p.pib.Finish(w.firstKey, w.lastKey); err != nil {
			return err
		}
		if err := p.riw.Flush(); err != nil {
			return err
		}
		if err := p.partitionsBuf.Flush(); err != nil {
			return err
		}
		if err := p.rowsBuf.Flush(); err != nil {
			return err
		}
		written = append(written, descriptor.Partitions, descriptor.Rows)
	} else {
		if err := w.index.Flush(); err != nil {
			return err
		}
		f, err := w.create(descriptor.Summary)
		if err != nil {
			return err
		}
		if err := w.summary.Encode(f, w.firstKey, w.lastKey); err != nil {
			return err
		}
		written = append(written, descriptor.Index, descriptor.Summary)
	}

	if bloom.Needed(w.opts.BloomFPChance) {
		f := w.filter
		if f == nil {
			if f, err = bloom.New(int64(len(w.hashes)), w.opts.BloomFPChance); err != nil {
				return err
			}
			for _, h := range w.hashes {
				f.AddHash(h[0], h[1])
			}
		}
		if err := w.writeComponent(descriptor.Filter, f.Append(nil)); err != nil {
			return err
		}
		written = append(written, descriptor.Filter)
	}

	st := stats.NewStatistics(w.v, w.opts.Partitioner.Name(), w.opts.BloomFPChance, w.opts.Header)
	st.Stats = w.collect.Stats()
	st.Compaction.Cardinality = w.collect.Cardinality().Bytes()
	if res.Info != nil && res.DataLength > 0 {
		st.Stats.CompressionRatio = float64(res.FileLength) / float64(res.DataLength)
	}
	w.cmp.apply(st.Stats, w.v, w.opts.Header.ClusteringTypes)
	if err := w.writeComponent(descriptor.Statistics, st.Append(nil, w.v)); err != nil {
		return err
	}
	written = append(written, descriptor.Statistics)

	if res.Info != nil {
		if err := w.writeComponent(descriptor.CompressionInfo, res.Info.Append(nil, w.v)); err != nil {
			return err
		}
		written = append(written, descriptor.CompressionInfo)
	} else {
		if err := w.writeComponent(descriptor.CRC, res.CRC.Append(nil)); err != nil {
			return err
		}
		written = append(written, descriptor.CRC)
	}
	if err := w.writeComponent(descriptor.Digest, compress.AppendDigest(nil, res.Digest)); err != nil {
		return err
	}
	written = append(written, descriptor.Digest, descriptor.TOC)
	if err := w.writeComponent(descriptor.TOC, descriptor.AppendTOC(nil, written)); err != nil {
		return err
	}
	return w.inst.Commit()
}

func (w *Writer) writeComponent(c descriptor.Component, b []byte) error {
	f, err := w.create(c)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return err
}

// Abort discards everything written; no file of the sstable remains visible.
func (w *Writer) Abort() {
	if w.data != nil {
		_, _ = w.data.Close()
	}
	if w.dataBuf != nil {
		_ = w.dataBuf.Close()
	}
	_ = w.inst.Abort()
}

// clusteringBounds tracks the smallest and largest clustering written, for the min/max
// clustering metadata. It only orders byte-comparable types (text, ascii, blob); for others
// the metadata keeps its "covers everything" default, which is always correct, only less
// selective.
type clusteringBounds struct {
	ok       bool
	min, max [][]byte // lexicographic, for the covered slice
	// per-component minima and maxima, for the legacy lists (MetadataCollector in 3.x/4.x)
	compMin, compMax [][]byte
	seen             bool
}

func newClusteringBounds(types []string) clusteringBounds {
	ok := len(types) > 0
	for _, t := range types {
		switch strings.TrimPrefix(t, "org.apache.cassandra.db.marshal.") {
		case "UTF8Type", "AsciiType", "BytesType":
		default:
			ok = false
		}
	}
	return clusteringBounds{ok: ok}
}

func (c *clusteringBounds) add(values [][]byte) {
	if !c.ok {
		return
	}
	if !c.seen {
		c.min, c.max, c.seen = cloneValues(values), cloneValues(values), true
		c.compMin, c.compMax = cloneValues(values), cloneValues(values)
		return
	}
	if compareValues(values, c.min) < 0 {
		c.min = cloneValues(values)
	}
	if compareValues(values, c.max) > 0 {
		c.max = cloneValues(values)
	}
	for i, v := range values {
		if i < len(c.compMin) && bytes.Compare(v, c.compMin[i]) < 0 {
			c.compMin[i] = bytes.Clone(v)
		}
		if i < len(c.compMax) && bytes.Compare(v, c.compMax[i]) > 0 {
			c.compMax[i] = bytes.Clone(v)
		}
	}
}

func cloneValues(values [][]byte) [][]byte {
	out := make([][]byte, len(values))
	for i, v := range values {
		out[i] = bytes.Clone(v)
	}
	return out
}

func compareValues(a, b [][]byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := bytes.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// apply records the bounds in Stats: the covered clustering slice (nc+) and the legacy
// per-component min/max lists (m*, n*).
func (c *clusteringBounds) apply(s *stats.Stats, v version.Version, types []string) {
	if !c.ok || !c.seen {
		return
	}
	if v.HasImprovedMinMax() {
		s.ClusteringTypes = append([]string(nil), types...)
		s.CoveredClustering = stats.Slice{
			Start: stats.ClusteringBound{Kind: stats.BoundKind(rows.InclStartBound), Values: c.min},
			End:   stats.ClusteringBound{Kind: stats.BoundKind(rows.InclEndBound), Values: c.max},
		}
	}
	if v.HasLegacyMinMax() {
		s.LegacyMinClusteringValues = c.compMin
		s.LegacyMaxClusteringValues = c.compMax
	}
}

// appendIndexInfoTail finishes an IndexInfo after its first and last clustering prefixes:
// the block's offset within the partition, its width less IndexInfo.WIDTH_BASE (64 KiB), and
// the range tombstone open at the block's end, if any.
func appendIndexInfoTail(dst []byte, v version.Version, offset, width int64, open rows.DeletionTime) []byte {
	dst = encoding.AppendUVint(dst, uint64(offset))
	dst = encoding.AppendVint(dst, width-64<<10)
	dst = encoding.AppendBool(dst, !open.IsLive())
	if !open.IsLive() {
		dst = bigindex.AppendDeletionTime(dst, indexDeletion(open), v)
	}
	return dst
}
