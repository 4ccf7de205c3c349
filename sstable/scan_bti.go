package sstable

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// readBTIIndex opens Partitions.db and loads Rows.db; release closes Partitions.db, which
// the index reads from until then. Partitions.db grows with the partition count, so the index
// reads its trie through a few cached blocks (memory flat in partitions). Rows.db is read
// whole: it holds row-index tries and entries only for partitions of more than one index
// block, so it grows with the data, not with the partition count.
func (t *Table) readBTIIndex() (pi *bti.PartitionIndex, rows []byte, release func(), err error) {
	ppath, rpath := t.Path(descriptor.Partitions), t.Path(descriptor.Rows)
	f, err := os.Open(ppath)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrMissingComponent, err)
	}
	rb, err := os.ReadFile(rpath)
	if err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrMissingComponent, err)
	}
	st, err := f.Stat()
	if err == nil {
		pi, err = bti.OpenPartitionIndexAt(f, st.Size())
	}
	if err != nil {
		f.Close()
		return nil, nil, nil, fileErr(ppath, err)
	}
	return pi, rb, func() { f.Close() }, nil
}

// scanBTI walks Partitions.db in order. A partition with a row index has its key and Data.db
// position in its Rows.db entry; one without has only a Data.db position in the trie, so its key
// is read from the partition header there, through one sequential pass over the chunks that
// hold keys (keyReader: each decoded once).
func (t *Table) scanBTI(fn func(p *Partition) error) error {
	pi, rows, release, err := t.readBTIIndex()
	if err != nil {
		return err
	}
	defer release()
	return t.walkBTI(pi, rows, func(p *Partition, _ bti.PartitionEntry) error { return fn(p) }, nil)
}

// IndexEntry is one partition of a BTI sstable as ScanIndex meets it: where it is and the trie
// path that tells it from its neighbours, its key read only when asked for.
type IndexEntry struct {
	Ordinal  int64
	Position int64 // uncompressed Data.db offset of the partition header
	IndexPos int64 // Rows.db offset of the partition's entry; -1 when it has no row index
	RowsEnd  int64 // the end of that Rows.db entry (IndexPos >= 0)
	// Prefix is the entry's trie path: a prefix of its key's ByteComparable form
	// (bti.AppendDecoratedKey) that tells it from the keys beside it. Valid only during the
	// callback.
	Prefix []byte
	// RowsKey is the key from the partition's Rows.db entry (IndexPos >= 0), else nil. Valid
	// only during the callback.
	RowsKey []byte

	keys *keyReader
}

// Key is the partition's key, valid only during the callback: its Rows.db entry's, or read
// from its header in Data.db through the walk's one sequential cursor, which decodes each
// chunk holding a key asked for once and passes over the chunks between without reading
// them. Asking for every key costs one pass over the chunks that hold them; asking for a
// few (a plan's edges) costs their chunks.
func (e *IndexEntry) Key() ([]byte, error) {
	if e.IndexPos >= 0 {
		return e.RowsKey, nil
	}
	k, err := e.keys.at(e.Position)
	if err != nil {
		return nil, fileErrf(e.keys.t.Path(descriptor.Data), "key of partition %d at position %d (from Partitions.db): %w", e.Ordinal, e.Position, err)
	}
	return k, nil
}

// Partition fills p with the entry as ScanPartitions delivers it: key (Key), token and hash.
func (e *IndexEntry) Partition(p *Partition) error {
	key, err := e.Key()
	if err != nil {
		return err
	}
	p.Ordinal, p.Key, p.Position, p.IndexPos, p.Promoted = e.Ordinal, key, e.Position, e.IndexPos, nil
	p.Token, p.Hash, p.HasHash = token.TokenAndHash(e.keys.t.Partitioner, key)
	return nil
}

// ScanIndex walks a BTI sstable's partition index in order, reading Partitions.db and Rows.db
// but not Data.db: a caller that needs the keys of some partitions only (a plan, whose ranges
// the trie paths place most partitions in or out of; a slice, whose runs hold some) asks for
// those (IndexEntry.Key). The IndexEntry is reused between calls.
func (t *Table) ScanIndex(fn func(e *IndexEntry) error) error {
	return t.ScanIndexFrom(nil, 0, fn)
}

// ScanIndexFrom is ScanIndex from the partition whose key's ByteComparable form is from
// (bti.AppendDecoratedKey; bti.PartitionIndex.WalkFrom), whose ordinal the caller gives: the
// partitions before it are not read, so a walk of some runs costs their partitions only.
func (t *Table) ScanIndexFrom(from []byte, ordinal int64, fn func(e *IndexEntry) error) error {
	if t.Desc.Version.Format != version.BTI {
		return fmt.Errorf("sstable: %s: a trie index walk is for BTI sstables", t.Desc)
	}
	pi, rows, release, err := t.readBTIIndex()
	if err != nil {
		return err
	}
	defer release()
	keys := &keyReader{t: t}
	e := IndexEntry{keys: keys}
	return t.walkBTIEntriesFrom(pi, rows, from, ordinal, func(be bti.PartitionEntry, ordinal, pos, indexPos int64, re *bti.RowIndexEntry) error {
		e.Ordinal, e.Position, e.IndexPos, e.Prefix = ordinal, pos, indexPos, be.Prefix
		e.RowsKey, e.RowsEnd = nil, 0
		if re != nil {
			e.RowsKey, e.RowsEnd = re.Key, re.End
		}
		return fn(&e)
	})
}

// KeyAt reads the key of the partition whose header is at Data.db position pos (a random
// read: the chunk holding it is decoded).
func (t *Table) KeyAt(pos int64) ([]byte, error) {
	key, err := t.readKeyAt(pos, nil)
	if err != nil {
		return nil, fileErrf(t.Path(descriptor.Data), "key at position %d: %w", pos, err)
	}
	return key, nil
}

// readKeyAt reads the key of the partition header at pos into buf's room.
func (t *Table) readKeyAt(pos int64, buf []byte) ([]byte, error) {
	var hdr [2]byte
	if _, err := t.Data.ReadAt(hdr[:], pos); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(hdr[:]))
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := t.Data.ReadAt(buf, pos+2); err != nil {
		return nil, err
	}
	return buf, nil
}

// keyReader reads partition keys from their headers in Data.db at (mostly) increasing
// positions through one dataCursor that seeks past the chunks between them; a read behind the
// cursor (a trie whose positions go back) is a random read.
type keyReader struct {
	t   *Table
	cur *dataCursor
	buf []byte
}

// at returns the key of the partition header at pos, valid until the next call.
func (k *keyReader) at(pos int64) ([]byte, error) {
	if k.cur == nil {
		k.cur = newDataCursor(k.t.Data, nil)
		k.cur.seek = true
	}
	if k.cur.behind(pos) {
		var err error
		k.buf, err = k.t.readKeyAt(pos, k.buf)
		return k.buf, err
	}
	hdr, err := k.cur.bytesAt(pos, 2)
	if err != nil {
		return nil, err
	}
	return k.cur.bytesAt(pos+2, int(binary.BigEndian.Uint16(hdr)))
}

// walkBTI calls fn for every partition of the trie. A key that cannot be read from Data.db
// (a damaged chunk) ends the walk with the error, unless keyErr is given: it is then told,
// and unless it returns an error the walk goes on with that partition's Key nil. Without
// keyErr keys are read through one sequential cursor (keyReader), with it one by one, as the
// verifier, which decodes every chunk in a pass of its own, wants them.
func (t *Table) walkBTI(pi *bti.PartitionIndex, rows []byte, fn func(p *Partition, e bti.PartitionEntry) error, keyErr func(p *Partition, err error) error) error {
	var p Partition
	var keyBuf []byte
	keys := &keyReader{t: t}
	return t.walkBTIEntries(pi, rows, func(e bti.PartitionEntry, ordinal, pos, indexPos int64, re *bti.RowIndexEntry) error {
		p.Ordinal, p.Position, p.IndexPos = ordinal, pos, indexPos
		if re != nil {
			p.Key = re.Key
		} else {
			var err error
			if keyErr == nil {
				p.Key, err = keys.at(pos)
			} else {
				keyBuf, err = t.readKeyAt(pos, keyBuf)
				p.Key = keyBuf
			}
			if err != nil {
				err = fileErrf(t.Path(descriptor.Data), "key of partition %d at position %d (from Partitions.db): %w", p.Ordinal, pos, err)
				if keyErr == nil {
					return err
				}
				if err := keyErr(&p, err); err != nil {
					return err
				}
				p.Key = nil
			}
		}
		if p.Key != nil {
			p.Token, p.Hash, p.HasHash = token.TokenAndHash(t.Partitioner, p.Key)
		}
		return fn(&p, e)
	})
}

// walkBTIEntries calls fn for every partition of the trie with its ordinal, its Data.db
// position and its Rows.db entry (nil and indexPos -1 without one), after checking that each
// position lies inside the file it points into.
func (t *Table) walkBTIEntries(pi *bti.PartitionIndex, rows []byte, fn func(e bti.PartitionEntry, ordinal, pos, indexPos int64, re *bti.RowIndexEntry) error) error {
	return t.walkBTIEntriesFrom(pi, rows, nil, 0, fn)
}

// walkBTIEntriesFrom is walkBTIEntries from the partition of form from (WalkFrom), of the
// given ordinal.
func (t *Table) walkBTIEntriesFrom(pi *bti.PartitionIndex, rows []byte, from []byte, ordinal int64, fn func(e bti.PartitionEntry, ordinal, pos, indexPos int64, re *bti.RowIndexEntry) error) error {
	ppath, rpath := t.Path(descriptor.Partitions), t.Path(descriptor.Rows)
	var prevEnd int64 // end of the last Rows.db entry read
	var re bti.RowIndexEntry
	dataLength := t.DataLength()
	err := pi.WalkFrom(from, func(e bti.PartitionEntry) error {
		// A position outside the file it points into is the trie's damage, not that file's.
		if pos, direct := e.DataPosition(); direct && (pos < 0 || pos >= dataLength) {
			return &encoding.OffsetError{File: ppath, Offset: e.PayloadPos, What: fmt.Sprintf("partition %d", ordinal),
				Err: fmt.Errorf("%w: data position %d outside Data.db's %d uncompressed bytes", ErrCorrupt, pos, dataLength)}
		} else if !direct && e.Position >= int64(len(rows)) {
			if rowsTruncated(pi, rows) {
				return &encoding.OffsetError{File: rpath, Offset: int64(len(rows)), What: "end of file",
					Err: fmt.Errorf("%w: truncated: partition %d's row index entry is at %d", ErrCorrupt, ordinal, e.Position)}
			}
			return &encoding.OffsetError{File: ppath, Offset: e.PayloadPos, What: fmt.Sprintf("partition %d", ordinal),
				Err: fmt.Errorf("%w: row index entry position %d outside Rows.db (%d bytes)", ErrCorrupt, e.Position, len(rows))}
		}
		var err error
		if pos, direct := e.DataPosition(); direct {
			err = fn(e, ordinal, pos, -1, nil)
		} else {
			re, err = bti.ReadRowIndexEntry(rows, e.Position)
			if err != nil && e.Position <= prevEnd {
				// Entries follow one another, each after its trie: no entry starts at or before
				// the end of the previous one. The pointer is wrong, not Rows.db.
				return &encoding.OffsetError{File: ppath, Offset: e.PayloadPos, What: fmt.Sprintf("partition %d", ordinal),
					Err: fmt.Errorf("%w: row index entry position %d is not after the previous entry's end %d", ErrCorrupt, e.Position, prevEnd)}
			}
			if err != nil {
				return fileErr(rpath, fmt.Errorf("partition %d (from Partitions.db): %w", ordinal, err))
			}
			prevEnd = re.End
			err = fn(e, ordinal, re.DataPosition, e.Position, &re)
		}
		if err != nil {
			return err
		}
		ordinal++
		return nil
	})
	if err != nil {
		return fileErr(ppath, err)
	}
	return nil
}

// rowsTruncated decides whom to blame for a Partitions.db entry pointing past the end of
// Rows.db: the file, when it lost its end (several entries point past it, or the entry that
// should end the file does not), or the pointer, when the file ends exactly where its last
// reachable entry does (Cassandra writes entries in order, each after its trie, so a whole
// Rows.db ends with an entry) or the entry is the only one with a row index.
func rowsTruncated(pi *bti.PartitionIndex, rows []byte) bool {
	var indexed int
	last := int64(-1)
	_ = pi.Walk(func(e bti.PartitionEntry) error {
		if e.Position >= 0 {
			indexed++
			if e.Position < int64(len(rows)) {
				last = max(last, e.Position)
			}
		}
		return nil
	})
	switch {
	case indexed <= 1:
		return false
	case last < 0:
		return true
	}
	re, err := bti.ReadRowIndexEntry(rows, last)
	return err != nil || re.End != int64(len(rows))
}
