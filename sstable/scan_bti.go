package sstable

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/token"
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
// is read from the partition header there (one sequential pass, each chunk decoded once).
func (t *Table) scanBTI(fn func(p *Partition) error) error {
	pi, rows, release, err := t.readBTIIndex()
	if err != nil {
		return err
	}
	defer release()
	return t.walkBTI(pi, rows, func(p *Partition, _ bti.PartitionEntry) error { return fn(p) }, nil)
}

// walkBTI calls fn for every partition of the trie. A key that cannot be read from Data.db
// (a damaged chunk) ends the walk with the error, unless keyErr is given: it is then told,
// and unless it returns an error the walk goes on with that partition's Key nil.
func (t *Table) walkBTI(pi *bti.PartitionIndex, rows []byte, fn func(p *Partition, e bti.PartitionEntry) error, keyErr func(p *Partition, err error) error) error {
	ppath, rpath := t.Path(descriptor.Partitions), t.Path(descriptor.Rows)
	var p Partition
	var hdr [2]byte
	var keyBuf []byte
	var prevEnd int64 // end of the last Rows.db entry read
	err := pi.Walk(func(e bti.PartitionEntry) error {
		// A position outside the file it points into is the trie's damage, not that file's.
		if pos, direct := e.DataPosition(); direct && (pos < 0 || pos >= t.DataLength()) {
			return &encoding.OffsetError{File: ppath, Offset: e.PayloadPos, What: fmt.Sprintf("partition %d", p.Ordinal),
				Err: fmt.Errorf("%w: data position %d outside Data.db's %d uncompressed bytes", ErrCorrupt, pos, t.DataLength())}
		} else if !direct && e.Position >= int64(len(rows)) {
			if rowsTruncated(pi, rows) {
				return &encoding.OffsetError{File: rpath, Offset: int64(len(rows)), What: "end of file",
					Err: fmt.Errorf("%w: truncated: partition %d's row index entry is at %d", ErrCorrupt, p.Ordinal, e.Position)}
			}
			return &encoding.OffsetError{File: ppath, Offset: e.PayloadPos, What: fmt.Sprintf("partition %d", p.Ordinal),
				Err: fmt.Errorf("%w: row index entry position %d outside Rows.db (%d bytes)", ErrCorrupt, e.Position, len(rows))}
		}
		if pos, direct := e.DataPosition(); direct {
			p.Position, p.IndexPos = pos, -1
			_, err := t.Data.ReadAt(hdr[:], pos)
			if err == nil {
				keyBuf = append(keyBuf[:0], make([]byte, binary.BigEndian.Uint16(hdr[:]))...)
				_, err = t.Data.ReadAt(keyBuf, pos+2)
			}
			p.Key = keyBuf
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
		} else {
			re, err := bti.ReadRowIndexEntry(rows, e.Position)
			if err != nil && e.Position <= prevEnd {
				// Entries follow one another, each after its trie: no entry starts at or before
				// the end of the previous one. The pointer is wrong, not Rows.db.
				return &encoding.OffsetError{File: ppath, Offset: e.PayloadPos, What: fmt.Sprintf("partition %d", p.Ordinal),
					Err: fmt.Errorf("%w: row index entry position %d is not after the previous entry's end %d", ErrCorrupt, e.Position, prevEnd)}
			}
			if err != nil {
				return fileErr(rpath, fmt.Errorf("partition %d (from Partitions.db): %w", p.Ordinal, err))
			}
			prevEnd = re.End
			p.Key, p.Position, p.IndexPos = re.Key, re.DataPosition, e.Position
		}
		if p.Key != nil {
			p.Token, p.Hash, p.HasHash = token.TokenAndHash(t.Partitioner, p.Key)
		}
		if err := fn(&p, e); err != nil {
			return err
		}
		p.Ordinal++
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
