package compress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/sluicedb/sluice/sstable/version"
)

// DefaultChunkLength is CompressionParams.DEFAULT_CHUNK_LENGTH (4.0+).
const DefaultChunkLength = 16384

// inFlight is how many full batches may be queued or compressing while the caller fills the
// next one; it is at least the number of compression workers plus one.
const inFlight = 4

// batchBytes is the uncompressed size of a batch of chunks handed to the worker at once. A
// handoff costs a goroutine wake-up, so batching several small chunks keeps that cost (and
// the number of writes to the underlying io.Writer) well below the cost of compressing them.
const batchBytes = 256 << 10

// WriterOptions configures a Writer. The zero value of each field is its default.
type WriterOptions struct {
	// Version selects the CompressionInfo.db layout (whether maxCompressedLength exists).
	Version version.Version
	// Compressor is the compressor class, short or fully qualified; "" writes an
	// uncompressed Data.db with CRC.db checksums, as ChecksummedSequentialWriter does.
	Compressor string
	// Options are the compressor options, stored in CompressionInfo.db as given.
	Options []Option
	// ChunkLength is the uncompressed chunk size: a power of two, default DefaultChunkLength
	// when compressed; any positive size, default DefaultCRCChunkLength, when uncompressed.
	ChunkLength int
	// MinCompressRatio is min_compress_ratio: 0 (never store raw) or at least 1. Chunks that
	// do not compress to under ChunkLength/MinCompressRatio bytes are stored raw.
	MinCompressRatio float64
	// MaxCompressedLength, when not 0, sets the raw-chunk threshold directly (it overrides
	// MinCompressRatio): what a rewrite of an existing sstable must keep.
	MaxCompressedLength int32
}

// MaxCompressedLength is CompressionParams.calcMaxCompressedLength.
func MaxCompressedLength(chunkLength int, minCompressRatio float64) int32 {
	return int32(math.Ceil(math.Min(float64(chunkLength)/minCompressRatio, math.MaxInt32)))
}

// Result describes a finished Data.db.
type Result struct {
	Info       *Info    // CompressionInfo.db when compressed, else nil
	CRC        *CRCInfo // CRC.db when uncompressed, else nil
	DataLength int64    // uncompressed bytes
	FileLength int64    // Data.db bytes
	Digest     uint32   // Digest.crc32: CRC32 of the whole Data.db
}

// Writer turns uncompressed bytes into a Data.db written to an io.Writer, chunk by chunk, as
// CompressedSequentialWriter (or ChecksummedSequentialWriter when uncompressed) does. Batches
// of full chunks are compressed and written on a worker goroutine, in order, while the caller
// fills the next batch.
//
// A Writer is not safe for concurrent use. Close must be called, also after an error, to stop
// the worker. The Writer never closes w.
type Writer struct {
	w           io.Writer
	codec       Codec // nil when uncompressed
	opts        WriterOptions
	chunkLength int
	batch       int // bytes per batch: a whole number of chunks
	rawAt       int // maxCompressedLength
	position    int64
	closed      bool

	cur     *chunkJob
	jobs    chan *chunkJob // to the compression workers, any order
	order   chan *chunkJob // to the emitter, in submission order
	free    chan *chunkJob
	done    chan struct{} // closed when the emitter has written everything
	workers sync.WaitGroup

	mu  sync.Mutex
	err error // the worker's first failure

	// Owned by the worker until done is closed.
	offsets    []int64
	crcs       []uint32
	fileLength int64
	digest     uint32
}

// chunkJob is one batch: the uncompressed bytes of consecutive chunks, and their records.
type chunkJob struct {
	buf    []byte  // uncompressed
	out    []byte  // the batch's on-disk records (compressed files only)
	starts []int64 // where each record starts in out
	crcs   []uint32
	err    error
	final  bool          // the last batch, which Close hands over
	ready  chan struct{} // signalled when the batch is encoded
}

// NewWriter returns a Writer that writes Data.db to w.
func NewWriter(w io.Writer, opts WriterOptions) (*Writer, error) {
	wr := &Writer{w: w, opts: opts, chunkLength: opts.ChunkLength}
	if opts.Compressor == "" {
		if wr.chunkLength == 0 {
			wr.chunkLength = DefaultCRCChunkLength
		}
		if wr.chunkLength < 0 || wr.chunkLength > MaxChunkLength {
			return nil, fmt.Errorf("%w: writer ChunkLength %d", ErrInvalid, opts.ChunkLength)
		}
		if opts.MinCompressRatio != 0 {
			return nil, fmt.Errorf("%w: writer MinCompressRatio needs a Compressor", ErrInvalid)
		}
	} else {
		codec, err := CodecFor(opts.Compressor, opts.Options)
		if err != nil {
			return nil, err
		}
		wr.codec = codec
		if wr.chunkLength == 0 {
			wr.chunkLength = DefaultChunkLength
		}
		if wr.chunkLength < 0 || wr.chunkLength > MaxChunkLength || bits.OnesCount(uint(wr.chunkLength)) != 1 {
			return nil, fmt.Errorf("%w: writer ChunkLength %d is not a power of two", ErrInvalid, opts.ChunkLength)
		}
		r := opts.MinCompressRatio
		switch {
		case r != 0 && !(r >= 1): // also rejects NaN
			return nil, fmt.Errorf("%w: writer MinCompressRatio %v (want 0 or >= 1)", ErrInvalid, r)
		case r != 0 && !opts.Version.HasMaxCompressedLength():
			return nil, fmt.Errorf("%w: writer MinCompressRatio needs a version with maxCompressedLength, not %s",
				ErrInvalid, opts.Version)
		}
		wr.rawAt = int(MaxCompressedLength(wr.chunkLength, r))
		if m := opts.MaxCompressedLength; m != 0 {
			// A copy of an existing sstable keeps its exact threshold rather than a ratio
			// that floating point may not map back to it.
			if m < 0 || (m != math.MaxInt32 && int(m) > wr.chunkLength) {
				return nil, fmt.Errorf("%w: writer MaxCompressedLength %d", ErrInvalid, m)
			}
			wr.rawAt = int(m)
		}
	}
	chunks := max(1, batchBytes/wr.chunkLength)
	wr.batch = chunks * wr.chunkLength
	wr.jobs = make(chan *chunkJob, inFlight)
	wr.order = make(chan *chunkJob, inFlight)
	wr.free = make(chan *chunkJob, inFlight+1)
	wr.done = make(chan struct{})
	for range inFlight + 1 {
		j := &chunkJob{buf: make([]byte, 0, wr.batch), ready: make(chan struct{}, 1)}
		if wr.codec != nil {
			j.out = make([]byte, 0, chunks*(wr.codec.Bound(wr.chunkLength)+CRCLength))
		}
		wr.free <- j
	}
	wr.cur = <-wr.free
	// Compression is the expensive step: spread batches over the cores, each worker with its
	// own codec state, and let one emitter write them back in order.
	workers := min(max(runtime.GOMAXPROCS(0), 1), inFlight-1)
	for range workers {
		codec := wr.codec
		if codec != nil {
			var err error
			if codec, err = CodecFor(opts.Compressor, opts.Options); err != nil {
				return nil, err
			}
		}
		wr.workers.Add(1)
		go wr.work(codec)
	}
	go wr.emitter()
	return wr, nil
}

// Position is the number of uncompressed bytes written so far.
func (w *Writer) Position() int64 { return w.position }

// Write adds uncompressed bytes. An error means Data.db is unusable; call Close to clean up.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, errors.New("compress: write to closed Writer")
	}
	if err := w.failure(); err != nil {
		return 0, err
	}
	written := 0
	for len(p) > 0 {
		buf := w.cur.buf
		k := copy(buf[len(buf):w.batch], p)
		w.cur.buf = buf[:len(buf)+k]
		p = p[k:]
		written += k
		w.position += int64(k)
		if len(w.cur.buf) == w.batch {
			w.submit(w.cur)
			w.cur = <-w.free
			if err := w.failure(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

func (w *Writer) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// submit queues a full batch for a worker and, in order, for the emitter.
func (w *Writer) submit(j *chunkJob) {
	w.order <- j
	w.jobs <- j
}

// work runs on a worker goroutine: it encodes batches as they come.
func (w *Writer) work(codec Codec) {
	defer w.workers.Done()
	for j := range w.jobs {
		j.err = w.encode(j, codec)
		j.ready <- struct{}{}
	}
}

// emitter runs on its own goroutine: it writes encoded batches in submission order and owns
// the offsets, checksums, file length and digest.
func (w *Writer) emitter() {
	defer close(w.done)
	failed := false
	for j := range w.order {
		<-j.ready
		if !failed {
			err := j.err
			if err == nil {
				err = w.emit(j)
			}
			if err != nil {
				failed = true
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
			}
		}
		j.buf = j.buf[:0]
		w.free <- j
	}
}

// encode turns one batch into its records. Only the batch Close hands over can end with a
// short chunk, or be empty: then it is one empty chunk.
func (w *Writer) encode(j *chunkJob, codec Codec) error {
	j.starts, j.crcs = j.starts[:0], j.crcs[:0]
	if codec == nil {
		for off := 0; off < len(j.buf) || off == 0; off += w.chunkLength {
			j.crcs = append(j.crcs, crc32.ChecksumIEEE(j.buf[off:min(off+w.chunkLength, len(j.buf))]))
		}
		return nil
	}
	out := j.out[:0]
	// The final batch ending exactly at a chunk boundary gets the trailing empty chunk (see Close).
	end := len(j.buf)
	if j.final && end > 0 && end%w.chunkLength == 0 {
		end++
	}
	for off := 0; off < end || off == 0; off += w.chunkLength {
		chunk := j.buf[min(off, len(j.buf)):min(off+w.chunkLength, len(j.buf))]
		start := len(out)
		var err error
		if out, err = AppendRecord(out, codec, chunk, w.rawAt); err != nil {
			return fmt.Errorf("compress chunk at uncompressed offset %d of the batch: %w", off, err)
		}
		j.starts = append(j.starts, int64(start))
	}
	j.out = out
	return nil
}

// AppendRecord appends chunk's on-disk record: its compressed form, or (CASSANDRA-10520) the
// raw bytes when compression does not bring it under rawAt (maxCompressedLength; a short last
// chunk is then zero-padded to rawAt so that its length still says "raw", FORMAT §2.2),
// followed by the CRC32 of what precedes it.
func AppendRecord(dst []byte, codec Codec, chunk []byte, rawAt int) ([]byte, error) {
	start := len(dst)
	out, err := codec.Compress(dst, chunk)
	if err != nil {
		return dst, err
	}
	if len(out)-start >= rawAt {
		out = append(out[:start], chunk...)
		if pad := rawAt - len(chunk); pad > 0 {
			out = append(out, make([]byte, pad)...)
		}
	}
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:])), nil
}

// emit writes a batch's records (or raw bytes) and folds them into the metadata and digest.
func (w *Writer) emit(j *chunkJob) error {
	rec := j.out
	if w.codec == nil {
		rec = j.buf
		w.crcs = append(w.crcs, j.crcs...)
	}
	for _, s := range j.starts {
		w.offsets = append(w.offsets, w.fileLength+s)
	}
	if _, err := w.w.Write(rec); err != nil {
		return err
	}
	w.digest = crc32.Update(w.digest, crc32.IEEETable, rec)
	w.fileLength += int64(len(rec))
	return nil
}

// Close writes the last (possibly short) chunk and returns the metadata of the finished file.
// When compressed data ends exactly at a chunk boundary (or is empty) the last chunk is an empty one,
// as Cassandra's final flush writes after a mark() flushed the full buffer: Cassandra's
// extended verifier seeks to the data length after the last partition, and without a chunk
// there it fails with an EOFException on CompressionInfo.db (found by the interop suite on a
// rechunk child).
func (w *Writer) Close() (Result, error) {
	if w.closed {
		return Result{}, errors.New("compress: Writer closed twice")
	}
	w.closed = true
	if len(w.cur.buf) > 0 || w.position == 0 || w.codec != nil {
		w.cur.final = true
		w.submit(w.cur)
	}
	close(w.jobs)
	close(w.order)
	w.workers.Wait()
	<-w.done
	if w.err != nil {
		return Result{}, w.err
	}
	res := Result{DataLength: w.position, FileLength: w.fileLength, Digest: w.digest}
	if w.codec == nil {
		res.CRC = &CRCInfo{ChunkLength: w.chunkLength, CRCs: w.crcs}
	} else {
		res.Info = &Info{
			Compressor:          w.codec.Name(),
			Options:             slices.Clone(w.opts.Options),
			ChunkLength:         w.chunkLength,
			MaxCompressedLength: int32(w.rawAt),
			DataLength:          w.position,
			Offsets:             w.offsets,
		}
	}
	return res, nil
}
