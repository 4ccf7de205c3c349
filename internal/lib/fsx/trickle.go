package fsx

import "os"

// Trickle hands a file's written bytes to writeback every TrickleBytes (Cassandra's trickle
// fsync, without waiting), so that the fsync or syncfs that makes the file durable at its
// commit finds little left to write: the device works while the bytes still arrive instead
// of after them. Writes may land anywhere in the file (a fill in place writes records at
// their positions); the extent since the last hand-over is what goes. Advisory: an error of
// sync_file_range is ignored, the commit's sync is what counts. The zero value is ready; like
// the file's writer it is used from one goroutine at a time.
type Trickle struct {
	lo, hi  int64 // extent written since the last hand-over
	pending int64 // bytes written since then
}

// TrickleBytes is how many written bytes of a file go to writeback at once.
const TrickleBytes = 8 << 20

// Wrote records n bytes written to f at off and starts writeback once TrickleBytes have
// gathered.
func (t *Trickle) Wrote(f *os.File, off, n int64) {
	if n <= 0 || f == nil {
		return
	}
	if t.pending == 0 {
		t.lo, t.hi = off, off+n
	} else {
		t.lo, t.hi = min(t.lo, off), max(t.hi, off+n)
	}
	t.pending += n
	if t.pending >= TrickleBytes {
		_ = StartWriteback(f, t.lo, t.hi-t.lo)
		t.pending = 0
	}
}
