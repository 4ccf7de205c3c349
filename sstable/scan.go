package sstable

import (
	"fmt"
	"os"

	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// Partition is one entry of the partition index, delivered in partitioner order.
type Partition struct {
	Ordinal  int64
	Key      []byte      // valid only during the callback
	Token    token.Token // for ByteOrdered its Bytes alias Key
	Position int64       // uncompressed Data.db offset of the partition header
	IndexPos int64       // Index.db / Rows.db offset of the entry; -1 for a BTI partition without row index
	Promoted []byte      // BIG promoted index, verbatim (nil when none); valid only during the callback
	// Hash is the key's Murmur3 x64-128 hash when HasHash (Murmur3Partitioner): the token
	// was taken from it, and the bloom filter takes it as it is.
	Hash    [2]uint64
	HasHash bool
}

// indexBufferSize is the Index.db read buffer: big enough that reads are few, small enough to
// keep a scan's memory independent of the index size.
const indexBufferSize = 1 << 20

// indexBuffer is the read buffer for the index file f: indexBufferSize, or the file's size
// when smaller (a small sstable's scans, many per fetch of small sstables, would otherwise
// each clear a mostly unused MiB). The scanner grows it for an entry that does not fit.
func indexBuffer(f *os.File) int {
	if fi, err := f.Stat(); err == nil && fi.Size() < indexBufferSize {
		return int(max(fi.Size(), 4<<10))
	}
	return indexBufferSize
}

// ScanPartitions calls fn for every partition in index order. It reads only the index
// components (and, for BTI partitions without a row index, the key at their Data.db position);
// it never reads rows. The Partition passed to fn is reused between calls.
func (t *Table) ScanPartitions(fn func(p *Partition) error) error {
	if t.Desc.Version.Format == version.BTI {
		return t.scanBTI(fn)
	}
	return t.scanBig(fn, true)
}

// ScanKeys is ScanPartitions for a pass that needs the token of few partitions: on BIG
// sstables it leaves Token and Hash unset (hashing every key is a third of an index pass's
// CPU), and the caller takes the token of those it needs. BTI partitions come with theirs.
func (t *Table) ScanKeys(fn func(p *Partition) error) error {
	if t.Desc.Version.Format == version.BTI {
		return t.scanBTI(fn)
	}
	return t.scanBig(fn, false)
}

// ScanPartitionsIn is ScanPartitions of a BIG sstable over its Index.db entries in [start,
// end) only, ordinals counted from 0 at start: start must be where an entry begins (0, or a
// Summary.db sample's position), and an entry running past end is an error, so that passes
// over ranges that meet cover every entry once (a pass split to run in parallel).
func (t *Table) ScanPartitionsIn(start, end int64, fn func(p *Partition) error) error {
	if t.Desc.Version.Format == version.BTI {
		return fmt.Errorf("sstable: %s: a ranged index scan is for BIG sstables", t.Desc)
	}
	return t.scanBigIn(start, end, fn, true)
}

func (t *Table) scanBig(fn func(p *Partition) error, tokens bool) error {
	return t.scanBigIn(0, -1, fn, tokens)
}

// scanBigIn scans Index.db [start, end); end < 0: to the end of the file.
func (t *Table) scanBigIn(start, end int64, fn func(p *Partition) error, tokens bool) error {
	path := t.Path(descriptor.Index)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMissingComponent, err)
	}
	defer f.Close()
	var sc *bigindex.Scanner
	if end < 0 {
		sc = bigindex.NewScanner(f, indexBuffer(f))
	} else {
		sc = bigindex.NewScannerAt(f, start, end, indexBuffer(f))
	}
	var p Partition
	for sc.Next() {
		e := sc.Entry()
		p.Key = e.Key
		if tokens {
			p.Token, p.Hash, p.HasHash = token.TokenAndHash(t.Partitioner, e.Key)
		}
		p.Position = e.Position
		p.IndexPos = e.Offset
		p.Promoted = e.Promoted
		if err := fn(&p); err != nil {
			return err
		}
		p.Ordinal++
	}
	return fileErr(path, sc.Err())
}
