package bti

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// footerSize is PartitionIndex.FOOTER_LENGTH.
const footerSize = 24

// Payload flag bits.
const (
	flagHasHashByte = 8 // PartitionIndex.FLAG_HAS_HASH_BYTE
	flagOpenMarker  = 8 // RowIndexReader.FLAG_OPEN_MARKER
)

// PartitionIndex is an opened Partitions.db. Opened from a slice (OpenPartitionIndex) it
// aliases it; opened from a file (OpenPartitionIndexAt) it reads the trie through a few
// cached 64 KiB blocks, so its memory does not grow with the partition count. Its methods
// share per-index buffers and that cache: one PartitionIndex must not be used by two
// goroutines at once.
type PartitionIndex struct {
	trie        trieReader
	FirstKeyPos int64 // where the trie ends and the first key begins
	KeyCount    int64
	Root        int64
	FirstKey    []byte // raw partition key
	LastKey     []byte

	walker    trieWalker
	lookupBuf []byte
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

// OpenPartitionIndex parses the footer and key block of a Partitions.db held in b
// (PartitionIndex.load): the last 24 bytes hold firstKeyPos, keyCount and the root position,
// and the first and last keys follow the trie at firstKeyPos, ending where the footer starts.
// The index reads its trie from b.
func OpenPartitionIndex(b []byte) (*PartitionIndex, error) {
	p, err := openPartitionIndex(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	p.trie = memTrie(b[:p.FirstKeyPos])
	return p, nil
}

// OpenPartitionIndexAt is OpenPartitionIndex for a Partitions.db of size bytes read through
// r, which must stay readable while the index is used: the footer and keys are read now, trie
// nodes as walks and lookups reach them, through a cache of a few blocks.
func OpenPartitionIndexAt(r io.ReaderAt, size int64) (*PartitionIndex, error) {
	return openPartitionIndexPaged(r, size, cacheBlockSize, cacheBlocks)
}

func openPartitionIndexPaged(r io.ReaderAt, size int64, blockSize, blocks int) (*PartitionIndex, error) {
	p, err := openPartitionIndex(r, size)
	if err != nil {
		return nil, err
	}
	p.trie = trieReader{size: p.FirstKeyPos, cache: newBlockCache(r, size, blockSize, blocks)}
	return p, nil
}

// openPartitionIndex reads the footer and the two keys.
func openPartitionIndex(r io.ReaderAt, size int64) (*PartitionIndex, error) {
	if size < footerSize {
		return nil, corruptAt(0, "Partitions.db of %d bytes has no footer", size)
	}
	f := size - footerSize
	var foot [footerSize]byte
	if err := readFull(r, foot[:], f); err != nil {
		return nil, err
	}
	p := &PartitionIndex{
		FirstKeyPos: int64(binary.BigEndian.Uint64(foot[:])),
		KeyCount:    int64(binary.BigEndian.Uint64(foot[8:])),
		Root:        int64(binary.BigEndian.Uint64(foot[16:])),
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
	if p.FirstKey, off, err = shortBytes(r, off, f); err != nil {
		return nil, err
	}
	if p.LastKey, off, err = shortBytes(r, off, f); err != nil {
		return nil, err
	}
	if off != f {
		return nil, corruptAt(off, "%d unexplained bytes between the keys and the footer", f-off)
	}
	return p, nil
}

// shortBytes reads a u16-length byte string at off, which must end by end.
func shortBytes(r io.ReaderAt, off, end int64) ([]byte, int64, error) {
	if off+2 > end {
		return nil, 0, corruptAt(off, "key length runs past the footer")
	}
	var l [2]byte
	if err := readFull(r, l[:], off); err != nil {
		return nil, 0, err
	}
	n := int64(binary.BigEndian.Uint16(l[:]))
	if off+2+n > end {
		return nil, 0, corruptAt(off, "key of %d bytes runs past the footer", n)
	}
	key := make([]byte, n)
	if err := readFull(r, key, off+2); err != nil {
		return nil, 0, err
	}
	return key, off + 2 + n, nil
}

// partitionPayload decodes a partition payload (PartitionIndex.getIndexPos) from the node's
// bytes, which run to the end of the trie area or maxPayloadSize past the node.
func partitionPayload(nd *node) (hash byte, hasHash bool, pos int64, err error) {
	b, pp, size := nd.b, nd.payload, nd.flags
	if size >= flagHasHashByte {
		hasHash = true
		size -= flagHasHashByte - 1
		if pp >= len(b) {
			return 0, false, 0, corruptAt(nd.pos+int64(pp), "partition payload runs past the trie")
		}
		hash = b[pp]
		pp++
	}
	if pp+size > len(b) {
		return 0, false, 0, corruptAt(nd.pos+int64(pp), "partition payload of %d bytes runs past the trie", size)
	}
	pos = readSized(b[pp : pp+size])
	if pos == math.MinInt64 {
		return 0, false, 0, corruptAt(nd.pos+int64(pp), "partition payload holds the NOT_FOUND position")
	}
	return hash, hasHash, pos, nil
}

// Walk calls fn for every partition in key order. e.Prefix is reused between calls. An
// error from fn stops the walk and is returned as is.
func (p *PartitionIndex) Walk(fn func(e PartitionEntry) error) error {
	return p.WalkFrom(nil, fn)
}

// WalkFrom is Walk from the partition Lookup(comparable) finds, when there is one, else from
// the first partition whose trie path sorts above comparable (a key's ByteComparable form):
// the partitions before it are not read. The walk reads the nodes on comparable's path and
// then what follows, so walking a key range costs the partitions in it, not those before.
func (p *PartitionIndex) WalkFrom(comparable []byte, fn func(e PartitionEntry) error) error {
	return p.walker.walkFrom(&p.trie, p.Root, comparable, func(nd *node, prefix []byte) error {
		hash, hasHash, pos, err := partitionPayload(nd)
		if err != nil {
			return err
		}
		return fn(PartitionEntry{Prefix: prefix, HashByte: hash, HasHash: hasHash, Position: pos, PayloadPos: nd.payloadPos()})
	})
}

// Lookup finds the entry whose trie path is a prefix of comparable (the ByteComparable form
// of a decorated key, see AppendDecoratedKey), as PartitionIndex.Reader.exactCandidate
// does without the hash check. The trie stores only distinguishing prefixes, so a hit is a
// candidate: the caller compares HashByte with the key's and the key stored at Position.
// Prefix aliases comparable.
func (p *PartitionIndex) Lookup(comparable []byte) (PartitionEntry, bool, error) {
	nd, n, err := follow(&p.trie, p.Root, comparable, &p.lookupBuf)
	if err != nil {
		return PartitionEntry{}, false, err
	}
	if (n < len(comparable) && nd.n > 0) || nd.flags == 0 {
		return PartitionEntry{}, false, nil
	}
	hash, hasHash, pos, err := partitionPayload(&nd)
	if err != nil {
		return PartitionEntry{}, false, err
	}
	return PartitionEntry{Prefix: comparable[:n], HashByte: hash, HasHash: hasHash, Position: pos, PayloadPos: nd.payloadPos()}, true, nil
}

// String summarizes the footer.
func (p *PartitionIndex) String() string {
	return fmt.Sprintf("PartitionIndex{keys %d, root %d, trie %d bytes, first %x, last %x}",
		p.KeyCount, p.Root, p.FirstKeyPos, p.FirstKey, p.LastKey)
}
