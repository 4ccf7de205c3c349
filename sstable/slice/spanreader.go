package slice

import (
	"fmt"
	"io"
	"os"

	"github.com/sluicedb/sluice/sstable/bigindex"
)

// spanReader produces an IndexBig slice: each run's Index.db span [IndexLo, IndexHi) after the
// one before, read in pieces that end on an entry's end. It decodes no key and hashes nothing,
// but it walks the entries' framing, which costs little, so that what it sends is what the
// plan says: each run's span holds exactly its planned partition count, ends on an entry's
// end, and its positions start at the run's Lo and increase below its Hi. A plan from a
// misleading Summary.db, or an index changed under the plan, fails here, naming the file,
// before the receiver sees a wrong slice.
type spanReader struct {
	path string
	f    *os.File
	runs []RunPlan
	want int64

	buf       []byte
	cur       []byte // produced, not yet read
	run       int    // the run being read
	off       int64  // Index.db offset of the next byte to read in the run
	entries   int64  // entries of the run walked so far
	prevPos   int64  // the last entry's position, -1 before the run's first
	got       int64
	readError error
}

func newSpanReader(path string, runs []RunPlan, want int64) (*spanReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r := &spanReader{path: path, f: f, runs: runs, want: want, buf: make([]byte, max(min(want, int64(indexPiece)), 512)), prevPos: -1}
	if len(runs) > 0 {
		r.off = runs[0].IndexLo
	}
	return r, nil
}

func (r *spanReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.readError != nil {
			return 0, r.readError
		}
		if err := r.fill(); err != nil {
			r.readError = err
			return 0, err
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// fill reads the next piece of the current run, up to its last whole entry, into cur.
func (r *spanReader) fill() error {
	if r.run == len(r.runs) {
		if r.got != r.want {
			return fmt.Errorf("slice: %s: index slice of %d bytes, planned %d", r.path, r.got, r.want)
		}
		return io.EOF
	}
	run := &r.runs[r.run]
	k := min(int64(len(r.buf)), run.IndexHi-r.off)
	b := r.buf[:k]
	if _, err := r.f.ReadAt(b, r.off); err != nil {
		return fmt.Errorf("slice: reading %s at %d: %w", r.path, r.off, err)
	}
	var (
		e    bigindex.Entry
		used int
	)
	for used < len(b) {
		n, err := bigindex.DecodeEntry(b[used:], r.off+int64(used), &e)
		if err != nil {
			return fmt.Errorf("slice: %s: %w", r.path, err)
		}
		if n == 0 {
			break
		}
		switch {
		case r.prevPos < 0 && e.Position != run.Lo:
			return fmt.Errorf("slice: %s: the entry at %d is at data position %d, but its run starts at %d", r.path, e.Offset, e.Position, run.Lo)
		case r.prevPos >= 0 && e.Position <= r.prevPos, e.Position >= run.Hi:
			return fmt.Errorf("slice: %s: the entry at %d, data position %d, is out of order or past its run's end %d", r.path, e.Offset, e.Position, run.Hi)
		}
		r.prevPos = e.Position
		r.entries++
		used += n
	}
	if used == 0 {
		if k < run.IndexHi-r.off {
			r.buf = make([]byte, 2*len(r.buf)) // an entry larger than the buffer
			return nil
		}
		return fmt.Errorf("slice: %s: %d bytes at %d, the end of a run's entries, are not a whole entry", r.path, k, r.off)
	}
	r.cur = b[:used]
	r.off += int64(used)
	r.got += int64(used)
	if r.got > r.want {
		return fmt.Errorf("slice: %s: index slice longer than the planned %d bytes", r.path, r.want)
	}
	if r.off == run.IndexHi {
		if r.entries != run.Partitions {
			return fmt.Errorf("slice: %s holds %d entries at [%d, %d), planned %d partitions", r.path, r.entries, run.IndexLo, run.IndexHi, run.Partitions)
		}
		r.run++
		r.entries, r.prevPos = 0, -1
		if r.run < len(r.runs) {
			r.off = r.runs[r.run].IndexLo
		}
	}
	return nil
}

func (r *spanReader) Close() error { return r.f.Close() }
