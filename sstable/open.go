package sstable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// Table is an opened sstable. Its metadata (TOC, Statistics, CompressionInfo or CRC.db) is
// parsed at Open; Data.db stays open for reading. A Table is safe for concurrent reads of its
// metadata; Data's ReadAt serializes internally. Close releases the file.
type Table struct {
	Desc       descriptor.Descriptor
	Components []descriptor.Component // as listed in TOC.txt

	Statistics  *stats.Statistics
	Partitioner token.Partitioner

	Compression    *compress.Info    // nil when Data.db is uncompressed
	CRC            *compress.CRCInfo // CRC.db of an uncompressed sstable, or nil
	DataFileLength int64             // Data.db bytes on disk

	Data *compress.Reader // uncompressed view of Data.db, every chunk checked on read
	data *os.File
}

// Version is the sstable's format version.
func (t *Table) Version() version.Version { return t.Desc.Version }

// Path is the file name of a component.
func (t *Table) Path(c descriptor.Component) string { return t.Desc.Path(c) }

// DataLength is the uncompressed length of Data.db.
func (t *Table) DataLength() int64 { return t.Data.DataLength() }

// Has reports whether TOC.txt lists c.
func (t *Table) Has(c descriptor.Component) bool {
	for _, x := range t.Components {
		if x == c {
			return true
		}
	}
	return false
}

// Open opens the sstable named by path: a Data.db (or any component) file, or a descriptor
// prefix such as "dir/nb-1-big".
func Open(path string) (*Table, error) {
	d, _, err := descriptor.Parse(path)
	if err != nil {
		return nil, err
	}
	t := &Table{Desc: d}
	if err := t.load(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func (t *Table) load() error {
	v := t.Desc.Version
	tocPath := t.Path(descriptor.TOC)
	raw, err := os.ReadFile(tocPath)
	switch {
	case err == nil:
		if t.Components, err = descriptor.ParseTOC(raw); err != nil {
			return fileErr(tocPath, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		// Cassandra tolerates a missing TOC (it rebuilds it); so do we, from what is on disk.
		for _, c := range descriptor.Components(v.Format, true) {
			if _, err := os.Stat(t.Path(c)); err == nil {
				t.Components = append(t.Components, c)
			}
		}
		if _, err := os.Stat(t.Path(descriptor.CRC)); err == nil {
			t.Components = append(t.Components, descriptor.CRC)
		}
	default:
		return err
	}

	statsPath := t.Path(descriptor.Statistics)
	raw, err = os.ReadFile(statsPath)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMissingComponent, err)
	}
	if t.Statistics, err = stats.Parse(raw, v); err != nil {
		return fileErr(statsPath, err)
	}
	if t.Statistics.Validation == nil {
		return fileErrf(statsPath, "%w: no VALIDATION component (partitioner unknown)", ErrCorrupt)
	}
	if t.Partitioner, err = token.ForName(t.Statistics.Validation.Partitioner); err != nil {
		return fileErr(statsPath, err)
	}
	if t.Statistics.Header == nil {
		return fileErrf(statsPath, "%w: no HEADER component", ErrCorrupt)
	}

	dataPath := t.Path(descriptor.Data)
	t.data, err = os.Open(dataPath)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMissingComponent, err)
	}
	st, err := t.data.Stat()
	if err != nil {
		return err
	}
	t.DataFileLength = st.Size()

	ciPath := t.Path(descriptor.CompressionInfo)
	raw, err = os.ReadFile(ciPath)
	switch {
	case err == nil:
		if t.Compression, err = compress.ParseInfo(raw, v); err != nil {
			return fileErr(ciPath, err)
		}
		if t.Data, err = compress.NewReader(t.data, t.DataFileLength, t.Compression); err != nil {
			return fileErr(ciPath, err)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	case t.Has(descriptor.CompressionInfo):
		// Read as uncompressed, a compressed Data.db is noise: never guess.
		return fileErrf(ciPath, "%w: listed in TOC.txt but absent", ErrMissingComponent)
	}
	crcPath := t.Path(descriptor.CRC)
	raw, err = os.ReadFile(crcPath)
	switch {
	case err == nil:
		if t.CRC, err = compress.ParseCRC(raw); err != nil {
			return fileErr(crcPath, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if t.Data, err = compress.NewUncompressedReader(t.data, t.DataFileLength, t.CRC); err != nil {
		return fileErr(crcPath, err)
	}
	return nil
}

// Close releases Data.db.
func (t *Table) Close() error {
	if t.data == nil {
		return nil
	}
	err := t.data.Close()
	t.data = nil
	return err
}

// DataFile is the open Data.db, for movers that copy its bytes (reflink, copy_file_range).
// It belongs to the Table: callers must not close it or move its file position.
func (t *Table) DataFile() *os.File { return t.data }

// PrefetchIndex asks the kernel to start reading, all at once, the components a whole-index
// pass over the sstable at path reads (Statistics.db and CompressionInfo.db or CRC.db, which
// Open parses; the partition index), and returns without waiting. An operation that reads
// them whole, such as a split, then finds a cold sstable's index streaming from the device
// while it parses what came first, instead of waiting for each read in turn. It is advice:
// missing components and failures are ignored.
func PrefetchIndex(path string) {
	d, _, err := descriptor.Parse(path)
	if err != nil {
		return
	}
	for _, c := range []descriptor.Component{descriptor.Statistics, descriptor.CompressionInfo, descriptor.CRC,
		descriptor.Index, descriptor.Summary, descriptor.Partitions, descriptor.Rows} {
		f, err := os.Open(d.Path(c))
		if err != nil {
			continue
		}
		if st, err := f.Stat(); err == nil {
			fsx.Prefetch(f, 0, st.Size())
		}
		f.Close()
	}
}
