package compress

import (
	"fmt"
	"math"
	"strconv"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// DefaultCRCChunkLength is the CRC.db chunk size ChecksummedSequentialWriter uses (its
// 64 KiB buffer).
const DefaultCRCChunkLength = 65536

// CRCInfo is CRC.db, written beside an uncompressed Data.db: the CRC32 of every ChunkLength
// slice of Data.db, in order; the last slice may be short.
type CRCInfo struct {
	ChunkLength int
	CRCs        []uint32
}

// ParseCRC decodes CRC.db: a big-endian i32 chunk length, then big-endian u32 CRCs to the end.
func ParseCRC(b []byte) (*CRCInfo, error) {
	r := encoding.NewReader(b)
	l := r.I32()
	if err := r.Err(); err != nil {
		return nil, err
	}
	if l <= 0 {
		return nil, invalidAt(0, fmt.Sprintf("CRC chunk length %d", l))
	}
	if r.Len()%4 != 0 {
		return nil, &encoding.OffsetError{Offset: int64(len(b) - r.Len()%4), What: "CRC32 entry", Err: encoding.ErrTruncated}
	}
	info := &CRCInfo{ChunkLength: int(l), CRCs: make([]uint32, r.Len()/4)}
	for i := range info.CRCs {
		info.CRCs[i] = r.U32()
	}
	return info, nil
}

// Append appends the CRC.db encoding of c.
func (c *CRCInfo) Append(b []byte) []byte {
	b = encoding.AppendI32(b, int32(c.ChunkLength))
	for _, v := range c.CRCs {
		b = encoding.AppendU32(b, v)
	}
	return b
}

// ParseDigest decodes Digest.crc32: the ASCII decimal of the unsigned CRC32 of Data.db. Cassandra
// writes no newline; one trailing "\n" is accepted because its reader uses readLine.
func ParseDigest(b []byte) (uint32, error) {
	s := string(b)
	if len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, invalidAt(int64(i), fmt.Sprintf("digest %q is not a decimal number", b))
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > math.MaxUint32 {
		return 0, invalidAt(0, fmt.Sprintf("digest %q is not an unsigned 32-bit number", b))
	}
	return uint32(v), nil
}

// AppendDigest appends the Digest.crc32 encoding of crc.
func AppendDigest(b []byte, crc uint32) []byte { return strconv.AppendUint(b, uint64(crc), 10) }
