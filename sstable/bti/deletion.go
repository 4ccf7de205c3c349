package bti

import (
	"encoding/binary"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// DeletionTime is Cassandra's DeletionTime; Rows.db stores it in the oa/da encoding
// (hasUIntDeletionTime).
type DeletionTime = encoding.DeletionTime

// Live is DeletionTime.LIVE: nothing deleted.
var Live = encoding.Live

const (
	deletionTimeSize = 12   // i64 markedForDeleteAt, u32 localDeletionTime
	isLiveDeletion   = 0x80 // DeletionTime.Serializer.IS_LIVE_DELETION
)

// appendDeletion is DeletionTime.Serializer.serialize: one byte 0x80 for Live, else 12 bytes whose
// first bit is the (zero) sign bit of markedForDeleteAt.
func appendDeletion(dst []byte, d DeletionTime) []byte {
	if d.IsLive() {
		return append(dst, isLiveDeletion)
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(d.MarkedForDeleteAt))
	return binary.BigEndian.AppendUint32(dst, uint32(d.LocalDeletionTime))
}

// readDeletionTime is DeletionTime.Serializer.deserialize at file offset off, where b holds
// the file from offset base to the end of the area read; it returns the value and its size.
// Like Cassandra it rejects a first byte with the sign bit set other than 0x80.
func readDeletionTime(b []byte, base, off int64) (DeletionTime, int, error) {
	end := base + int64(len(b))
	if off < base || off >= end {
		return DeletionTime{}, 0, corruptAt(off, "deletion time runs past the end (size %d)", end)
	}
	b = b[off-base:]
	if f := b[0]; f&isLiveDeletion != 0 {
		if f != isLiveDeletion {
			return DeletionTime{}, 0, corruptAt(off, "invalid deletion time flags %#02x", f)
		}
		return Live, 1, nil
	}
	if len(b) < deletionTimeSize {
		return DeletionTime{}, 0, corruptAt(off, "deletion time runs past the end (size %d)", end)
	}
	return DeletionTime{
		MarkedForDeleteAt: int64(binary.BigEndian.Uint64(b)),
		LocalDeletionTime: int64(binary.BigEndian.Uint32(b[8:])),
	}, deletionTimeSize, nil
}
