package bigindex

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Samples reads a Summary.db's samples on demand from the file, for a caller that needs a few
// of many (a binary search over them): two small reads per sample and nothing held per sample,
// where ParseSummary holds every key (~0.2 bytes per partition of the sstable, and more
// once parsed). Each sample is checked as ParseSummary checks it; the layout past the samples
// (first and last keys) is not read.
type Samples struct {
	r                io.ReaderAt
	name             string
	MinIndexInterval int32
	SamplingLevel    int32
	n                int
	offHeap          int64
	buf              []byte
}

// OpenSamples reads the header of the Summary.db of size bytes in r; name is the file's, for
// errors.
func OpenSamples(r io.ReaderAt, size int64, name string) (*Samples, error) {
	var h [summaryHeaderSize]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return nil, fmt.Errorf("%s: summary header: %w", name, err)
	}
	s := &Samples{r: r, name: name,
		MinIndexInterval: int32(binary.BigEndian.Uint32(h[0:])),
		SamplingLevel:    int32(binary.BigEndian.Uint32(h[16:])),
		n:                int(int32(binary.BigEndian.Uint32(h[4:]))),
		offHeap:          int64(binary.BigEndian.Uint64(h[8:])),
	}
	switch {
	case s.MinIndexInterval < 1:
		return nil, fmt.Errorf("%s: %w", name, summaryErr(0, "min index interval %d", s.MinIndexInterval))
	case s.SamplingLevel < 1 || s.SamplingLevel > BaseSamplingLevel:
		return nil, fmt.Errorf("%s: %w", name, summaryErr(16, "sampling level %d outside 1..%d", s.SamplingLevel, BaseSamplingLevel))
	case s.n < 0 || int64(s.n)*12 > s.offHeap || s.offHeap > size-summaryHeaderSize:
		return nil, fmt.Errorf("%s: %w", name, summaryErr(4, "%d offsets and %d off-heap bytes in a %d-byte file", s.n, s.offHeap, size))
	}
	return s, nil
}

// Len is the number of samples.
func (s *Samples) Len() int { return s.n }

// Sample returns sample i's key, valid until the next call, and the Index.db offset of its
// entry.
func (s *Samples) Sample(i int) ([]byte, int64, error) {
	if i < 0 || i >= s.n {
		return nil, 0, fmt.Errorf("%s: sample %d of %d", s.name, i, s.n)
	}
	var o [8]byte
	k := 8
	if i+1 == s.n {
		k = 4
	}
	at := int64(summaryHeaderSize + 4*i)
	if _, err := s.r.ReadAt(o[:k], at); err != nil {
		return nil, 0, fmt.Errorf("%s: summary offset %d: %w", s.name, i, err)
	}
	start, end := int64(int32(binary.LittleEndian.Uint32(o[:]))), s.offHeap
	if k == 8 {
		end = int64(int32(binary.LittleEndian.Uint32(o[4:])))
	}
	if (i == 0 && start != 4*int64(s.n)) || start < 4*int64(s.n) || end-start < 8 || end > s.offHeap {
		return nil, 0, fmt.Errorf("%s: %w", s.name, summaryErr(at, "entry %d spans [%d, %d) of %d bytes: want at least 8 bytes after the offsets", i, start, end, s.offHeap))
	}
	if n := int(end - start); cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	b := s.buf[:end-start]
	if _, err := s.r.ReadAt(b, summaryHeaderSize+start); err != nil {
		return nil, 0, fmt.Errorf("%s: summary entry %d: %w", s.name, i, err)
	}
	key := b[: len(b)-8 : len(b)-8]
	return key, int64(binary.LittleEndian.Uint64(b[len(b)-8:])), nil
}
