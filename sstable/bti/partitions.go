package bti

import (
	"encoding/binary"
	"fmt"
	"math"
)

// footerSize is PartitionIndex.FOOTER_LENGTH.
const footerSize = 24

// Payload flag bits.
const (
	flagHasHashByte = 8 // PartitionIndex.FLAG_HAS_HASH_BYTE
	flagOpenMarker  = 8 // RowIndexReader.FLAG_OPEN_MARKER
)

// PartitionIndex is an opened Partitions.db. It aliases the slice it was opened from.
// Methods may be called concurrently only if fn callbacks do not share state; Walk reuses
// per-index buffers, so one PartitionIndex must not be walked by two goroutines at once.
type PartitionIndex struct {
	b           []byte
	FirstKeyPos int64 // where the trie ends and the first key begins
	KeyCount    int64
	Root        int64
	FirstKey    []byte // raw partition key, aliasing the input
	LastKey     []byte

	walker trieWalker
}

// PartitionEntry is one partition in the index: the trie path that identifies it (a prefix
// of its key's ByteComparable form), the low byte of the key's Murmur3 h1 (HasHash is false
// only for files written without hash bytes, which Cassandra 5 never does), and Position:
// >= 0 a Rows.db entry position, < 0 ^Position is the Data.db offset of the partition.
type PartitionEntry struct {
	Prefix   []byte
	HashByte byte
	HasHash  bool
	Position int64
	// PayloadPos is where the entry's payload (hash byte, position) sits in Partitions.db.
	PayloadPos int64
}

// DataPosition reports the Data.db offset for an entry without a row index.
func (e PartitionEntry) DataPosition() (int64, bool) {
	if e.Position < 0 {
		return ^e.Position, true
	}
	return 0, false
}

// OpenPartitionIndex parses the footer and key block of Partitions.db (PartitionIndex.load):
// the last 24 bytes hold firstKeyPos, keyCount and the root position, and the first and last
// keys follow the trie at firstKeyPos, ending where the footer starts.
func OpenPartitionIndex(b []byte) (*PartitionIndex, error) {
	if len(b) < footerSize {
		return nil, corruptAt(0, "Partitions.db of %d bytes has no footer", len(b))
	}
	f := int64(len(b) - footerSize)
	p := &PartitionIndex{
		b:           b,
		FirstKeyPos: int64(binary.BigEndian.Uint64(b[f:])),
		KeyCount:    int64(binary.BigEndian.Uint64(b[f+8:])),
		Root:        int64(binary.BigEndian.Uint64(b[f+16:])),
	}
	if p.FirstKeyPos < 1 || p.FirstKeyPos > f {
		return nil, corruptAt(f, "first key position %d outside the trie area (footer at %d)", p.FirstKeyPos, f)
	}
	if p.KeyCount < 0 {
		return nil, corruptAt(f+8, "negative key count %d", p.KeyCount)
	}
	if p.Root < 0 || p.Root >= p.FirstKeyPos {
		return nil, corruptAt(f+16, "root %d outside the trie area [0,%d)", p.Root, p.FirstKeyPos)
	}
	off := p.FirstKeyPos
	var err error
	if p.FirstKey, off, err = shortBytes(b[:f], off); err != nil {
		return nil, err
	}
	if p.LastKey, off, err = shortBytes(b[:f], off); err != nil {
		return nil, err
	}
	if off != f {
		return nil, corruptAt(off, "%d unexplained bytes between the keys and the footer", f-off)
	}
	return p, nil
}

// shortBytes reads a u16-length byte string at off.
func shortBytes(b []byte, off int64) ([]byte, int64, error) {
	if off+2 > int64(len(b)) {
		return nil, 0, corruptAt(off, "key length runs past the footer")
	}
	n := int64(binary.BigEndian.Uint16(b[off:]))
	if off+2+n > int64(len(b)) {
		return nil, 0, corruptAt(off, "key of %d bytes runs past the footer", n)
	}
	return b[off+2 : off+2+n], off + 2 + n, nil
}

// trie is the part of the file that nodes and payloads may occupy.
func (p *PartitionIndex) trie() []byte { return p.b[:p.FirstKeyPos] }

// partitionPayload decodes a partition payload (PartitionIndex.getIndexPos).
func partitionPayload(b []byte, nd *node) (hash byte, hasHash bool, pos int64, err error) {
	pp, size := nd.payloadPos, nd.flags
	if size >= flagHasHashByte {
		hasHash = true
		size -= flagHasHashByte - 1
		if pp >= int64(len(b)) {
			return 0, false, 0, corruptAt(pp, "partition payload runs past the trie")
		}
		hash = b[pp]
		pp++
	}
	if pp+int64(size) > int64(len(b)) {
		return 0, false, 0, corruptAt(pp, "partition payload of %d bytes runs past the trie", size)
	}
	pos = readSized(b[pp : pp+int64(size)])
	if pos == math.MinInt64 {
		return 0, false, 0, corruptAt(pp, "partition payload holds the NOT_FOUND position")
	}
	return hash, hasHash, pos, nil
}

// Walk calls fn for every partition in key order. e.Prefix is reused between calls. An
// error from fn stops the walk and is returned as is.
func (p *PartitionIndex) Walk(fn func(e PartitionEntry) error) error {
	b := p.trie()
	return p.walker.walk(b, p.Root, func(nd *node, prefix []byte) error {
		hash, hasHash, pos, err := partitionPayload(b, nd)
		if err != nil {
			return err
		}
		return fn(PartitionEntry{Prefix: prefix, HashByte: hash, HasHash: hasHash, Position: pos, PayloadPos: nd.payloadPos})
	})
}

// Lookup finds the entry whose trie path is a prefix of comparable (the ByteComparable form
// of a decorated key, see AppendDecoratedKey), as PartitionIndex.Reader.exactCandidate
// does without the hash check. The trie stores only distinguishing prefixes, so a hit is a
// candidate: the caller compares HashByte with the key's and the key stored at Position.
// Prefix aliases comparable.
func (p *PartitionIndex) Lookup(comparable []byte) (PartitionEntry, bool, error) {
	b := p.trie()
	nd, n, err := follow(b, p.Root, comparable)
	if err != nil {
		return PartitionEntry{}, false, err
	}
	if (n < len(comparable) && nd.n > 0) || nd.flags == 0 {
		return PartitionEntry{}, false, nil
	}
	hash, hasHash, pos, err := partitionPayload(b, &nd)
	if err != nil {
		return PartitionEntry{}, false, err
	}
	return PartitionEntry{Prefix: comparable[:n], HashByte: hash, HasHash: hasHash, Position: pos, PayloadPos: nd.payloadPos}, true, nil
}

// String summarizes the footer.
func (p *PartitionIndex) String() string {
	return fmt.Sprintf("PartitionIndex{keys %d, root %d, trie %d bytes, first %x, last %x}",
		p.KeyCount, p.Root, p.FirstKeyPos, p.FirstKey, p.LastKey)
}
