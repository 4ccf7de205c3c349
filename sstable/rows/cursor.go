package rows

import (
	"fmt"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// dec is the cursor's bounds-checked reader. The first failure is sticky and allocated only
// then, so the steady state allocates nothing; what strings are constants.
type dec struct {
	b   []byte
	off int
	err *CorruptError
	col []byte // column being read, for error context
}

func (d *dec) fail(at int, what string, err error) {
	if d.err == nil {
		d.err = &CorruptError{Offset: at, What: what, Column: d.col, Err: err}
	}
}

func (d *dec) u8(what string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail(d.off, what, ErrTruncated)
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *dec) u16(what string) int {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 2 {
		d.fail(d.off, what, ErrTruncated)
		return 0
	}
	v := int(d.b[d.off])<<8 | int(d.b[d.off+1])
	d.off += 2
	return v
}

func (d *dec) uvint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := encoding.UVint(d.b[d.off:])
	if n == 0 {
		d.fail(d.off, what, ErrTruncated)
		return 0
	}
	d.off += n
	return v
}

// uvint32 reads a vint that Cassandra reads with readUnsignedVInt32 (a checked int cast).
func (d *dec) uvint32(what string) uint64 {
	at := d.off
	v := d.uvint(what)
	if d.err == nil && !fits32(v) {
		d.fail(at, what, fmt.Errorf("%w: %d does not fit a 32-bit int", ErrMalformed, v))
	}
	return v
}

func (d *dec) bytes(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail(d.off, what, ErrTruncated)
		return nil
	}
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

// vbytes reads an unsigned-vint length (a checked int, as AbstractType.read) and the bytes.
func (d *dec) vbytes(what string) []byte {
	at := d.off
	n := d.uvint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail(at, what, ErrTruncated)
		return nil
	}
	return d.bytes(int(n), what)
}

// value reads a value of the given fixed width, or vint-length bytes when width < 0.
func (d *dec) value(width int, what string) []byte {
	if width >= 0 {
		return d.bytes(width, what)
	}
	return d.vbytes(what)
}

// Cursor reads one partition of Data.db: the partition header, the static row when the table
// has static columns, then each row or range tombstone marker up to the end-of-partition flag.
//
// The zero Cursor is ready for Reset and may be reused across partitions: its buffers are
// kept, so decoding allocates nothing once they have grown. Every byte slice it returns
// aliases the partition slice, and every *Row or *Marker it returns is overwritten by the next
// Next or Reset; callers that retain them must copy.
//
// A Cursor never panics on corrupt input: Reset and Err return a *CorruptError carrying the
// offset within the partition and what was being read.
type Cursor struct {
	t *schema.Table
	s deltas
	d dec

	key      []byte
	deletion DeletionTime

	static    Row
	hasStatic bool
	staticBuf rowBuf

	row    Row
	rowBuf rowBuf
	marker Marker

	kind       Kind
	start, end int // span of the current unfiltered
	prevStart  int // start of the previous unfiltered; 0 (the partition start) before any
	count      int
	headerSize int
	done       bool
	trailing   bool  // bytes may follow the end-of-partition flag (ResetTrailing)
	present    []int // column indexes present in the row being decoded
}

// rowBuf holds the reusable storage behind a Row.
type rowBuf struct {
	clustering [][]byte
	columns    []ColumnData
	cells      []Cell
	spans      [][2]int // cells[lo:hi] of each column, fixed up once the row is complete
}

// Reset positions c at the start of partition, which must hold exactly one partition (from
// its index position to the next partition's), and reads its header and static row.
func (c *Cursor) Reset(t *schema.Table, v version.Version, partition []byte) error {
	c.trailing = false
	return c.reset(t, v, partition)
}

// ResetTrailing is Reset for a slice that may run on past the partition's end: from its index
// position to the next partition's in a multi-run sstable, where a dead region (bytes of the
// parent no index entry addresses) can follow a partition. End then says where it ended.
func (c *Cursor) ResetTrailing(t *schema.Table, v version.Version, partition []byte) error {
	c.trailing = true
	return c.reset(t, v, partition)
}

// End is the offset just past the end-of-partition flag, once Done.
func (c *Cursor) End() int { return c.d.off }

func (c *Cursor) reset(t *schema.Table, v version.Version, partition []byte) error {
	c.t, c.s = t, newDeltas(t.Header)
	c.d = dec{b: partition}
	c.kind, c.start, c.end, c.prevStart, c.count, c.headerSize, c.done = 0, 0, 0, 0, 0, 0, false
	c.hasStatic, c.deletion = false, Live

	c.key = c.d.bytes(c.d.u16("partition key length"), "partition key")
	if c.d.err == nil {
		dt, n, err := ReadDeletionTime(c.d.b[c.d.off:], v)
		if err != nil {
			c.d.fail(c.d.off, "partition deletion", err)
		} else {
			c.deletion = dt
			c.d.off += n
		}
	}
	if c.d.err == nil && t.HasStatic() {
		// Cassandra writes a static row, possibly empty, in every partition of a table with
		// static columns, and reads it unconditionally (deserializeStaticRow).
		at := c.d.off
		flags := c.d.u8("static row flags")
		if c.d.err == nil && (flags&(flagEndOfPartition|flagIsMarker) != 0 || flags&flagExtension == 0) {
			c.d.fail(at, "static row flags", fmt.Errorf("%w: %#02x is not a static row", ErrMalformed, flags))
		}
		ext := c.d.u8("static row extended flags")
		if c.d.err == nil && ext&extIsStatic == 0 {
			c.d.fail(at+1, "static row extended flags", fmt.Errorf("%w: %#02x lacks IS_STATIC", ErrMalformed, ext))
		}
		c.readRow(&c.static, &c.staticBuf, flags, ext, at, true)
		c.hasStatic = c.d.err == nil
	}
	if c.d.err != nil {
		return c.d.err
	}
	c.headerSize = c.d.off
	return nil
}

// Key is the partition key.
func (c *Cursor) Key() []byte { return c.key }

// Deletion is the partition-level deletion (Live when none).
func (c *Cursor) Deletion() DeletionTime { return c.deletion }

// Static is the static row, or nil when the table has no static columns. It stays valid
// until the next Reset.
func (c *Cursor) Static() *Row {
	if !c.hasStatic {
		return nil
	}
	return &c.static
}

// HeaderSize is the size of the partition header plus the static row: the offset of the
// first unfiltered.
func (c *Cursor) HeaderSize() int { return c.headerSize }

// Next advances to the next row or marker. It returns false at the end of the partition or
// on an error; Err tells them apart.
func (c *Cursor) Next() bool {
	if c.done || c.d.err != nil {
		return false
	}
	start := c.d.off
	flags := c.d.u8("unfiltered flags")
	if c.d.err != nil {
		return false
	}
	if flags&flagEndOfPartition != 0 {
		c.done = true
		if c.d.off != len(c.d.b) && !c.trailing {
			c.d.fail(c.d.off, "end of partition", fmt.Errorf("%w: %d bytes follow the end-of-partition flag", ErrMalformed, len(c.d.b)-c.d.off))
			return false
		}
		c.kind = 0
		return false
	}
	var ext byte
	if flags&flagExtension != 0 {
		ext = c.d.u8("extended flags")
	}
	if flags&flagIsMarker != 0 {
		c.readMarker(start)
		c.kind = KindMarker
	} else {
		if c.d.err == nil && ext&extIsStatic != 0 {
			c.d.fail(start, "unfiltered flags", fmt.Errorf("%w: static row after the partition header", ErrMalformed))
			return false
		}
		c.readRow(&c.row, &c.rowBuf, flags, ext, start, false)
		c.kind = KindRow
	}
	if c.d.err != nil {
		return false
	}
	c.start, c.end = start, c.d.off
	c.prevStart = start
	c.count++
	return true
}

// Kind is the kind of the current unfiltered.
func (c *Cursor) Kind() Kind { return c.kind }

// Row is the current row (valid when Kind is KindRow) until the next Next or Reset.
func (c *Cursor) Row() *Row { return &c.row }

// Marker is the current range tombstone marker (valid when Kind is KindMarker).
func (c *Cursor) Marker() *Marker { return &c.marker }

// Span is the current unfiltered's [start, end) within the partition slice.
func (c *Cursor) Span() (start, end int) { return c.start, c.end }

// Count is the number of unfiltereds read so far (the static row not included).
func (c *Cursor) Count() int { return c.count }

// Done reports that the end-of-partition flag was read and ended the slice.
func (c *Cursor) Done() bool { return c.done && c.d.err == nil }

// Err is the first decoding failure, or nil.
func (c *Cursor) Err() error {
	if c.d.err != nil {
		return c.d.err
	}
	return nil
}

// readClustering reads n values with their 2-bit-per-value headers, 32 values per header
// (ClusteringPrefix.Serializer.deserializeValuesWithoutSize).
func (c *Cursor) readClustering(dst [][]byte, n int) [][]byte {
	dst = dst[:0]
	widths := c.t.ClusteringWidths
	var header uint64
	for i := 0; i < n && c.d.err == nil; i++ {
		if i%32 == 0 {
			header = c.d.uvint("clustering header")
		}
		shift := uint(i%32) * 2
		switch {
		case header&(2<<shift) != 0:
			dst = append(dst, nil)
		case header&(1<<shift) != 0:
			dst = append(dst, c.d.b[c.d.off:c.d.off:c.d.off])
		default:
			dst = append(dst, c.d.value(widths[i], "clustering value"))
		}
	}
	return dst
}

// sizes reads the row or marker size and the previous unfiltered size, checks the latter,
// and returns where the sized body starts and its size.
func (c *Cursor) sizes(start int, static bool) (bodyStart int, size uint64) {
	at := c.d.off
	size = c.d.uvint("unfiltered size")
	bodyStart = c.d.off
	if c.d.err == nil && size > uint64(len(c.d.b)-bodyStart) {
		c.d.fail(at, "unfiltered size", fmt.Errorf("%w: %d bytes, %d left", ErrTruncated, size, len(c.d.b)-bodyStart))
		return
	}
	pat := c.d.off
	prev := c.d.uvint("previous unfiltered size")
	// SortedTablePartitionWriter: the static row carries 0; every other unfiltered carries
	// its distance from the previous one's start, the first one from the partition start.
	want := uint64(start - c.prevStart)
	if static {
		want = 0
	}
	if c.d.err == nil && prev != want {
		c.d.fail(pat, "previous unfiltered size", fmt.Errorf("%w: %d, want %d", ErrSizeMismatch, prev, want))
	}
	return bodyStart, size
}

func (c *Cursor) checkSize(bodyStart int, size uint64, what string) {
	if c.d.err == nil && uint64(c.d.off-bodyStart) != size {
		c.d.fail(bodyStart, what, fmt.Errorf("%w: size says %d bytes, body has %d", ErrSizeMismatch, size, c.d.off-bodyStart))
	}
}

func (c *Cursor) readMarker(start int) {
	m := &c.marker
	at := c.d.off
	kind := BoundKind(c.d.u8("marker bound kind"))
	if c.d.err == nil && !kind.valid() {
		c.d.fail(at, "marker bound kind", fmt.Errorf("%w: kind %d", ErrMalformed, kind))
	}
	at = c.d.off
	n := c.d.u16("marker bound size")
	if c.d.err == nil && n > len(c.t.Clustering) {
		c.d.fail(at, "marker bound size", fmt.Errorf("%w: %d values, table has %d clustering columns", ErrMalformed, n, len(c.t.Clustering)))
	}
	m.Kind = kind
	m.Values = c.readClustering(m.Values, n)
	bodyStart, size := c.sizes(start, false)
	m.Deletion = c.deletionTime("marker deletion")
	m.Start = Live
	if kind.IsBoundary() {
		m.Start = c.deletionTime("marker start deletion")
	}
	c.checkSize(bodyStart, size, "marker size")
}

// deletionTime reads a delta-encoded DeletionTime inside a row or marker.
func (c *Cursor) deletionTime(what string) DeletionTime {
	ts := c.s.fromTimestamp(c.d.uvint(what))
	ldt := c.s.fromLDT(c.d.uvint32(what))
	return DeletionTime{MarkedForDeleteAt: ts, LocalDeletionTime: ldt}
}

func (c *Cursor) readRow(r *Row, buf *rowBuf, flags, ext byte, start int, static bool) {
	c.d.col = nil
	r.Static = static
	if static {
		buf.clustering = buf.clustering[:0]
	} else {
		buf.clustering = c.readClustering(buf.clustering, len(c.t.Clustering))
	}
	r.Clustering = buf.clustering
	bodyStart, size := c.sizes(start, static)

	r.Liveness = EmptyLiveness
	if flags&flagHasTimestamp != 0 {
		r.Liveness.Timestamp = c.s.fromTimestamp(c.d.uvint("row timestamp"))
		// Like deserializeRowBody, HAS_TTL counts only with HAS_TIMESTAMP.
		if flags&flagHasTTL != 0 {
			r.Liveness.TTL = c.s.fromTTL(c.d.uvint32("row ttl"))
			r.Liveness.LocalExpirationTime = c.s.fromLDT(c.d.uvint32("row local deletion time"))
		}
	}
	r.Deletion, r.Shadowable = Live, false
	if flags&flagHasDeletion != 0 {
		r.Deletion = c.deletionTime("row deletion")
		r.Shadowable = ext&extHasShadowableDeletion != 0
	}

	cols := c.t.Columns(static)
	if flags&flagHasAllColumns != 0 {
		c.present = c.present[:0]
		for i := range cols {
			c.present = append(c.present, i)
		}
	} else {
		c.readSubset(len(cols))
	}

	buf.columns = buf.columns[:0]
	buf.cells = buf.cells[:0]
	buf.spans = buf.spans[:0]
	complexDeletion := flags&flagHasComplexDeletion != 0
	for _, idx := range c.present {
		if c.d.err != nil {
			break
		}
		col := &cols[idx]
		c.d.col = col.Name
		cd := ColumnData{Column: idx, Deletion: Live}
		lo := len(buf.cells)
		if !col.Complex {
			buf.cells = c.readCell(buf.cells, col, &r.Liveness)
		} else {
			if complexDeletion {
				cd.Deletion = c.deletionTime("complex deletion")
			}
			at := c.d.off
			n := c.d.uvint("complex cell count")
			// Each cell takes at least its flags byte.
			if c.d.err == nil && n > uint64(len(c.d.b)-c.d.off) {
				c.d.fail(at, "complex cell count", fmt.Errorf("%w: %d cells", ErrTruncated, n))
			}
			for i := uint64(0); i < n && c.d.err == nil; i++ {
				buf.cells = c.readCell(buf.cells, col, &r.Liveness)
			}
		}
		buf.columns = append(buf.columns, cd)
		buf.spans = append(buf.spans, [2]int{lo, len(buf.cells)})
	}
	c.d.col = nil
	// The cells slice may have moved while growing, so columns point into it only now.
	for i := range buf.columns {
		sp := buf.spans[i]
		buf.columns[i].Cells = buf.cells[sp[0]:sp[1]:sp[1]]
	}
	r.Columns = buf.columns
	c.checkSize(bodyStart, size, "row size")
}

// readSubset decodes Columns.Serializer.serializeSubset into c.present.
func (c *Cursor) readSubset(n int) {
	c.present = c.present[:0]
	at := c.d.off
	enc := c.d.uvint("columns subset")
	if c.d.err != nil {
		return
	}
	switch {
	case enc == 0:
		for i := 0; i < n; i++ {
			c.present = append(c.present, i)
		}
	case n < 64:
		// A bitmap of the missing columns.
		if enc>>uint(n) != 0 {
			c.d.fail(at, "columns subset", fmt.Errorf("%w: bitmap %#x has bits beyond %d columns", ErrMalformed, enc, n))
			return
		}
		for i := 0; i < n; i++ {
			if enc&(1<<uint(i)) == 0 {
				c.present = append(c.present, i)
			}
		}
	default:
		// Large supersets: the missing count, then either the present or the missing indexes.
		if enc > uint64(n) {
			c.d.fail(at, "columns subset", fmt.Errorf("%w: %d missing of %d columns", ErrMalformed, enc, n))
			return
		}
		missing := int(enc)
		present := n - missing
		prev := -1
		if present < n/2 {
			for i := 0; i < present && c.d.err == nil; i++ {
				c.present = append(c.present, c.subsetIndex(&prev, n))
			}
			return
		}
		next := 0
		for i := 0; i < missing && c.d.err == nil; i++ {
			m := c.subsetIndex(&prev, n)
			for ; next < m; next++ {
				c.present = append(c.present, next)
			}
			next = m + 1
		}
		for ; next < n && c.d.err == nil; next++ {
			c.present = append(c.present, next)
		}
	}
}

// subsetIndex reads one column index of a large subset; indexes must strictly increase.
func (c *Cursor) subsetIndex(prev *int, n int) int {
	at := c.d.off
	v := c.d.uvint("columns subset index")
	if c.d.err != nil {
		return 0
	}
	if v >= uint64(n) || int(v) <= *prev {
		c.d.fail(at, "columns subset index", fmt.Errorf("%w: index %d after %d of %d columns", ErrMalformed, v, *prev, n))
		return 0
	}
	*prev = int(v)
	return int(v)
}

// readCell decodes one cell (Cell.Serializer.deserialize) and appends it.
func (c *Cursor) readCell(cells []Cell, col *schema.ColumnInfo, row *Liveness) []Cell {
	flags := c.d.u8("cell flags")
	var cell Cell
	deleted := flags&cellIsDeleted != 0
	expiring := flags&cellIsExpiring != 0
	useRowTTL := flags&cellUseRowTTL != 0
	if flags&cellUseRowTimestamp != 0 {
		cell.Timestamp = row.Timestamp
	} else {
		cell.Timestamp = c.s.fromTimestamp(c.d.uvint("cell timestamp"))
	}
	switch {
	case useRowTTL:
		cell.LocalDeletionTime = row.LocalExpirationTime
	case deleted || expiring:
		cell.LocalDeletionTime = c.s.fromLDT(c.d.uvint32("cell local deletion time"))
	default:
		cell.LocalDeletionTime = NoDeletionTime
	}
	switch {
	case useRowTTL:
		cell.TTL = row.TTL
	case expiring:
		at := c.d.off
		cell.TTL = c.s.fromTTL(c.d.uvint32("cell ttl"))
		if c.d.err == nil && cell.TTL < 0 {
			c.d.fail(at, "cell ttl", fmt.Errorf("%w: negative ttl %d", ErrMalformed, cell.TTL))
		}
	}
	cell.Tombstone = deleted
	if col.Complex {
		cell.Path = c.d.vbytes("cell path")
	}
	if flags&cellHasEmptyValue == 0 {
		cell.Value = c.d.value(col.Width, "cell value")
	}
	return append(cells, cell)
}
