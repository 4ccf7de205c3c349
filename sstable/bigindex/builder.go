package bigindex

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// SummaryBuilder builds a Summary.db at the full sampling level from a pass over Index.db, as
// Cassandra's IndexSummaryBuilder does when it writes or rebuilds one: the partitions at
// ordinals 0, minIndexInterval, 2*minIndexInterval, ... are sampled. Only the sampled keys are
// copied (into one growing arena), so a pass over a large index keeps little memory.
//
// A SummaryBuilder is not safe for concurrent use.
type SummaryBuilder struct {
	interval  int64
	keys      []byte  // sampled keys, back to back
	keyEnds   []int   // end of each sampled key in keys
	positions []int64 // Index.db position of each sampled entry
	written   int64   // partitions seen
	next      int64   // ordinal of the next sample; -1 once sampling has stopped
	expect    int64   // samples Expect announced, to size the key arena from the first key
}

// maxExpectedSamples bounds what Expect reserves, whatever count it is told (a count may come
// from a peer's manifest): past it the arrays grow as they fill.
const (
	maxExpectedSamples  = 1 << 20
	maxExpectedKeyBytes = 64 << 20
)

// Expect sizes the builder for about n partitions, so that sampling a large index neither
// grows (copying) its arrays nor leaves the grown-out copies as garbage; the key arena is sized
// from the first key. A wrong n costs only growth or spare capacity.
func (sb *SummaryBuilder) Expect(n int64) {
	if n <= 0 || sb.written > 0 {
		return
	}
	sb.expect = min(n/sb.interval+1, maxExpectedSamples)
	sb.keyEnds = make([]int, 0, sb.expect)
	sb.positions = make([]int64, 0, sb.expect)
}

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
			if sb.keys == nil && sb.expect > 0 {
				sb.keys = make([]byte, 0, min(sb.expect*int64(len(key)), maxExpectedKeyBytes))
			}
			sb.keys = append(sb.keys, key...)
			sb.keyEnds = append(sb.keyEnds, len(sb.keys))
			sb.positions = append(sb.positions, indexPosition)
			sb.next += sb.interval
		} else {
			sb.next = -1
		}
	}
	sb.written++
}

func (sb *SummaryBuilder) entriesLen() int64 { return int64(len(sb.keys)) + 8*int64(len(sb.positions)) }

// Count is the number of partitions added so far.
func (sb *SummaryBuilder) Count() int64 { return sb.written }

// Build returns the summary of everything added, with first and last (aliased, not copied) as
// the sstable's first and last partition keys. Entry keys alias the builder's arena, which the
// builder never modifies again: it may be reused only by building a new one.
func (sb *SummaryBuilder) Build(first, last []byte) *Summary {
	s := &Summary{
		MinIndexInterval:   int32(sb.interval),
		SamplingLevel:      BaseSamplingLevel,
		SizeAtFullSampling: int32((sb.written + sb.interval - 1) / sb.interval),
		Entries:            make([]SummaryEntry, len(sb.positions)),
		First:              first,
		Last:               last,
	}
	start := 0
	for i, end := range sb.keyEnds {
		s.Entries[i] = SummaryEntry{Key: sb.keys[start:end:end], IndexPosition: sb.positions[i]}
		start = end
	}
	return s
}

// Encode writes the Summary.db Build(first, last).Append would, straight from the builder's
// arena through a small buffer: on a child of millions of partitions the entries and their
// encoding would otherwise be two more copies of the samples at once.
func (sb *SummaryBuilder) Encode(w io.Writer, first, last []byte) error {
	n := len(sb.positions)
	buf := make([]byte, 0, 64<<10)
	flush := func(force bool) error {
		if len(buf) < 60<<10 && !force {
			return nil
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	buf = appendSummaryHeader(buf, int32(sb.interval), n, int64(12*n+len(sb.keys)), BaseSamplingLevel,
		int32((sb.written+sb.interval-1)/sb.interval))
	off := uint32(4 * n)
	start := 0
	for _, end := range sb.keyEnds {
		buf = binary.LittleEndian.AppendUint32(buf, off)
		off += uint32(end - start + 8)
		start = end
		if err := flush(false); err != nil {
			return err
		}
	}
	start = 0
	for i, end := range sb.keyEnds {
		buf = append(buf, sb.keys[start:end]...)
		buf = binary.LittleEndian.AppendUint64(buf, uint64(sb.positions[i]))
		start = end
		if err := flush(false); err != nil {
			return err
		}
	}
	buf = encoding.AppendIntBytes(buf, first)
	buf = encoding.AppendIntBytes(buf, last)
	return flush(true)
}

// Mismatch is one disagreement between a Summary.db and its Index.db.
type Mismatch struct {
	Sample      int   // index of the summary sample, or -1 for first/last and counts
	IndexOffset int64 // Index.db offset concerned, or -1
	What        string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("summary sample %d, index offset %d: %s", m.Sample, m.IndexOffset, m.What)
}

// VerifySummary checks a parsed Summary.db against a full pass over its Index.db:
//   - every sample's position is the offset of an Index.db entry, in order, and the sample's key
//     equals that entry's key;
//   - first and last equal the first and last Index.db keys;
//   - at the full sampling level, sample i is the partition at ordinal i*MinIndexInterval and
//     SizeAtFullSampling is ceil(partitions / MinIndexInterval), as Cassandra builds them.
//
// It returns every mismatch found (nil when they agree) and the source's error, if the pass
// over Index.db failed; mismatches found before the failure are still returned.
func VerifySummary(s *Summary, src Source) ([]Mismatch, error) {
	var out []Mismatch
	add := func(sample int, off int64, format string, args ...any) {
		out = append(out, Mismatch{Sample: sample, IndexOffset: off, What: fmt.Sprintf(format, args...)})
	}
	full := s.SamplingLevel == BaseSamplingLevel && s.MinIndexInterval > 0
	next := 0
	var ordinal int64
	var first, last []byte // last is copied: a Scanner's entries die at the next Next
	for src.Next() {
		e := src.Entry()
		if ordinal == 0 {
			first = append([]byte(nil), e.Key...)
		}
		last = append(last[:0], e.Key...)
		for next < len(s.Entries) && s.Entries[next].IndexPosition < e.Offset {
			add(next, s.Entries[next].IndexPosition, "no index entry starts at this position")
			next++
		}
		if next < len(s.Entries) && s.Entries[next].IndexPosition == e.Offset {
			if string(s.Entries[next].Key) != string(e.Key) {
				add(next, e.Offset, "sample key %x, index key %x", s.Entries[next].Key, e.Key)
			}
			if full && ordinal != int64(next)*int64(s.MinIndexInterval) {
				add(next, e.Offset, "sample is partition %d, want %d at full sampling", ordinal, int64(next)*int64(s.MinIndexInterval))
			}
			next++
		}
		ordinal++
	}
	if err := src.Err(); err != nil {
		return out, err
	}
	for ; next < len(s.Entries); next++ {
		add(next, s.Entries[next].IndexPosition, "position is past the last index entry")
	}
	if string(s.First) != string(first) {
		add(-1, -1, "first key %x, index first %x", s.First, first)
	}
	if string(s.Last) != string(last) {
		add(-1, -1, "last key %x, index last %x", s.Last, last)
	}
	if full {
		interval := int64(s.MinIndexInterval)
		if want := (ordinal + interval - 1) / interval; int64(s.SizeAtFullSampling) != want || int64(len(s.Entries)) != want {
			add(-1, -1, "%d samples, size at full sampling %d, want %d for %d partitions", len(s.Entries), s.SizeAtFullSampling, want, ordinal)
		}
	}
	return out, nil
}
