package bigindex

import (
	"encoding/binary"
	"math"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// BaseSamplingLevel is Downsampling.BASE_SAMPLING_LEVEL: a summary at this level samples every
// MinIndexInterval-th partition.
const BaseSamplingLevel = 128

// DefaultMinIndexInterval is the table parameter min_index_interval's default.
const DefaultMinIndexInterval = 128

// SummaryEntry is one Summary.db sample: a partition key and the Index.db offset of its entry.
type SummaryEntry struct {
	Key           []byte
	IndexPosition int64
}

// Summary is a parsed Summary.db (the BIG index summary). Keys alias the bytes it was parsed
// from.
type Summary struct {
	MinIndexInterval   int32
	SamplingLevel      int32
	SizeAtFullSampling int32
	Entries            []SummaryEntry
	First, Last        []byte
}

// summaryHeaderSize is minIndexInterval, offsetCount, offHeapSize, samplingLevel,
// sizeAtFullSampling.
const summaryHeaderSize = 4 + 4 + 8 + 4 + 4

// ParseSummary decodes a Summary.db as Cassandra 5.0 writes it:
//
//	i32 minIndexInterval, i32 offsetCount, i64 offHeapSize, i32 samplingLevel,
//	i32 sizeAtFullSampling                                       (big-endian)
//	i32[offsetCount] offsets            LITTLE-endian, from the start of this array
//	entries: key bytes, i64 LITTLE-endian Index.db position      (offHeapSize - 4*offsetCount)
//	i32 length + first key, i32 length + last key                (big-endian lengths)
//
// It accepts exactly the layouts Summary.Append produces, so Append(ParseSummary(b)) == b:
// offsets[0] must be 4*offsetCount (no gap), each entry at least 8 bytes, the last ending at
// offHeapSize, and nothing may follow the last key. Summaries written in big-endian native
// order (4.0/4.1 on big-endian hosts) fail the offsets checks rather than parse wrongly.
// Errors carry the Summary.db offset.
func ParseSummary(b []byte) (*Summary, error) {
	r := encoding.NewReader(b)
	s := &Summary{MinIndexInterval: r.I32()}
	offsetCount := r.I32()
	offHeapSize := r.I64()
	s.SamplingLevel = r.I32()
	s.SizeAtFullSampling = r.I32()
	if err := r.Err(); err != nil {
		return nil, err
	}
	switch {
	case s.MinIndexInterval < 1:
		return nil, summaryErr(0, "min index interval %d", s.MinIndexInterval)
	case s.SamplingLevel < 1 || s.SamplingLevel > BaseSamplingLevel:
		return nil, summaryErr(16, "sampling level %d outside 1..%d", s.SamplingLevel, BaseSamplingLevel)
	case offsetCount < 0:
		return nil, summaryErr(4, "negative offset count %d", offsetCount)
	case offHeapSize < 4*int64(offsetCount) || offHeapSize > int64(r.Len()):
		return nil, summaryErr(8, "off-heap size %d: want %d..%d for %d offsets", offHeapSize, 4*int64(offsetCount), r.Len(), offsetCount)
	case offsetCount == 0 && offHeapSize != 0:
		// No sample, no entry bytes: anything there would be unreachable.
		return nil, summaryErr(8, "off-heap size %d with no offsets", offHeapSize)
	}
	region := r.Bytes(int(offHeapSize))
	n := int(offsetCount)
	// Every entry takes at least its 4-byte offset and its 8-byte position.
	if int64(n)*12 > offHeapSize {
		return nil, summaryErr(4, "%d offsets do not fit in %d off-heap bytes", n, offHeapSize)
	}
	s.Entries = make([]SummaryEntry, n)
	for i := range n {
		start := int64(int32(binary.LittleEndian.Uint32(region[4*i:])))
		end := offHeapSize
		if i+1 < n {
			end = int64(int32(binary.LittleEndian.Uint32(region[4*i+4:])))
		}
		at := int64(summaryHeaderSize + 4*i)
		switch {
		case i == 0 && start != 4*int64(n):
			return nil, summaryErr(at, "first offset %d, want %d", start, 4*n)
		case end-start < 8 || end > offHeapSize:
			return nil, summaryErr(at, "entry %d spans [%d, %d) of %d bytes: want at least 8 bytes inside", i, start, end, offHeapSize)
		}
		keyEnd := int(end) - 8
		s.Entries[i] = SummaryEntry{
			Key:           region[start:keyEnd:keyEnd],
			IndexPosition: int64(binary.LittleEndian.Uint64(region[keyEnd:])),
		}
	}
	s.First = r.IntBytes()
	s.Last = r.IntBytes()
	if err := r.Err(); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, summaryErr(r.Pos(), "%d trailing bytes after the last key", r.Len())
	}
	return s, nil
}

func summaryErr(at int64, format string, args ...any) error {
	r := encoding.NewReaderAt(nil, at)
	r.Failf("summary: "+format, args...)
	return r.Err()
}

// OffHeapSize is the size of the offsets and entries regions: 4 per sample plus each key and
// its 8-byte position.
func (s *Summary) OffHeapSize() int64 {
	n := int64(12 * len(s.Entries))
	for _, e := range s.Entries {
		n += int64(len(e.Key))
	}
	return n
}

// Size is the encoded size of s.
func (s *Summary) Size() int {
	return summaryHeaderSize + int(s.OffHeapSize()) + 4 + len(s.First) + 4 + len(s.Last)
}

// Append appends s in Summary.db layout (see ParseSummary), as Cassandra 5.0 writes it: with
// little-endian offsets and positions. It panics if the off-heap region would exceed 2 GiB,
// which Cassandra's builder never produces.
func (s *Summary) Append(b []byte) []byte {
	offHeap := s.OffHeapSize()
	if offHeap > math.MaxInt32 {
		panic("bigindex: index summary exceeds 2 GiB")
	}
	b = appendSummaryHeader(b, s.MinIndexInterval, len(s.Entries), offHeap, s.SamplingLevel, s.SizeAtFullSampling)
	off := uint32(4 * len(s.Entries))
	for _, e := range s.Entries {
		b = binary.LittleEndian.AppendUint32(b, off)
		off += uint32(len(e.Key) + 8)
	}
	for _, e := range s.Entries {
		b = append(b, e.Key...)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.IndexPosition))
	}
	b = encoding.AppendIntBytes(b, s.First)
	return encoding.AppendIntBytes(b, s.Last)
}

// appendSummaryHeader appends Summary.db's header (see ParseSummary); Append and
// SummaryBuilder.Encode share it.
func appendSummaryHeader(b []byte, minIndexInterval int32, entries int, offHeap int64, samplingLevel, sizeAtFullSampling int32) []byte {
	b = encoding.AppendI32(b, minIndexInterval)
	b = encoding.AppendI32(b, int32(entries))
	b = encoding.AppendI64(b, offHeap)
	b = encoding.AppendI32(b, samplingLevel)
	return encoding.AppendI32(b, sizeAtFullSampling)
}
