package compress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/sluicedb/sluice/sstable/version"
)

// DefaultChunkLength is CompressionParams.DEFAULT_CHUNK_LENGTH (4.0+).
const DefaultChunkLength = 16384

// inFlight is how many full chunks may wait for or sit in the compression worker while the
// caller fills the next one.
const inFlight = 2

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
// CompressedSequentialWriter (or ChecksummedSequentialWriter when uncompressed) does. Full
// chunks are compressed and written on a worker goroutine, in order, while the caller fills
// the next one.
//
// A Writer is not safe for concurrent use. Close must be called, also after an error, to stop
// the worker. The Writer never closes w.
type Writer struct {
	w           io.Writer
	codec       Codec // nil when uncompressed
	opts        WriterOptions
	chunkLength int
	rawAt       int // maxCompressedLength
	position    int64
	closed      bool

	cur  *chunkJob
	jobs chan *chunkJob
	free chan *chunkJob
	done chan struct{}

	mu  sync.Mutex
	err error // the worker's first failure

	// Owned by the worker until done is closed.
	offsets    []int64
	crcs       []uint32
	fileLength int64
	digest     uint32
}

type chunkJob struct {
	buf []byte // uncompressed; capacity chunkLength + CRCLength, so a raw chunk gets its CRC in place
	out []byte // compressed chunk and CRC
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
	}
	wr.jobs = make(chan *chunkJob, inFlight)
	wr.free = make(chan *chunkJob, inFlight+1)
	wr.done = make(chan struct{})
	for range inFlight + 1 {
		j := &chunkJob{buf: make([]byte, 0, wr.chunkLength+CRCLength)}
		if wr.codec != nil {
			j.out = make([]byte, 0, wr.codec.Bound(wr.chunkLength)+CRCLength)
		}
		wr.free <- j
	}
	wr.cur = <-wr.free
	go wr.work()
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
		k := copy(buf[len(buf):w.chunkLength], p)
		w.cur.buf = buf[:len(buf)+k]
		p = p[k:]
		written += k
		w.position += int64(k)
		if len(w.cur.buf) == w.chunkLength {
			w.jobs <- w.cur
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

// work runs on its own goroutine: it encodes and writes each chunk, in order.
func (w *Writer) work() {
	defer close(w.done)
	failed := false
	for j := range w.jobs {
		if !failed {
			if err := w.writeChunk(j); err != nil {
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

func (w *Writer) writeChunk(j *chunkJob) error {
	var rec []byte
	switch {
	case w.codec == nil:
		w.crcs = append(w.crcs, crc32.ChecksumIEEE(j.buf))
		rec = j.buf
	default:
		out, err := w.codec.Compress(j.out[:0], j.buf)
		if err != nil {
			return fmt.Errorf("compress chunk %d: %w", len(w.offsets), err)
		}
		j.out = out
		rec = out
		if len(out) >= w.rawAt {
			// CASSANDRA-10520: store the raw buffer; a short last chunk is zero-padded to
			// rawAt so that its length still says "raw" (FORMAT §2.2).
			rec = j.buf
			if pad := w.rawAt - len(rec); pad > 0 {
				rec = append(rec, make([]byte, pad)...)
			}
		}
		rec = binary.BigEndian.AppendUint32(rec, crc32.ChecksumIEEE(rec))
		w.offsets = append(w.offsets, w.fileLength)
	}
	if _, err := w.w.Write(rec); err != nil {
		return err
	}
	w.digest = crc32.Update(w.digest, crc32.IEEETable, rec)
	w.fileLength += int64(len(rec))
	return nil
}

// Close writes the last (possibly short) chunk and returns the metadata of the finished file.
// A Writer that received no bytes still writes one empty chunk, as Cassandra's final flush does.
func (w *Writer) Close() (Result, error) {
	if w.closed {
		return Result{}, errors.New("compress: Writer closed twice")
	}
	w.closed = true
	if len(w.cur.buf) > 0 || w.position == 0 {
		w.jobs <- w.cur
	}
	close(w.jobs)
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
