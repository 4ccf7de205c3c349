package rows

import (
	"fmt"
	"math"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

type writerState uint8

const (
	awaitingPartition writerState = iota
	awaitingStatic
	awaitingRows
)

// Writer serializes partitions exactly as Cassandra's SortedTablePartitionWriter and
// UnfilteredSerializer do, appending to a caller's buffer. A partition is BeginPartition,
// AppendStatic (optional; an empty static row is written when the table has static columns
// and none was given), any number of AppendRow and AppendMarker in clustering order, then
// EndPartition.
//
// The Writer tracks sizes per partition, not buffer offsets, so the caller may flush and
// reuse its buffer between calls. Every Append validates its input before writing: on error
// it returns dst unchanged and the Writer's state is unchanged. Rows and cells are not
// retained. Appending allocates nothing beyond the growth of dst.
//
// A Writer is not safe for concurrent use. A zero Writer must be Reset before use.
type Writer struct {
	t *schema.Table
	v version.Version
	s deltas

	state     writerState
	pos       int64 // bytes written in the current partition
	prevStart int64 // start of the previous unfiltered, relative to the partition start
}

// NewWriter returns a Writer for rows of t in version v.
func NewWriter(t *schema.Table, v version.Version) *Writer {
	w := &Writer{}
	w.Reset(t, v)
	return w
}

// Reset points w at a table and version and abandons any partition in progress.
func (w *Writer) Reset(t *schema.Table, v version.Version) {
	w.t, w.v, w.s = t, v, newDeltas(t.Header)
	w.state, w.pos, w.prevStart = awaitingPartition, 0, 0
}

// PartitionSize is the number of bytes written for the current (or just ended) partition.
func (w *Writer) PartitionSize() int64 { return w.pos }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// BeginPartition appends the partition header: the key and the partition-level deletion.
func (w *Writer) BeginPartition(dst []byte, key []byte, deletion DeletionTime) ([]byte, error) {
	if w.state != awaitingPartition {
		return dst, invalidf("BeginPartition inside a partition")
	}
	if len(key) > math.MaxUint16 {
		return dst, invalidf("partition key of %d bytes exceeds 65535", len(key))
	}
	n0 := len(dst)
	dst = encoding.AppendShortBytes(dst, key)
	dst, err := AppendDeletionTime(dst, w.v, deletion)
	if err != nil {
		return dst[:n0], err
	}
	w.pos, w.prevStart = int64(len(dst)-n0), 0
	w.state = awaitingRows
	if w.t.HasStatic() {
		w.state = awaitingStatic
	}
	return dst, nil
}

// AppendStatic appends the static row: r.Static must be set, its Clustering empty and its
// columns index schema.Table.Static. It must directly follow BeginPartition.
func (w *Writer) AppendStatic(dst []byte, r *Row) ([]byte, error) {
	if w.state != awaitingStatic {
		return dst, invalidf("static row out of place (table has static columns: %v)", w.t.HasStatic())
	}
	if !r.Static || len(r.Clustering) != 0 {
		return dst, invalidf("static row with Static %v and %d clustering values", r.Static, len(r.Clustering))
	}
	dst, err := w.appendRow(dst, r, true)
	if err != nil {
		return dst, err
	}
	w.state = awaitingRows
	return dst, nil
}

var emptyStatic = Row{Static: true, Liveness: EmptyLiveness, Deletion: Live}

// beforeRows writes the empty static row Cassandra writes when none was given.
func (w *Writer) beforeRows(dst []byte) ([]byte, error) {
	switch w.state {
	case awaitingPartition:
		return dst, invalidf("no partition begun")
	case awaitingStatic:
		dst, err := w.appendRow(dst, &emptyStatic, true)
		if err != nil {
			return dst, err
		}
		w.state = awaitingRows
		return dst, nil
	}
	return dst, nil
}

// AppendRow appends a regular row.
func (w *Writer) AppendRow(dst []byte, r *Row) ([]byte, error) {
	if r.Static {
		return dst, invalidf("static row passed to AppendRow")
	}
	n0, state, pos := len(dst), w.state, w.pos
	dst, err := w.beforeRows(dst)
	if err == nil {
		dst, err = w.appendRow(dst, r, false)
	}
	if err != nil {
		w.state, w.pos = state, pos
		return dst[:n0], err
	}
	return dst, nil
}

// AppendMarker appends a range tombstone marker.
func (w *Writer) AppendMarker(dst []byte, m *Marker) ([]byte, error) {
	n0, state, pos := len(dst), w.state, w.pos
	dst, err := w.beforeRows(dst)
	if err == nil {
		dst, err = w.appendMarker(dst, m)
	}
	if err != nil {
		w.state, w.pos = state, pos
		return dst[:n0], err
	}
	return dst, nil
}

// EndPartition appends the end-of-partition flag.
func (w *Writer) EndPartition(dst []byte) ([]byte, error) {
	dst, err := w.beforeRows(dst)
	if err != nil {
		return dst, err
	}
	dst = append(dst, flagEndOfPartition)
	w.pos++
	w.state = awaitingPartition
	return dst, nil
}

// record advances the partition position past an unfiltered that started at start.
func (w *Writer) record(start int64, n int, static bool) {
	if !static {
		w.prevStart = start
	}
	w.pos += int64(n)
}

func (w *Writer) appendRow(dst []byte, r *Row, static bool) ([]byte, error) {
	cols := w.t.Columns(static)
	flags, ext, err := w.rowFlags(r, cols, static)
	if err != nil {
		return dst, err
	}
	if !static {
		if _, err = w.clusteringSize(r.Clustering, false); err != nil {
			return dst, err
		}
	}
	body, err := w.rowBodySize(r, cols, flags)
	if err != nil {
		return dst, err
	}
	var prev uint64
	if !static {
		prev = uint64(w.pos - w.prevStart)
	}
	size := uint64(body + encoding.UVintSize(prev))

	n0 := len(dst)
	dst = append(dst, flags)
	if flags&flagExtension != 0 {
		dst = append(dst, ext)
	}
	if !static {
		dst = w.appendClustering(dst, r.Clustering)
	}
	dst = encoding.AppendUVint(dst, size)
	dst = encoding.AppendUVint(dst, prev)
	bodyStart := len(dst)
	dst = w.appendRowBody(dst, r, cols, flags)
	if len(dst)-bodyStart != body {
		return dst[:n0], fmt.Errorf("rows: internal error: row body %d bytes, computed %d", len(dst)-bodyStart, body)
	}
	w.record(w.pos, len(dst)-n0, static)
	return dst, nil
}

// rowFlags computes the flags exactly as UnfilteredSerializer.serialize, and checks the
// row's columns against the header.
func (w *Writer) rowFlags(r *Row, cols []schema.ColumnInfo, static bool) (flags, ext byte, err error) {
	if static {
		ext |= extIsStatic
	}
	if !r.Liveness.IsEmpty() {
		flags |= flagHasTimestamp
	}
	if r.Liveness.TTL != NoTTL {
		if r.Liveness.IsEmpty() {
			return 0, 0, invalidf("row ttl %d without a timestamp", r.Liveness.TTL)
		}
		if r.Liveness.TTL < 0 {
			return 0, 0, invalidf("negative row ttl %d", r.Liveness.TTL)
		}
		flags |= flagHasTTL
	}
	if !r.Deletion.IsLive() {
		flags |= flagHasDeletion
		if r.Shadowable {
			ext |= extHasShadowableDeletion
		}
	}
	prev := -1
	for i := range r.Columns {
		cd := &r.Columns[i]
		if cd.Column <= prev || cd.Column >= len(cols) {
			return 0, 0, invalidf("column index %d after %d (header has %d)", cd.Column, prev, len(cols))
		}
		prev = cd.Column
		col := &cols[cd.Column]
		if !col.Complex {
			if len(cd.Cells) != 1 {
				return 0, 0, invalidf("simple column %q with %d cells", col.Name, len(cd.Cells))
			}
			if !cd.Deletion.IsLive() {
				return 0, 0, invalidf("simple column %q with a complex deletion", col.Name)
			}
		} else if !cd.Deletion.IsLive() {
			flags |= flagHasComplexDeletion
		}
	}
	if len(r.Columns) == len(cols) {
		flags |= flagHasAllColumns
	}
	if ext != 0 {
		flags |= flagExtension
	}
	return flags, ext, nil
}

// clusteringSize validates values and returns their encoded size (headers included).
func (w *Writer) clusteringSize(values [][]byte, prefix bool) (int, error) {
	widths := w.t.ClusteringWidths
	if prefix && len(values) > len(widths) || !prefix && len(values) != len(widths) {
		return 0, invalidf("%d clustering values for %d clustering columns", len(values), len(widths))
	}
	size := 0
	for i, v := range values {
		if i%32 == 0 {
			size += encoding.UVintSize(clusteringHeader(values, i))
		}
		if len(v) == 0 {
			continue
		}
		if widths[i] >= 0 {
			if len(v) != widths[i] {
				return 0, invalidf("clustering value %d has %d bytes, type is %d wide", i, len(v), widths[i])
			}
			size += len(v)
		} else {
			size += encoding.UVintSize(uint64(len(v))) + len(v)
		}
	}
	return size, nil
}

// clusteringHeader is ClusteringPrefix.Serializer.makeHeader for the 32 values from offset.
func clusteringHeader(values [][]byte, offset int) uint64 {
	var h uint64
	for i := offset; i < len(values) && i < offset+32; i++ {
		shift := uint(i-offset) * 2
		if values[i] == nil {
			h |= 2 << shift
		} else if len(values[i]) == 0 {
			h |= 1 << shift
		}
	}
	return h
}

func (w *Writer) appendClustering(dst []byte, values [][]byte) []byte {
	return appendClusteringValues(dst, w.t.ClusteringWidths, values)
}

func (w *Writer) deletionSize(d DeletionTime) int {
	return encoding.UVintSize(w.s.timestamp(d.MarkedForDeleteAt)) + encoding.UVintSize(w.s.ldt(d.LocalDeletionTime))
}

func (w *Writer) appendDeletion(dst []byte, d DeletionTime) []byte {
	dst = encoding.AppendUVint(dst, w.s.timestamp(d.MarkedForDeleteAt))
	return encoding.AppendUVint(dst, w.s.ldt(d.LocalDeletionTime))
}

func (w *Writer) rowBodySize(r *Row, cols []schema.ColumnInfo, flags byte) (int, error) {
	size := 0
	if flags&flagHasTimestamp != 0 {
		size += encoding.UVintSize(w.s.timestamp(r.Liveness.Timestamp))
	}
	if flags&flagHasTTL != 0 {
		size += encoding.UVintSize(w.s.ttl(r.Liveness.TTL))
		size += encoding.UVintSize(w.s.ldt(r.Liveness.LocalExpirationTime))
	}
	if flags&flagHasDeletion != 0 {
		size += w.deletionSize(r.Deletion)
	}
	if flags&flagHasAllColumns == 0 {
		size += subsetSize(r.Columns, len(cols))
	}
	for i := range r.Columns {
		cd := &r.Columns[i]
		col := &cols[cd.Column]
		if col.Complex {
			if flags&flagHasComplexDeletion != 0 {
				size += w.deletionSize(cd.Deletion)
			}
			size += encoding.UVintSize(uint64(len(cd.Cells)))
		}
		for j := range cd.Cells {
			n, err := w.cellSize(&cd.Cells[j], col, &r.Liveness)
			if err != nil {
				return 0, err
			}
			size += n
		}
	}
	return size, nil
}

func (w *Writer) appendRowBody(dst []byte, r *Row, cols []schema.ColumnInfo, flags byte) []byte {
	if flags&flagHasTimestamp != 0 {
		dst = encoding.AppendUVint(dst, w.s.timestamp(r.Liveness.Timestamp))
	}
	if flags&flagHasTTL != 0 {
		dst = encoding.AppendUVint(dst, w.s.ttl(r.Liveness.TTL))
		dst = encoding.AppendUVint(dst, w.s.ldt(r.Liveness.LocalExpirationTime))
	}
	if flags&flagHasDeletion != 0 {
		dst = w.appendDeletion(dst, r.Deletion)
	}
	if flags&flagHasAllColumns == 0 {
		dst = appendSubset(dst, r.Columns, len(cols))
	}
	for i := range r.Columns {
		cd := &r.Columns[i]
		col := &cols[cd.Column]
		if col.Complex {
			if flags&flagHasComplexDeletion != 0 {
				dst = w.appendDeletion(dst, cd.Deletion)
			}
			dst = encoding.AppendUVint(dst, uint64(len(cd.Cells)))
		}
		for j := range cd.Cells {
			dst = w.appendCell(dst, &cd.Cells[j], col, &r.Liveness)
		}
	}
	return dst
}

// subsetBitmap is Columns.Serializer.encodeBitmap: a 1 bit for every missing column.
func subsetBitmap(present []ColumnData, n int) uint64 {
	bitmap := uint64(1)<<uint(n) - 1
	for i := range present {
		bitmap &^= 1 << uint(present[i].Column)
	}
	return bitmap
}

// subsetSize is Columns.Serializer.serializedSubsetSize for a strict subset.
func subsetSize(present []ColumnData, n int) int {
	if n < 64 {
		return encoding.UVintSize(subsetBitmap(present, n))
	}
	k := len(present)
	size := encoding.UVintSize(uint64(n - k))
	if k < n/2 {
		for i := range present {
			size += encoding.UVintSize(uint64(present[i].Column))
		}
		return size
	}
	next := 0
	for i := range present {
		for ; next < present[i].Column; next++ {
			size += encoding.UVintSize(uint64(next))
		}
		next = present[i].Column + 1
	}
	for ; next < n; next++ {
		size += encoding.UVintSize(uint64(next))
	}
	return size
}

// appendSubset is Columns.Serializer.serializeSubset for a strict subset: a bitmap of the
// missing columns below 64 columns; otherwise the missing count, then the present indexes
// when fewer than half are present, else the missing ones.
func appendSubset(dst []byte, present []ColumnData, n int) []byte {
	if n < 64 {
		return encoding.AppendUVint(dst, subsetBitmap(present, n))
	}
	k := len(present)
	dst = encoding.AppendUVint(dst, uint64(n-k))
	if k < n/2 {
		for i := range present {
			dst = encoding.AppendUVint(dst, uint64(present[i].Column))
		}
		return dst
	}
	next := 0
	for i := range present {
		for ; next < present[i].Column; next++ {
			dst = encoding.AppendUVint(dst, uint64(next))
		}
		next = present[i].Column + 1
	}
	for ; next < n; next++ {
		dst = encoding.AppendUVint(dst, uint64(next))
	}
	return dst
}

// cellFlags is Cell.Serializer.serialize's flag computation.
func cellFlags(c *Cell, row *Liveness) (flags byte, expiring, useRowTS, useRowTTL bool) {
	expiring = !c.Tombstone && c.TTL != NoTTL
	useRowTS = !row.IsEmpty() && c.Timestamp == row.Timestamp
	useRowTTL = expiring && row.TTL != NoTTL && c.TTL == row.TTL && c.LocalDeletionTime == row.LocalExpirationTime
	if len(c.Value) == 0 {
		flags |= cellHasEmptyValue
	}
	if c.Tombstone {
		flags |= cellIsDeleted
	} else if expiring {
		flags |= cellIsExpiring
	}
	if useRowTS {
		flags |= cellUseRowTimestamp
	}
	if useRowTTL {
		flags |= cellUseRowTTL
	}
	return flags, expiring, useRowTS, useRowTTL
}

func (w *Writer) cellSize(c *Cell, col *schema.ColumnInfo, row *Liveness) (int, error) {
	if c.Tombstone && c.TTL != NoTTL {
		return 0, invalidf("column %q: tombstone cell with ttl %d", col.Name, c.TTL)
	}
	if c.TTL < 0 {
		return 0, invalidf("column %q: negative cell ttl %d", col.Name, c.TTL)
	}
	if !col.Complex && c.Path != nil {
		return 0, invalidf("column %q: cell path on a simple column", col.Name)
	}
	flags, expiring, useRowTS, useRowTTL := cellFlags(c, row)
	size := 1
	if !useRowTS {
		size += encoding.UVintSize(w.s.timestamp(c.Timestamp))
	}
	if (c.Tombstone || expiring) && !useRowTTL {
		size += encoding.UVintSize(w.s.ldt(c.LocalDeletionTime))
	}
	if expiring && !useRowTTL {
		size += encoding.UVintSize(w.s.ttl(c.TTL))
	}
	if col.Complex {
		size += encoding.UVintSize(uint64(len(c.Path))) + len(c.Path)
	}
	if flags&cellHasEmptyValue == 0 {
		switch {
		case col.Width < 0:
			size += encoding.UVintSize(uint64(len(c.Value))) + len(c.Value)
		case len(c.Value) == col.Width:
			size += col.Width
		default:
			return 0, invalidf("column %q: value of %d bytes, type is %d wide", col.Name, len(c.Value), col.Width)
		}
	}
	return size, nil
}

func (w *Writer) appendCell(dst []byte, c *Cell, col *schema.ColumnInfo, row *Liveness) []byte {
	flags, expiring, useRowTS, useRowTTL := cellFlags(c, row)
	dst = append(dst, flags)
	if !useRowTS {
		dst = encoding.AppendUVint(dst, w.s.timestamp(c.Timestamp))
	}
	if (c.Tombstone || expiring) && !useRowTTL {
		dst = encoding.AppendUVint(dst, w.s.ldt(c.LocalDeletionTime))
	}
	if expiring && !useRowTTL {
		dst = encoding.AppendUVint(dst, w.s.ttl(c.TTL))
	}
	if col.Complex {
		dst = encoding.AppendVintBytes(dst, c.Path)
	}
	if flags&cellHasEmptyValue == 0 {
		if col.Width < 0 {
			dst = encoding.AppendUVint(dst, uint64(len(c.Value)))
		}
		dst = append(dst, c.Value...)
	}
	return dst
}

func (w *Writer) appendMarker(dst []byte, m *Marker) ([]byte, error) {
	if !m.Kind.valid() {
		return dst, invalidf("marker kind %d", m.Kind)
	}
	if _, err := w.clusteringSize(m.Values, true); err != nil {
		return dst, err
	}
	prev := uint64(w.pos - w.prevStart)
	body := encoding.UVintSize(prev) + w.deletionSize(m.Deletion)
	if m.Kind.IsBoundary() {
		body += w.deletionSize(m.Start)
	}
	n0 := len(dst)
	dst = append(dst, flagIsMarker, byte(m.Kind))
	dst = encoding.AppendU16(dst, uint16(len(m.Values)))
	dst = w.appendClustering(dst, m.Values)
	dst = encoding.AppendUVint(dst, uint64(body))
	dst = encoding.AppendUVint(dst, prev)
	dst = w.appendDeletion(dst, m.Deletion)
	if m.Kind.IsBoundary() {
		dst = w.appendDeletion(dst, m.Start)
	}
	w.record(w.pos, len(dst)-n0, false)
	return dst, nil
}

// SimpleRow is a reusable row with one clustering value and one simple cell, for generators
// of single-clustering-column tables: Set fills it and returns it for AppendRow without
// allocating. The row carries the cell's timestamp as its primary key liveness, as an INSERT
// does.
type SimpleRow struct {
	clustering [1][]byte
	cells      [1]Cell
	columns    [1]ColumnData
	row        Row
}

// Set makes s the row (clustering) with the regular column at index column set to value at
// timestamp ts. The slices are referenced, not copied.
func (s *SimpleRow) Set(clustering []byte, column int, ts int64, value []byte) *Row {
	s.clustering[0] = clustering
	s.cells[0] = Cell{Timestamp: ts, LocalDeletionTime: NoDeletionTime, Value: value}
	s.columns[0] = ColumnData{Column: column, Deletion: Live, Cells: s.cells[:]}
	s.row = Row{
		Clustering: s.clustering[:],
		Liveness:   Liveness{Timestamp: ts, LocalExpirationTime: NoDeletionTime},
		Deletion:   Live,
		Columns:    s.columns[:],
	}
	return &s.row
}
