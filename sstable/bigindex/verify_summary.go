package bigindex

import "fmt"

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
