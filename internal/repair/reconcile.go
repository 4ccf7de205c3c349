package repair

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/version"
)

// Source is one sstable's serialized copy of a partition: the bytes from its index position to
// the next partition's (in a multi-run sstable a dead region may follow the partition's end),
// with the schema and version to decode them.
type Source struct {
	Table   *schema.Table
	Version version.Version
	Data    []byte
}

// Hasher hashes the reconciled content of partitions held by several sstables. Its buffers
// are reused between calls, so hashing a partition allocates little once they have grown. A
// Hasher is not safe for concurrent use.
//
// The canonical form hashed is: the key; the partition deletion; the static row; then in
// clustering order each row and each change of the range tombstone deletion in force. A row is
// its clustering, its row deletion unless a wider deletion supersedes it, its liveness unless
// deleted, and its columns by name, each with its complex deletion (unless superseded) and its
// surviving cells by path: timestamp, TTL, local deletion time, tombstone flag and value. Rows
// left with nothing are omitted. Cells reconcile as Cassandra's Cells.reconcile (newer
// timestamp; at a tie a tombstone or expiring cell, then the later local deletion time, then
// the greater value); a deletion removes everything at or below its timestamp.
type Hasher struct {
	curs   []rows.Cursor
	heads  []head
	open   []rows.DeletionTime
	cmp    comparator
	cmpFor []string
	d      *xxhash.Digest
	buf    []byte
	group  []int
	cols   []colRef
	cells  []*rows.Cell
	rows   []srcRow
}

// head is a source's current unfiltered.
type head struct {
	kind rows.Kind // 0 once the source is exhausted
	pos  position
}

type srcRow struct {
	t *schema.Table
	r *rows.Row
}

type colRef struct {
	name    []byte
	counter bool
	cd      *rows.ColumnData
}

// flushAt bounds the staging buffer before it is fed to the digest.
const flushAt = 64 << 10

// NewHasher returns a Hasher.
func NewHasher() *Hasher { return &Hasher{d: xxhash.New()} }

// Hash returns the hash of the reconciled partition the sources hold. Every source must hold
// the same key and the sstables the same clustering types.
func (h *Hasher) Hash(srcs []Source) (uint64, error) {
	if len(srcs) == 0 {
		return 0, errors.New("repair: no sources")
	}
	if err := h.comparatorFor(srcs); err != nil {
		return 0, err
	}
	if len(h.curs) < len(srcs) {
		h.curs = make([]rows.Cursor, len(srcs))
		h.heads = make([]head, len(srcs))
		h.open = make([]rows.DeletionTime, len(srcs))
	}
	partDel := rows.Live
	for i, s := range srcs {
		// A multi-run sstable may hold a dead region between a partition's end and the next
		// partition's index position: read to the end-of-partition flag, not to the slice's end.
		if err := h.curs[i].ResetTrailing(s.Table, s.Version, s.Data); err != nil {
			return 0, err
		}
		if i > 0 && !bytes.Equal(h.curs[i].Key(), h.curs[0].Key()) {
			return 0, fmt.Errorf("%w: partition keys %x and %x merged", ErrMismatch, h.curs[0].Key(), h.curs[i].Key())
		}
		if supersedes(h.curs[i].Deletion(), partDel) {
			partDel = h.curs[i].Deletion()
		}
		h.open[i] = rows.Live
	}
	h.d.Reset()
	h.buf = appendBytes(h.buf[:0], h.curs[0].Key())
	h.buf = appendDeletion(h.buf, partDel)

	h.rows = h.rows[:0]
	for i, s := range srcs {
		if st := h.curs[i].Static(); st != nil {
			h.rows = append(h.rows, srcRow{t: s.Table, r: st})
		}
	}
	if err := h.row('S', nil, partDel); err != nil {
		return 0, err
	}
	for i := range srcs {
		h.advance(i)
	}
	rt := rows.Live // range tombstone deletion in force, as last hashed
	for {
		m := -1
		for i := range srcs {
			if h.heads[i].kind != 0 && (m < 0 || h.cmp.compare(h.heads[i].pos, h.heads[m].pos) < 0) {
				m = i
			}
		}
		if m < 0 {
			break
		}
		h.group = h.group[:0]
		for i := range srcs {
			if h.heads[i].kind == h.heads[m].kind && h.cmp.compare(h.heads[i].pos, h.heads[m].pos) == 0 {
				h.group = append(h.group, i)
			}
		}
		if h.heads[m].kind == rows.KindMarker {
			for _, i := range h.group {
				mk := h.curs[i].Marker()
				switch {
				case mk.Kind.IsBoundary():
					h.open[i] = mk.Start
				case sideOf(mk.Kind) < 0: // a start bound
					h.open[i] = mk.Deletion
				default:
					h.open[i] = rows.Live
				}
			}
			eff := rows.Live
			for i := range srcs {
				if supersedes(h.open[i], eff) {
					eff = h.open[i]
				}
			}
			if !supersedes(eff, partDel) {
				eff = rows.Live
			}
			if eff != rt {
				p := h.heads[m].pos
				h.buf = append(h.buf, 'T')
				h.buf = appendValues(h.buf, p.values)
				h.buf = append(h.buf, byte(p.side+1))
				h.buf = appendDeletion(h.buf, eff)
				rt = eff
			}
		} else {
			h.rows = h.rows[:0]
			for _, i := range h.group {
				h.rows = append(h.rows, srcRow{t: srcs[i].Table, r: h.curs[i].Row()})
			}
			active := partDel
			if supersedes(rt, active) {
				active = rt
			}
			if err := h.row('R', h.curs[m].Row().Clustering, active); err != nil {
				return 0, err
			}
		}
		for _, i := range h.group {
			h.advance(i)
		}
		if len(h.buf) >= flushAt {
			h.d.Write(h.buf)
			h.buf = h.buf[:0]
		}
	}
	for i := range srcs {
		if err := h.curs[i].Err(); err != nil {
			return 0, err
		}
		if !h.curs[i].Done() {
			return 0, fmt.Errorf("%w: partition %x ends without its end-of-partition marker", ErrMismatch, h.curs[i].Key())
		}
	}
	h.d.Write(h.buf)
	return h.d.Sum64(), nil
}

func (h *Hasher) comparatorFor(srcs []Source) error {
	types := srcs[0].Table.Header.ClusteringTypes
	for _, s := range srcs[1:] {
		if !slices.Equal(s.Table.Header.ClusteringTypes, types) {
			return fmt.Errorf("%w: clustering types %q and %q", ErrMismatch, types, s.Table.Header.ClusteringTypes)
		}
	}
	if h.cmp != nil && slices.Equal(h.cmpFor, types) {
		return nil
	}
	c, err := newComparator(srcs[0].Table.Clustering)
	if err != nil {
		return err
	}
	h.cmp, h.cmpFor = c, slices.Clone(types)
	return nil
}

func (h *Hasher) advance(i int) {
	c := &h.curs[i]
	if !c.Next() {
		h.heads[i].kind = 0
		return
	}
	h.heads[i].kind = c.Kind()
	if c.Kind() == rows.KindMarker {
		h.heads[i].pos = position{values: c.Marker().Values, side: sideOf(c.Marker().Kind)}
	} else {
		h.heads[i].pos = position{values: c.Row().Clustering}
	}
}

// row hashes the reconciliation of h.rows (one clustering) under the deletion active around
// it, or nothing when nothing survives.
func (h *Hasher) row(tag byte, clustering [][]byte, active rows.DeletionTime) error {
	if len(h.rows) == 0 {
		return nil
	}
	start := len(h.buf)
	h.buf = append(h.buf, tag)
	h.buf = appendValues(h.buf, clustering)

	rowDel := rows.Live
	live := rows.EmptyLiveness
	for _, sr := range h.rows {
		if supersedes(sr.r.Deletion, rowDel) {
			rowDel = sr.r.Deletion
		}
		if !sr.r.Liveness.IsEmpty() && (live.IsEmpty() || livenessSupersedes(sr.r.Liveness, live)) {
			live = sr.r.Liveness
		}
	}
	if supersedes(active, rowDel) {
		rowDel = rows.Live
	} else {
		active = rowDel
	}
	if !live.IsEmpty() && live.Timestamp <= active.MarkedForDeleteAt {
		live = rows.EmptyLiveness
	}
	h.buf = appendDeletion(h.buf, rowDel)
	if live.IsEmpty() {
		h.buf = append(h.buf, 0)
	} else {
		h.buf = append(h.buf, 1)
		h.buf = binary.LittleEndian.AppendUint64(h.buf, uint64(live.Timestamp))
		h.buf = binary.LittleEndian.AppendUint32(h.buf, uint32(live.TTL))
		h.buf = binary.LittleEndian.AppendUint64(h.buf, uint64(live.LocalExpirationTime))
	}
	empty := rowDel.IsLive() && live.IsEmpty()

	h.cols = h.cols[:0]
	for _, sr := range h.rows {
		infos := sr.t.Columns(sr.r.Static)
		for k := range sr.r.Columns {
			cd := &sr.r.Columns[k]
			if cd.Column < 0 || cd.Column >= len(infos) {
				return fmt.Errorf("%w: column index %d of %d", ErrMismatch, cd.Column, len(infos))
			}
			h.cols = append(h.cols, colRef{name: infos[cd.Column].Name, counter: infos[cd.Column].Counter, cd: cd})
		}
	}
	slices.SortStableFunc(h.cols, func(a, b colRef) int { return bytes.Compare(a.name, b.name) })
	for lo := 0; lo < len(h.cols); {
		hi := lo + 1
		for hi < len(h.cols) && bytes.Equal(h.cols[hi].name, h.cols[lo].name) {
			hi++
		}
		wrote, err := h.column(h.cols[lo:hi], active)
		if err != nil {
			return err
		}
		empty = empty && !wrote
		lo = hi
	}
	if empty {
		h.buf = h.buf[:start]
		return nil
	}
	h.buf = append(h.buf, 'E')
	return nil
}

// column hashes one column's reconciled cells; it reports whether anything survived.
func (h *Hasher) column(refs []colRef, active rows.DeletionTime) (bool, error) {
	start := len(h.buf)
	h.buf = append(h.buf, 'C')
	h.buf = appendBytes(h.buf, refs[0].name)
	colDel := rows.Live
	for _, r := range refs {
		if supersedes(r.cd.Deletion, colDel) {
			colDel = r.cd.Deletion
		}
	}
	if supersedes(active, colDel) {
		colDel = rows.Live
	} else {
		active = colDel
	}
	h.buf = appendDeletion(h.buf, colDel)
	h.cells = h.cells[:0]
	for _, r := range refs {
		for k := range r.cd.Cells {
			if c := &r.cd.Cells[k]; c.Timestamp > active.MarkedForDeleteAt {
				h.cells = append(h.cells, c)
			}
		}
	}
	// Paths are ordered by their bytes: any fixed order makes the encoding canonical, and
	// equal paths are equal bytes.
	slices.SortStableFunc(h.cells, func(a, b *rows.Cell) int { return bytes.Compare(a.Path, b.Path) })
	n := 0
	for lo := 0; lo < len(h.cells); {
		win := h.cells[lo]
		hi := lo + 1
		for ; hi < len(h.cells) && bytes.Equal(h.cells[hi].Path, win.Path); hi++ {
			c := h.cells[hi]
			if refs[0].counter && !sameCell(c, win) {
				return false, fmt.Errorf("%w: column %q", ErrCounter, refs[0].name)
			}
			win = reconcileCells(win, c)
		}
		h.buf = append(h.buf, 'c')
		h.buf = appendBytes(h.buf, win.Path)
		h.buf = binary.LittleEndian.AppendUint64(h.buf, uint64(win.Timestamp))
		h.buf = binary.LittleEndian.AppendUint32(h.buf, uint32(win.TTL))
		h.buf = binary.LittleEndian.AppendUint64(h.buf, uint64(win.LocalDeletionTime))
		if win.Tombstone {
			h.buf = append(h.buf, 1)
		} else {
			h.buf = append(h.buf, 0)
		}
		h.buf = appendBytes(h.buf, win.Value)
		n++
		lo = hi
	}
	if n == 0 && colDel.IsLive() {
		h.buf = h.buf[:start]
		return false, nil
	}
	return true, nil
}

func sameCell(a, b *rows.Cell) bool {
	return a.Timestamp == b.Timestamp && a.TTL == b.TTL && a.LocalDeletionTime == b.LocalDeletionTime &&
		a.Tombstone == b.Tombstone && bytes.Equal(a.Value, b.Value)
}

// reconcileCells is Cells.resolveRegular: the newer timestamp; at a tie a tombstone or
// expiring cell over a live one, a tombstone over an expiring one, the later local deletion
// time; then the greater value.
func reconcileCells(a, b *rows.Cell) *rows.Cell {
	if a.Timestamp != b.Timestamp {
		if a.Timestamp > b.Timestamp {
			return a
		}
		return b
	}
	ad, bd := a.LocalDeletionTime != rows.NoDeletionTime, b.LocalDeletionTime != rows.NoDeletionTime
	if ad || bd {
		if ad != bd {
			if ad {
				return a
			}
			return b
		}
		at, bt := a.TTL == rows.NoTTL, b.TTL == rows.NoTTL // not expiring: a tombstone
		if at != bt {
			if at {
				return a
			}
			return b
		}
		if a.LocalDeletionTime != b.LocalDeletionTime {
			if a.LocalDeletionTime > b.LocalDeletionTime {
				return a
			}
			return b
		}
	}
	if bytes.Compare(a.Value, b.Value) >= 0 {
		return a
	}
	return b
}

// supersedes is DeletionTime.supersedes.
func supersedes(a, b rows.DeletionTime) bool {
	return a.MarkedForDeleteAt > b.MarkedForDeleteAt ||
		(a.MarkedForDeleteAt == b.MarkedForDeleteAt && a.LocalDeletionTime > b.LocalDeletionTime)
}

// livenessSupersedes is LivenessInfo.supersedes (without the materialized views' expired
// liveness special case).
func livenessSupersedes(a, b rows.Liveness) bool {
	if a.Timestamp != b.Timestamp {
		return a.Timestamp > b.Timestamp
	}
	ae, be := a.TTL != rows.NoTTL, b.TTL != rows.NoTTL
	if ae == be {
		return a.LocalExpirationTime > b.LocalExpirationTime
	}
	return ae
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// appendValues appends clustering values; a null is told apart from an empty value.
func appendValues(dst []byte, vs [][]byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vs)))
	for _, v := range vs {
		if v == nil {
			dst = append(dst, 0)
			continue
		}
		dst = append(dst, 1)
		dst = appendBytes(dst, v)
	}
	return dst
}

// appendDeletion appends a deletion time; every live one encodes alike, whatever local
// deletion time a writer left in it.
func appendDeletion(dst []byte, d rows.DeletionTime) []byte {
	if d.IsLive() {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(d.MarkedForDeleteAt))
	return binary.LittleEndian.AppendUint64(dst, uint64(d.LocalDeletionTime))
}
