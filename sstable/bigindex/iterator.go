package bigindex

// Source is what yields Index.db entries in file order: *Iterator over bytes in memory and
// *Scanner over a reader. Entry's result is valid until the next call to Next.
type Source interface {
	Next() bool
	Entry() *Entry
	Err() error
}

var (
	_ Source = (*Iterator)(nil)
	_ Source = (*Scanner)(nil)
)

// Iterator walks the entries of an Index.db held in memory. It allocates nothing per entry:
// Entry returns a pointer to one reused Entry whose Key and Promoted alias the input, so they
// stay valid for as long as the input does, but the Entry itself is overwritten by Next.
//
// An Iterator is not safe for concurrent use. The zero value is an empty iterator; Reset
// points it at bytes.
type Iterator struct {
	b    []byte
	off  int   // offset in b of the next entry
	base int64 // Index.db offset of b[0]
	e    Entry
	err  error
}

// NewIterator returns an iterator over b, the whole of an Index.db (or any run of entries
// starting at offset 0 of the file).
func NewIterator(b []byte) *Iterator {
	it := &Iterator{}
	it.Reset(b, 0)
	return it
}

// Reset restarts the iterator over b, whose first byte is at Index.db offset base; base lets
// a caller iterate a window of the file (for example from a Summary.db sample's position) and
// still see file offsets in Entry.Offset and in errors.
func (it *Iterator) Reset(b []byte, base int64) {
	*it = Iterator{b: b, base: base}
}

// Next decodes the next entry. It returns false at the end of the input or on a malformed
// entry; Err tells which.
func (it *Iterator) Next() bool {
	if it.err != nil || it.off >= len(it.b) {
		return false
	}
	rest := it.b[it.off:]
	n, f, at, need := decodeEntry(rest, &it.e)
	if f != faultNone {
		it.err = entryError(f, it.base+int64(it.off), at, need, len(rest))
		return false
	}
	it.e.Offset = it.base + int64(it.off)
	it.off += n
	return true
}

// Entry is the entry decoded by the last successful Next.
func (it *Iterator) Entry() *Entry { return &it.e }

// Err is the first error met, or nil at a clean end of input.
func (it *Iterator) Err() error { return it.err }

// Offset is the Index.db offset just past the last decoded entry: at a clean end, the file
// length.
func (it *Iterator) Offset() int64 { return it.base + int64(it.off) }
