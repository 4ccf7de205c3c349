package rows

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// Partition-level DeletionTime (db/DeletionTime.java, getSerializer(version)).
//
//	legacy (< oa):  i32 localDeletionTime, i64 markedForDeleteAt; LIVE = 7fffffff 8000000000000000
//	oa, da:         LIVE = the single byte 0x80; otherwise i64 markedForDeleteAt (sign bit 0),
//	                u32 localDeletionTime
const (
	legacyDeletionSize = 12
	liveDeletionFlag   = 0x80
)

// DeletionTimeSize is the encoded size of d in a partition header (and the promoted index).
func DeletionTimeSize(v version.Version, d DeletionTime) int {
	if v.HasUIntDeletionTime() && d.IsLive() {
		return 1
	}
	return legacyDeletionSize
}

// AppendDeletionTime appends d as a partition-level deletion in v's encoding. In oa/da any
// live d is written as the LIVE byte; a legacy encoding keeps a non-Live d's raw fields.
func AppendDeletionTime(dst []byte, v version.Version, d DeletionTime) ([]byte, error) {
	if v.HasUIntDeletionTime() {
		if d.IsLive() {
			return append(dst, liveDeletionFlag), nil
		}
		if d.MarkedForDeleteAt < 0 || d.LocalDeletionTime < 0 || d.LocalDeletionTime > math.MaxUint32 {
			return dst, fmt.Errorf("%w: deletion time %+v not encodable in %s", ErrInvalid, d, v)
		}
		dst = encoding.AppendI64(dst, d.MarkedForDeleteAt)
		return encoding.AppendU32(dst, uint32(d.LocalDeletionTime)), nil
	}
	if d == Live {
		dst = encoding.AppendI32(dst, math.MaxInt32)
		return encoding.AppendI64(dst, math.MinInt64), nil
	}
	if d.LocalDeletionTime < math.MinInt32 || d.LocalDeletionTime > math.MaxInt32 {
		return dst, fmt.Errorf("%w: deletion time %+v not encodable in %s", ErrInvalid, d, v)
	}
	dst = encoding.AppendI32(dst, int32(d.LocalDeletionTime))
	return encoding.AppendI64(dst, d.MarkedForDeleteAt), nil
}

// ReadDeletionTime decodes a partition-level deletion from the start of b, returning it and
// its encoded size. A legacy LIVE (and the oa LIVE byte) decodes to Live.
func ReadDeletionTime(b []byte, v version.Version) (DeletionTime, int, error) {
	if v.HasUIntDeletionTime() {
		if len(b) == 0 {
			return Live, 0, ErrTruncated
		}
		if b[0]&liveDeletionFlag != 0 {
			if b[0] != liveDeletionFlag {
				return Live, 0, fmt.Errorf("%w: deletion flags %#02x", ErrMalformed, b[0])
			}
			return Live, 1, nil
		}
		if len(b) < legacyDeletionSize {
			return Live, 0, ErrTruncated
		}
		return DeletionTime{
			MarkedForDeleteAt: int64(binary.BigEndian.Uint64(b)),
			LocalDeletionTime: int64(binary.BigEndian.Uint32(b[8:])),
		}, legacyDeletionSize, nil
	}
	if len(b) < legacyDeletionSize {
		return Live, 0, ErrTruncated
	}
	ldt := int32(binary.BigEndian.Uint32(b))
	mfda := int64(binary.BigEndian.Uint64(b[4:]))
	if ldt == math.MaxInt32 && mfda == math.MinInt64 {
		return Live, legacyDeletionSize, nil
	}
	return DeletionTime{MarkedForDeleteAt: mfda, LocalDeletionTime: int64(ldt)}, legacyDeletionSize, nil
}

// deltas is the SerializationHeader's EncodingStats arithmetic (writeTimestamp,
// writeLocalDeletionTime, writeTTL and their readers). Timestamps are 64-bit deltas; local
// deletion times and TTLs are 32-bit deltas written sign-extended (VIntCoding.writeUnsignedVInt32
// widens an int to a long) and read back through a checked cast to int.
type deltas struct {
	minTimestamp int64
	minLDT       int64
	minTTL       int32
}

func newDeltas(h *schema.Header) deltas {
	return deltas{minTimestamp: h.MinTimestamp, minLDT: h.MinLocalDeletionTime, minTTL: int32(h.MinTTL)}
}

func (s *deltas) timestamp(ts int64) uint64 { return uint64(ts - s.minTimestamp) }
func (s *deltas) ldt(ldt int64) uint64      { return uint64(int64(int32(ldt - s.minLDT))) }
func (s *deltas) ttl(ttl int32) uint64      { return uint64(int64(ttl - s.minTTL)) }

func (s *deltas) fromTimestamp(u uint64) int64 { return s.minTimestamp + int64(u) }

// fits32 is VIntCoding.checkedCast: the vint must be a sign-extended 32-bit value.
func fits32(u uint64) bool { return int64(u) == int64(int32(u)) }

func (s *deltas) fromLDT(u uint64) int64 { return s.minLDT + int64(int32(u)) }
func (s *deltas) fromTTL(u uint64) int32 { return s.minTTL + int32(u) }
