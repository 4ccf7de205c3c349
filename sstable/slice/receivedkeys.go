package slice

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicedb/sluice/sstable/compress"
)

// receivedKeys reads partition keys from a child's compressed Data.db while it arrives, its
// bytes in order from the file's start (a streamed partial's runs): a key is read only once
// every chunk holding it is in (arrived), each chunk read, checked and decoded once, and no
// chunk beyond the last one a key needs is read. An IndexPositions rebuild reads its keys
// through it, so that it works beside the receive loop instead of after it.
type receivedKeys struct {
	r       *compress.Reader
	info    *compress.Info
	fileLen int64
	arrived int64 // Data.db bytes in place from the file's start
	// win holds the uncompressed bytes of consecutive chunks from winStart (a key across a
	// chunk boundary spans two); empty before the first read.
	win      []byte
	winStart int64
}

func newReceivedKeys(r *compress.Reader, info *compress.Info, fileLen int64) *receivedKeys {
	return &receivedKeys{r: r, info: info, fileLen: fileLen}
}

// chunkIn reports whether chunk c's record has arrived whole.
func (k *receivedKeys) chunkIn(c int) bool {
	end := k.fileLen
	if c+1 < len(k.info.Offsets) {
		end = k.info.Offsets[c+1]
	}
	return k.arrived >= end
}

// at returns the key of the partition header at uncompressed position pos, valid until the
// next call; ok is false when the chunks holding it have not all arrived yet.
func (k *receivedKeys) at(pos int64) (key []byte, ok bool, err error) {
	hdr, ok, err := k.bytesAt(pos, 2)
	if !ok || err != nil {
		return nil, ok, err
	}
	return k.bytesAt(pos+2, int(binary.BigEndian.Uint16(hdr)))
}

// bytesAt returns n uncompressed bytes at pos, or ok false when they have not all arrived.
func (k *receivedKeys) bytesAt(pos int64, n int) ([]byte, bool, error) {
	if pos < 0 || pos+int64(n) > k.info.DataLength {
		return nil, false, fmt.Errorf("bytes [%d, %d) outside the received Data.db's %d uncompressed bytes", pos, pos+int64(n), k.info.DataLength)
	}
	L := int64(k.info.ChunkLength)
	if !k.chunkIn(int((pos + int64(max(n, 1)) - 1) / L)) {
		return nil, false, nil
	}
	if len(k.win) == 0 || pos < k.winStart || pos >= k.winStart+int64(len(k.win)) {
		c := pos / L
		var err error
		if k.win, err = k.r.ReadChunk(int(c), k.win[:0]); err != nil {
			k.win = k.win[:0]
			return nil, false, err
		}
		k.winStart = c * L
	}
	for pos+int64(n) > k.winStart+int64(len(k.win)) {
		// Keep the chunk holding pos and after; a window of whole chunks stays chunk-aligned.
		if drop := (pos - k.winStart) / L * L; drop > 0 {
			k.win = k.win[:copy(k.win, k.win[drop:])]
			k.winStart += drop
		}
		next := int((k.winStart + int64(len(k.win))) / L)
		had := len(k.win)
		var err error
		if k.win, err = k.r.ReadChunk(next, k.win); err == nil && len(k.win) == had {
			err = fmt.Errorf("chunk %d of the received Data.db holds no bytes", next)
		}
		if err != nil {
			k.win = k.win[:0]
			return nil, false, err
		}
	}
	off := pos - k.winStart
	return k.win[off : off+int64(n)], true, nil
}
