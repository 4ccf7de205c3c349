package bigindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// SummaryBuilder builds a Summary.db at the full sampling level from a pass over Index.db, as
// Cassandra's IndexSummaryBuilder does when it writes or rebuilds one: the partitions at
// ordinals 0, minIndexInterval, 2*minIndexInterval, ... are sampled.
//
// Each sample is kept already encoded as its Summary.db entry (key, then the Index.db
// position), back to back, plus its length: Encode then needs no per-sample work and no second
// copy. With SpillTo, the encoded entries leave memory for a file whenever they pass
// spillBytes, and their lengths (4 bytes per sample, one sample per 128 partitions by
// default: what Summary.db's offsets are made from) for a second one whenever they pass
// spillSizes, so that what a builder holds does not grow with the partition count.
//
// A SummaryBuilder is not safe for concurrent use.
type SummaryBuilder struct {
	interval int64
	entries  []byte   // encoded samples not spilled yet
	sizes    []uint32 // each sample's encoded length: len(key) + 8
	written  int64    // partitions seen
	next     int64    // ordinal of the next sample; -1 once sampling has stopped
	expect   int64    // samples Expect announced, to size the arena from the first key

	open         func() (*os.File, error) // where spilled entries and sizes go; nil keeps them in memory
	spill        *os.File
	spilled      int64 // bytes of entries in spill
	sizeSpill    *os.File
	sizesSpilled int   // sizes in sizeSpill, 4 bytes each, little-endian
	err          error // the first spill failure, reported by Encode
}

// maxExpectedSamples bounds what Expect reserves, whatever count it is told (a count may come
// from a peer's manifest): past it the arrays grow as they fill.
const (
	maxExpectedSamples  = 1 << 20
	maxExpectedKeyBytes = 64 << 20
)

// spillBytes is how many encoded entries a spilling builder keeps in memory, spillSizes how
// many of their lengths.
var (
	spillBytes = 256 << 10 // variables for the tests
	spillSizes = 16 << 10
)

// Expect sizes the builder for about n partitions, so that sampling a large index neither
// grows (copying) its arrays nor leaves the grown-out copies as garbage; the entry arena is
// sized from the first key. A wrong n costs only growth or spare capacity.
func (sb *SummaryBuilder) Expect(n int64) {
	if n <= 0 || sb.written > 0 {
		return
	}
	sb.expect = min(n/sb.interval+1, maxExpectedSamples)
	if sb.open != nil {
		sb.sizes = make([]uint32, 0, min(sb.expect, int64(spillSizes)))
		return
	}
	sb.sizes = make([]uint32, 0, sb.expect)
}

// SpillTo makes the builder move its encoded samples into the file open returns (opened on
// the first spill, read back by Encode, closed by Encode or Close), keeping at most
// spillBytes of them in memory, and their lengths into a second one, keeping at most
// spillSizes. open should return a file nobody else sees, such as fsx.Scratch's. Call it
// before Expect and the first Add.
func (sb *SummaryBuilder) SpillTo(open func() (*os.File, error)) { sb.open = open }

// NewSummaryBuilder returns a builder for the table parameter min_index_interval (<= 0 means
// DefaultMinIndexInterval).
func NewSummaryBuilder(minIndexInterval int) *SummaryBuilder {
	if minIndexInterval <= 0 {
		minIndexInterval = DefaultMinIndexInterval
	}
	return &SummaryBuilder{interval: int64(minIndexInterval)}
}

// Add records the next partition in Index.db order: its key and the Index.db offset of its
// entry. key is copied only when sampled, so it may be reused by the caller afterwards.
func (sb *SummaryBuilder) Add(key []byte, indexPosition int64) {
	if sb.written == sb.next {
		// Cassandra stops sampling once the entries would pass 2 GiB (and logs an error), so
		// that summary covers only a prefix of the sstable; reproduce that rather than fail.
		entry := int64(len(key)) + 8
		if sb.entriesLen()+entry <= math.MaxInt32 {
			if sb.entries == nil {
				sb.entries = make([]byte, 0, sb.arenaSize(entry))
			}
			sb.entries = append(sb.entries, key...)
			sb.entries = binary.LittleEndian.AppendUint64(sb.entries, uint64(indexPosition))
			sb.sizes = append(sb.sizes, uint32(entry))
			sb.next += sb.interval
			if sb.open != nil && len(sb.entries) >= spillBytes {
				sb.spillEntries()
			}
			if sb.open != nil && len(sb.sizes) >= spillSizes {
				sb.spillSizes()
			}
		} else {
			sb.next = -1
		}
	}
	sb.written++
}

// arenaSize is the first capacity of the entry arena: what Expect announced (at the first
// entry's size), bounded, or spillBytes and a little when spilling.
func (sb *SummaryBuilder) arenaSize(entry int64) int64 {
	if sb.open != nil {
		return int64(spillBytes) + entry
	}
	return min(sb.expect*entry, maxExpectedKeyBytes)
}

// spillEntries appends the arena to the spill file and empties it. A failure is kept for
// Encode, which returns it, and ends the sampling.
func (sb *SummaryBuilder) spillEntries() {
	if sb.err != nil {
		return
	}
	if sb.spill == nil {
		if sb.spill, sb.err = sb.open(); sb.err != nil {
			sb.err = fmt.Errorf("bigindex: summary spill: %w", sb.err)
			sb.next = -1 // Encode fails: sample no more
			return
		}
	}
	if _, err := sb.spill.Write(sb.entries); err != nil {
		sb.err = fmt.Errorf("bigindex: summary spill %s: %w", sb.spill.Name(), err)
		sb.next = -1
		return
	}
	sb.spilled += int64(len(sb.entries))
	sb.entries = sb.entries[:0]
}

// spillSizes appends the sizes held to the second spill file and empties them; a failure is
// kept as spillEntries keeps one.
func (sb *SummaryBuilder) spillSizes() {
	if sb.err != nil {
		return
	}
	if sb.sizeSpill == nil {
		if sb.sizeSpill, sb.err = sb.open(); sb.err != nil {
			sb.err = fmt.Errorf("bigindex: summary spill: %w", sb.err)
			sb.next = -1
			return
		}
	}
	buf := make([]byte, 0, 4*len(sb.sizes))
	for _, size := range sb.sizes {
		buf = binary.LittleEndian.AppendUint32(buf, size)
	}
	if _, err := sb.sizeSpill.Write(buf); err != nil {
		sb.err = fmt.Errorf("bigindex: summary spill %s: %w", sb.sizeSpill.Name(), err)
		sb.next = -1
		return
	}
	sb.sizesSpilled += len(sb.sizes)
	sb.sizes = sb.sizes[:0]
}

func (sb *SummaryBuilder) entriesLen() int64 { return sb.spilled + int64(len(sb.entries)) }

// Count is the number of partitions added so far.
func (sb *SummaryBuilder) Count() int64 { return sb.written }

// Encode writes the Summary.db of everything added (see ParseSummary), with first and last as
// the sstable's first and last partition keys, through a small buffer and the spilled entries
// read back in pieces: on a child of millions of partitions nothing is built beside the
// samples. It closes the spill file; the builder is done.
func (sb *SummaryBuilder) Encode(w io.Writer, first, last []byte) (err error) {
	defer func() { err = errors.Join(err, sb.Close()) }()
	if sb.err != nil {
		return sb.err
	}
	n := sb.sizesSpilled + len(sb.sizes)
	buf := make([]byte, 0, 64<<10)
	flush := func(force bool) error {
		if len(buf) < 60<<10 && !force {
			return nil
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	buf = appendSummaryHeader(buf, int32(sb.interval), n, int64(4*n)+sb.entriesLen(), BaseSamplingLevel,
		int32((sb.written+sb.interval-1)/sb.interval))
	off := uint32(4 * n)
	offset := func(size uint32) error {
		buf = binary.LittleEndian.AppendUint32(buf, off)
		off += size
		return flush(false)
	}
	if sb.sizesSpilled > 0 {
		// The spilled sizes come back in pieces of at most what the builder held of them.
		r := io.NewSectionReader(sb.sizeSpill, 0, 4*int64(sb.sizesSpilled))
		piece := make([]byte, 4*min(sb.sizesSpilled, spillSizes))
		for left := sb.sizesSpilled; left > 0; {
			p := piece[:4*min(left, len(piece)/4)]
			if _, err := io.ReadFull(r, p); err != nil {
				return fmt.Errorf("bigindex: summary spill %s: %w", sb.sizeSpill.Name(), err)
			}
			for i := 0; i < len(p); i += 4 {
				if err := offset(binary.LittleEndian.Uint32(p[i:])); err != nil {
					return err
				}
			}
			left -= len(p) / 4
		}
	}
	for _, size := range sb.sizes {
		if err := offset(size); err != nil {
			return err
		}
	}
	if err := flush(true); err != nil {
		return err
	}
	if sb.spilled > 0 {
		if _, err := io.CopyBuffer(w, io.NewSectionReader(sb.spill, 0, sb.spilled), buf[:cap(buf)]); err != nil {
			return fmt.Errorf("bigindex: summary spill %s: %w", sb.spill.Name(), err)
		}
	}
	if _, err := w.Write(sb.entries); err != nil {
		return err
	}
	buf = encoding.AppendIntBytes(buf[:0], first)
	buf = encoding.AppendIntBytes(buf, last)
	return flush(true)
}

// Close releases the spill file, if any; Encode calls it. It may be called more than once,
// also by a caller abandoning the builder.
func (sb *SummaryBuilder) Close() error {
	var err error
	for _, f := range []**os.File{&sb.spill, &sb.sizeSpill} {
		if *f != nil {
			err = errors.Join(err, (*f).Close())
			*f = nil
		}
	}
	return err
}
