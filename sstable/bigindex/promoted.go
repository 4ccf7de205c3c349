package bigindex

import (
	"encoding/binary"
	"math"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/version"
)

// DeletionTime is a partition-level deletion as stored in a promoted index (and in the Data.db
// partition header).
type DeletionTime = encoding.DeletionTime

// Live is DeletionTime.LIVE: nothing deleted.
var Live = encoding.Live

// liveByte is DeletionTime.Serializer's IS_LIVE_DELETION (oa+): the sign bit of what would
// otherwise be markedForDeleteAt, which is never negative for a real deletion.
const liveByte = 0x80

// ReadDeletionTime decodes a DeletionTime in the encoding of version v from r:
//   - legacy (< oa): i32 localDeletionTime, i64 markedForDeleteAt (12 bytes);
//   - oa+ (hasUIntDeletionTime): a single byte 0x80 for LIVE; otherwise 12 bytes, i64
//     markedForDeleteAt (sign bit clear) then u32 localDeletionTime. Any other first byte with
//     the sign bit set is corrupt, as Cassandra's Serializer.deserialize rules.
func ReadDeletionTime(r *encoding.Reader, v version.Version) DeletionTime {
	if !v.HasUIntDeletionTime() {
		ldt := r.I32()
		mfda := r.I64()
		if ldt == math.MaxInt32 && mfda == math.MinInt64 {
			return Live // the legacy spelling of LIVE
		}
		return DeletionTime{MarkedForDeleteAt: mfda, LocalDeletionTime: int64(ldt)}
	}
	rest := r.Rest()
	if len(rest) > 0 && rest[0]&liveByte != 0 {
		if rest[0] != liveByte {
			r.Failf("deletion time: invalid flags byte %#02x", rest[0])
			return DeletionTime{}
		}
		r.Skip(1)
		return Live
	}
	mfda := r.I64()
	ldt := r.U32()
	return DeletionTime{MarkedForDeleteAt: mfda, LocalDeletionTime: int64(ldt)}
}

// AppendDeletionTime appends d in the encoding of version v (see ReadDeletionTime).
func AppendDeletionTime(b []byte, d DeletionTime, v version.Version) []byte {
	if !v.HasUIntDeletionTime() {
		if d == Live {
			b = encoding.AppendI32(b, math.MaxInt32)
			return encoding.AppendI64(b, math.MinInt64)
		}
		b = encoding.AppendI32(b, int32(d.LocalDeletionTime))
		return encoding.AppendI64(b, d.MarkedForDeleteAt)
	}
	if d.IsLive() {
		return append(b, liveByte)
	}
	b = encoding.AppendI64(b, d.MarkedForDeleteAt)
	return encoding.AppendU32(b, uint32(d.LocalDeletionTime))
}

// PromotedHeader is what CheckPromoted learns about a promoted index without the table's
// clustering types. Offsets are relative to the start of the promoted bytes.
type PromotedHeader struct {
	HeaderLength   uint64       // bytes from the partition start in Data.db to its first row
	Deletion       DeletionTime // partition-level deletion
	BlockCount     int          // number of IndexInfo blocks
	IndexInfoStart int          // offset of the first IndexInfo
	OffsetsStart   int          // offset of the i32[BlockCount] table of IndexInfo offsets
}

// BlockOffset is the offset within promoted of IndexInfo block i, read from the offsets table.
// promoted must be the bytes h was checked on and 0 <= i < h.BlockCount.
func (h PromotedHeader) BlockOffset(promoted []byte, i int) int {
	return h.IndexInfoStart + int(binary.BigEndian.Uint32(promoted[h.OffsetsStart+4*i:]))
}

// minIndexInfoSize is the least an IndexInfo can take: a kind byte for each of firstName and
// lastName, one-byte vints for offset and width, and the hasEndOpenMarker boolean.
const minIndexInfoSize = 5

// CheckPromoted validates the parts of a promoted index (the bytes after Index.db's promoted
// size) that can be checked without the clustering types:
//
//	uvint        headerLength
//	DeletionTime partitionDeletion   (version-dependent, see ReadDeletionTime)
//	uvint        blockCount          >= 1
//	IndexInfo[blockCount]            opaque here
//	i32[blockCount] offsets          offsets[0] == 0, strictly increasing, each block at
//	                                 least minIndexInfoSize bytes, all inside the IndexInfo run
//
// An empty promoted index (a partition with no row index) yields a zero header and no error.
// Error offsets are relative to the start of promoted; the caller adds the entry's position.
func CheckPromoted(promoted []byte, v version.Version) (PromotedHeader, error) {
	var h PromotedHeader
	if len(promoted) == 0 {
		return h, nil
	}
	r := encoding.NewReader(promoted)
	h.HeaderLength = r.UVint()
	h.Deletion = ReadDeletionTime(r, v)
	// Each block costs at least its 4-byte offset plus its IndexInfo.
	h.BlockCount = r.UVintCount("promoted index block count", 4+minIndexInfoSize)
	if err := r.Err(); err != nil {
		return PromotedHeader{}, err
	}
	if h.BlockCount == 0 {
		r.Failf("promoted index with no blocks")
		return PromotedHeader{}, r.Err()
	}
	h.IndexInfoStart = r.Offset()
	h.OffsetsStart = len(promoted) - 4*h.BlockCount
	runLen := h.OffsetsStart - h.IndexInfoStart
	prev := int64(-1)
	for i := 0; i < h.BlockCount; i++ {
		at := h.OffsetsStart + 4*i
		o := int64(int32(binary.BigEndian.Uint32(promoted[at:])))
		switch {
		case i == 0 && o != 0:
			return PromotedHeader{}, offsetErr(at, "first IndexInfo offset %d, want 0", o)
		case i > 0 && o < prev+minIndexInfoSize:
			return PromotedHeader{}, offsetErr(at, "IndexInfo %d offset %d after %d: blocks must be increasing and at least %d bytes", i, o, prev, minIndexInfoSize)
		case o+minIndexInfoSize > int64(runLen):
			return PromotedHeader{}, offsetErr(at, "IndexInfo %d offset %d leaves less than %d of the %d-byte IndexInfo run", i, o, minIndexInfoSize, runLen)
		}
		prev = o
	}
	return h, nil
}

func offsetErr(at int, format string, args ...any) error {
	r := encoding.NewReaderAt(nil, int64(at))
	r.Failf(format, args...)
	return r.Err()
}
