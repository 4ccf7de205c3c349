package stats

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// Statistics is a whole Statistics.db. A nil member is a component the file does not have;
// Cassandra always writes all four.
type Statistics struct {
	Validation *Validation
	Compaction *Compaction
	Stats      *Stats
	Header     *schema.Header
}

// extent is where one component lives: its body is [off, end) and, with checksums, its CRC32
// follows at end.
type extent struct {
	comp     Component
	off, end int
	tocAt    int // offset of its TOC entry, for layout errors
}

// Parse decodes Statistics.db for sstable version v. It is strict: the table of contents must
// tile the file exactly as MetadataSerializer lays it out, every CRC32 must match (na+ and
// BTI), and every component must parse exactly to its recorded end, so Parse followed by
// Append reproduces b byte for byte. The first failure is returned as an *Error. The result
// does not alias b.
func Parse(b []byte, v version.Version) (*Statistics, error) {
	s, problems := decode(b, v, true)
	if len(problems) > 0 {
		return nil, problems[0]
	}
	return s, nil
}

// Check reports every problem Parse would stop at: a bad table of contents (after which
// nothing else can be located), then, per component, a CRC32 mismatch and a failure to parse
// exactly to its recorded end. Each *Error names the component and the absolute byte offset.
// An empty result means the file is sound.
func Check(b []byte, v version.Version) []*Error {
	_, problems := decode(b, v, false)
	return problems
}

func decode(b []byte, v version.Version, firstOnly bool) (*Statistics, []*Error) {
	extents, err := readTOC(b, v)
	if err != nil {
		return nil, []*Error{err}
	}
	checksum := v.HasMetadataChecksum()
	s := &Statistics{}
	var problems []*Error
	for _, e := range extents {
		body := b[e.off:e.end]
		if checksum {
			if want := binary.BigEndian.Uint32(b[e.end:]); crc32.ChecksumIEEE(body) != want {
				problems = append(problems, newError(e.comp, int64(e.end), "CRC32", ErrChecksum))
				if firstOnly {
					return nil, problems
				}
			}
		}
		if perr := s.decodeComponent(e, body, v); perr != nil {
			problems = append(problems, perr)
			if firstOnly {
				return nil, problems
			}
		}
	}
	return s, problems
}

func (s *Statistics) decodeComponent(e extent, body []byte, v version.Version) *Error {
	r := encoding.NewReaderAt(body, int64(e.off))
	switch e.comp {
	case ComponentValidation:
		s.Validation = parseValidation(r, body)
	case ComponentCompaction:
		s.Compaction = parseCompaction(r)
	case ComponentStats:
		s.Stats = parseStats(r, v)
		if r.Err() == nil && isTombstonePadding(r.Rest(), s.Stats, v) {
			s.Stats.TombstonePadding = true
			r.Skip(r.Len())
		}
	case ComponentHeader:
		s.Header = parseHeader(r)
	}
	if err := r.Err(); err != nil {
		return componentError(e.comp, err)
	}
	if r.Len() != 0 {
		return newError(e.comp, r.Pos(), fmt.Sprintf("%d bytes left", r.Len()), ErrTrailing)
	}
	return nil
}

// isTombstonePadding recognises the slack Cassandra 5.0 leaves after an oa/da STATS body (see
// Stats.TombstonePadding).
func isTombstonePadding(rest []byte, st *Stats, v version.Version) bool {
	n := len(st.TombstoneDropTimes.Bins)
	if !v.HasUIntDeletionTime() || n == 0 || len(rest) != 4*n {
		return false
	}
	for _, c := range rest {
		if c != 0 {
			return false
		}
	}
	return true
}

// readTOC validates the table of contents and returns the component extents in file order.
func readTOC(b []byte, v version.Version) ([]extent, *Error) {
	checksum := v.HasMetadataChecksum()
	crcLen := 0
	if checksum {
		crcLen = 4
	}
	r := encoding.NewReader(b)
	count := r.I32()
	if err := r.Err(); err != nil {
		return nil, componentError(ComponentTOC, err)
	}
	if count < 1 || count > 4 {
		return nil, newError(ComponentTOC, 0, fmt.Sprintf("component count %d", count), ErrLayout)
	}
	if checksum {
		if want := r.U32(); r.Err() == nil && crc32.ChecksumIEEE(b[:4]) != want {
			return nil, newError(ComponentTOC, 4, "CRC32 of the component count", ErrChecksum)
		}
	}
	tocStart := r.Offset()
	extents := make([]extent, count)
	offsets := make([]int32, count)
	for i := range extents {
		at := r.Offset()
		typ, off := r.I32(), r.I32()
		if r.Err() != nil {
			break
		}
		if typ < 0 || typ > int32(ComponentHeader) || (i > 0 && Component(typ) <= extents[i-1].comp) {
			return nil, newError(ComponentTOC, int64(at), fmt.Sprintf("component type %d", typ), ErrLayout)
		}
		extents[i] = extent{comp: Component(typ), tocAt: at + 4}
		offsets[i] = off
	}
	tocEnd := r.Offset()
	if checksum {
		want := r.U32()
		if r.Err() == nil && crc32.Update(crc32.ChecksumIEEE(b[:4]), crc32.IEEETable, b[tocStart:tocEnd]) != want {
			return nil, newError(ComponentTOC, int64(tocEnd), "CRC32 of the table of contents", ErrChecksum)
		}
	}
	if err := r.Err(); err != nil {
		return nil, componentError(ComponentTOC, err)
	}
	next := r.Offset() // the first body starts right after the table of contents
	for i := range extents {
		e := &extents[i]
		if int(offsets[i]) != next {
			return nil, newError(ComponentTOC, int64(e.tocAt), fmt.Sprintf("%s offset %d, expected %d", e.comp, offsets[i], next), ErrLayout)
		}
		end := len(b)
		if i+1 < len(extents) {
			end = int(offsets[i+1])
		}
		if end-crcLen < next || end > len(b) {
			return nil, newError(ComponentTOC, int64(e.tocAt), fmt.Sprintf("%s spans %d..%d of %d bytes", e.comp, next, end, len(b)), ErrLayout)
		}
		e.off, e.end = next, end-crcLen
		next = end
	}
	return extents, nil
}

// Append appends the Statistics.db encoding of s for version v to b, as
// MetadataSerializer.serialize writes it: the component count, the table of contents of
// (type, absolute offset) pairs sorted by type, then each present component's body; for na+
// and BTI with a CRC32 after the count, after the table (running over the count and the
// table), and after each body. Offsets are relative to the start of the appended bytes.
func (s *Statistics) Append(b []byte, v version.Version) []byte {
	type part struct {
		comp Component
		body func([]byte) []byte
	}
	var parts []part
	if s.Validation != nil {
		parts = append(parts, part{ComponentValidation, s.Validation.append})
	}
	if s.Compaction != nil {
		parts = append(parts, part{ComponentCompaction, s.Compaction.append})
	}
	if s.Stats != nil {
		parts = append(parts, part{ComponentStats, func(b []byte) []byte { return s.Stats.append(b, v) }})
	}
	if s.Header != nil {
		parts = append(parts, part{ComponentHeader, func(b []byte) []byte { return appendHeader(b, s.Header) }})
	}
	checksum := v.HasMetadataChecksum()
	start := len(b)
	b = encoding.AppendI32(b, int32(len(parts)))
	if checksum {
		b = encoding.AppendU32(b, crc32.ChecksumIEEE(b[start:]))
	}
	toc := len(b)
	b = append(b, make([]byte, 8*len(parts))...)
	if checksum {
		b = append(b, 0, 0, 0, 0)
	}
	for i, p := range parts {
		binary.BigEndian.PutUint32(b[toc+8*i:], uint32(p.comp))
		binary.BigEndian.PutUint32(b[toc+8*i+4:], uint32(len(b)-start))
		bodyStart := len(b)
		b = p.body(b)
		if checksum {
			b = encoding.AppendU32(b, crc32.ChecksumIEEE(b[bodyStart:]))
		}
	}
	if checksum {
		tocEnd := toc + 8*len(parts)
		crc := crc32.Update(crc32.ChecksumIEEE(b[start:start+4]), crc32.IEEETable, b[toc:tocEnd])
		binary.BigEndian.PutUint32(b[tocEnd:], crc)
	}
	return b
}
