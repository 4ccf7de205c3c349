package slice

import (
	"github.com/sluicedb/sluice/sstable/bti"
)

// rowsPage is the BTI page: row index tries never straddle one, so a slice of Rows.db keeps
// its layout when it starts on a page boundary and lands on one.
const rowsPage = 4096

// rowsSlice assembles a child's Rows.db from the parent's: for each run, the parent's bytes
// from the page holding the end of the entry before the run's first partition to the end of
// its last entry, placed on a page boundary after the previous piece. Runs whose pieces touch
// share one. Row index entries of partitions between runs are left out (unless they share a
// page with the runs'); what is carried but not addressed is never read.
type rowsSlice struct {
	parent []byte
	pieces []rowsPiece
}

// rowsPiece is parent Rows.db [cut, end) at child offset at.
type rowsPiece struct{ cut, end, at int64 }

// begin starts a run whose first entry follows parent offset lastEnd.
func (r *rowsSlice) begin(lastEnd int64) {
	cut := lastEnd &^ (rowsPage - 1)
	n := len(r.pieces)
	if n > 0 && cut <= r.pieces[n-1].end {
		return // the previous piece reaches this page: it goes on
	}
	var at int64
	if n > 0 {
		last := r.pieces[n-1]
		at = (last.at + last.end - last.cut + rowsPage - 1) &^ (rowsPage - 1)
	}
	r.pieces = append(r.pieces, rowsPiece{cut: cut, end: cut, at: at})
}

// entry takes the row index entry at parent offset pos into the current piece and returns
// it with its child offset and the shift (child offset - parent offset) of its piece.
func (r *rowsSlice) entry(pos int64) (e bti.RowIndexEntry, childPos, shift int64, err error) {
	if len(r.pieces) == 0 {
		r.begin(0)
	}
	e, err = bti.ReadRowIndexEntry(r.parent, pos)
	if err != nil {
		return e, 0, 0, err
	}
	p := &r.pieces[len(r.pieces)-1]
	p.end = max(p.end, e.End)
	shift = p.at - p.cut
	return e, pos + shift, shift, nil
}

// bytes is the child's Rows.db before its data positions are patched.
func (r *rowsSlice) bytes() []byte {
	if len(r.pieces) == 0 {
		return []byte{}
	}
	last := r.pieces[len(r.pieces)-1]
	out := make([]byte, last.at+last.end-last.cut)
	for _, p := range r.pieces {
		copy(out[p.at:], r.parent[p.cut:p.end])
	}
	return out
}
