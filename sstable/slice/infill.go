package slice

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// InPlaceFill makes a received compressed partial into the filled child (fill.go) as its
// Data.db arrives, writing every byte once: the sender's whole parent chunks come in order, the
// chunks a run keeps whole are written through at their place in the child, and only the
// chunks at the runs' edges (a few per run) wait in memory to be re-encoded with the filler
// partitions between runs. Receiving into a scratch file and filling a copy of it afterwards
// (slice.Slice over the received partial) costs a second write of every byte.
//
// The child is laid out run by run (placeRun, planFill's step) as each run's first key becomes
// known — from the data (the writer) or from the index slice (the rebuild, Enter), whichever
// comes first; both must name the same key. Positions here are the received partial's
// uncompressed positions (the sender's segments of whole parent chunks, back to back), whose
// chunk grid is the parent's.
//
// Write is called from one goroutine (the data plane), Enter from another (the rebuild):
// placement is shared under mu; the written file and its metadata are the writer's alone.
type InPlaceFill struct {
	mu     sync.Mutex
	L      int64
	info   *compress.Info // the received partial's CompressionInfo
	recvFL int64          // the received partial's Data.db length
	codec  compress.Codec
	rawAt  int
	runs   []RunPlan // received positions, exact ends
	shifts []int64   // per run: parent position - received position
	fm     *fillerMaker
	fmWhy  string
	pieces *Pieces
	p      token.Partitioner
	table  *schema.Table
	v      version.Version
	over   int64 // an empty partition's size less its key (0: unknown)
	dst    io.WriterAt
	src    io.ReaderAt // dst read back: keys of the written child (KeyAt)

	// Placement, under mu.
	placed []placement
	keys   [][]byte // each placed run's first key
	fills  [][]byte // each placed run's filler bytes (nil: no region)
	fkeys  [][]fillerKey
	cpos   int64 // where the child's stream ends after the placed runs

	// The writer's state.
	in      int64          // received Data.db bytes taken
	cur     int            // the received chunk in progress
	through bool           // cur is written through at its place in the child
	buf     map[int][]byte // received records held (whole once cur has passed them)
	plain   map[int][]byte // held records decoded
	reader  *compress.Reader
	emitted int // child chunks written
	// unflushed counts the emitted chunks written through whose bytes are still in pend (a
	// take coalesces them into one write at its end): KeyAt must not read them yet. Changed
	// with emitted under mu, cleared by flush once the bytes are in the file.
	unflushed  atomic.Int64
	off        int64   // child Data.db bytes written
	offsets    []int64 // the child's chunk offsets so far
	digest     digest  // the child's bytes written
	pend       pending // bytes written through in the take in progress, not yet written or folded
	content    []byte
	rec        []byte
	encBytes   int64
	encLens    []int64 // each re-encoded record's length, in the child's order
	recvDigest digest  // the received bytes taken
	err        error
	// clean is the last point a resume may restart from: a received chunk written through,
	// nothing held (FillState's counts; Clean materialises the lists).
	clean   FillState
	cleanOK bool

	// KeyAt's reader over the written chunks, grown as more are written, and its chunks
	// decoded ahead (the rebuild's).
	keyReader  *compress.Reader
	keysChunks int
	keyAhead   *keyChunks
	keyBuf     []byte
}

// InPlaceOptions is what NewInPlaceFill needs besides the received partial's shape.
type InPlaceOptions struct {
	Spec   *Spec
	Ranges token.RangeSet // the session's ranges: fillers take tokens inside them
	// Runs are the child's runs in parent positions, each ending exactly at its last
	// partition's end (the sender's claim, checked by VerifyEnds once the child is written).
	Runs []RunPlan
}

// NewInPlaceFill prepares the fill of a received partial of layout recv and CompressionInfo
// info into dst; src reads dst back (KeyAt).
func NewInPlaceFill(recv *Layout, info *compress.Info, opts InPlaceOptions, dst io.WriterAt, src io.ReaderAt) (*InPlaceFill, error) {
	if info == nil || !recv.Compressed || len(opts.Runs) == 0 {
		return nil, errors.New("slice: an in-place fill takes a compressed partial with runs")
	}
	codec, err := compress.CodecFor(info.Compressor, info.Options)
	if err != nil {
		return nil, err
	}
	t, err := schema.Compile(opts.Spec.Statistics.Header)
	if err != nil {
		return nil, err
	}
	ps, err := NewPieces(opts.Spec.Partitioner, opts.Ranges)
	if err != nil {
		return nil, err
	}
	f := &InPlaceFill{L: int64(info.ChunkLength), info: info, recvFL: recv.FileLength, codec: codec,
		rawAt: int(info.MaxCompressedLength), pieces: ps, p: opts.Spec.Partitioner, table: t, v: opts.Spec.Version, dst: dst, src: src,
		buf: map[int][]byte{}, plain: map[int][]byte{}}
	if f.rawAt <= 0 {
		f.rawAt = math.MaxInt32
	}
	f.fm, f.fmWhy = newFillerMaker(t, opts.Spec.Version, opts.Spec.Partitioner)
	if over, err := sstable.EmptyOverhead(t, opts.Spec.Version); err == nil {
		f.over = over
	}
	// The runs in received positions: each lies inside one segment of the sender's layout.
	seg := 0
	var prevHi int64 = -1
	for k, r := range opts.Runs {
		if r.Lo >= r.Hi || r.Lo < prevHi {
			return nil, fmt.Errorf("slice: run %d [%d, %d) is empty or out of order", k, r.Lo, r.Hi)
		}
		prevHi = r.Hi
		for seg < len(recv.Segments) && recv.Segments[seg].PHi < r.Hi {
			seg++
		}
		if seg == len(recv.Segments) || r.Lo < recv.Segments[seg].PLo {
			return nil, fmt.Errorf("slice: run %d [%d, %d) lies in no segment the sender sends", k, r.Lo, r.Hi)
		}
		s := recv.Segments[seg].Shift
		f.runs = append(f.runs, RunPlan{FirstOrdinal: r.FirstOrdinal, Partitions: r.Partitions, Lo: r.Lo - s, Hi: r.Hi - s})
		f.shifts = append(f.shifts, s)
	}
	if last := f.runs[len(f.runs)-1]; last.Hi > recv.DataLength {
		return nil, fmt.Errorf("slice: the last run ends at %d, past the received data's %d", last.Hi, recv.DataLength)
	}
	f.reader, err = compress.NewReader(heldRecords{f}, f.recvFL, info)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// heldRecords serves the held received records to a compress.Reader, which decodes them.
type heldRecords struct{ f *InPlaceFill }

func (h heldRecords) ReadAt(p []byte, off int64) (int, error) {
	k := recordAt(h.f.info.Offsets, off)
	b, ok := h.f.buf[k]
	start := h.f.info.Offsets[k]
	if !ok || off-start+int64(len(p)) > int64(len(b)) {
		return 0, fmt.Errorf("slice: received chunk %d is not held", k)
	}
	return copy(p, b[off-start:]), nil
}

// recordAt is the record whose offset is the last at or below off.
func recordAt(offsets []int64, off int64) int {
	lo, hi := 0, len(offsets)
	for lo+1 < hi {
		m := (lo + hi) / 2
		if offsets[m] <= off {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// recordEnd is where received record j ends.
func (f *InPlaceFill) recordEnd(j int) int64 {
	if j+1 < len(f.info.Offsets) {
		return f.info.Offsets[j+1]
	}
	return f.recvFL
}

// Write takes the next received Data.db bytes, in order. Their chunks' CRCs are checked by
// the caller as they pass (a record is decoded here only after its own CRC check too).
func (f *InPlaceFill) Write(p []byte) error { return f.take(p, true) }

// Placeable says whether the next n received bytes are all written through, and where in the
// child they go: a data plane may then place them itself (splice) and hand them to Placed.
func (f *InPlaceFill) Placeable(n int64) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil || f.cur >= len(f.info.Offsets) || n <= 0 {
		return 0, false
	}
	start := f.info.Offsets[f.cur]
	if f.in == start && !f.writesThrough(f.cur) || f.in != start && !f.through {
		return 0, false
	}
	// Every record the bytes reach must be in the same stretch of whole chunks.
	v, _ := f.placedVerbatim(f.cur, true)
	if w, ok := f.placedVerbatim(recordAt(f.info.Offsets, f.in+n-1), true); !ok || w != v {
		return 0, false
	}
	return f.off + f.in - start, true
}

// Placed takes the next received bytes, which a data plane placed where Placeable said.
func (f *InPlaceFill) Placed(p []byte) error { return f.take(p, false) }

// take is Write, writing the bytes it writes through only when write is set. Consecutive
// records written through go out in one write (a frame holds many records; a write each
// cost most of the receiver's CPU).
func (f *InPlaceFill) take(p []byte, write bool) error {
	if f.err != nil {
		return f.err
	}
	f.pend = pending{buf: p, write: write}
	defer f.pend.reset()
	for i := 0; i < len(p); {
		if f.cur >= len(f.info.Offsets) {
			return f.fail(fmt.Errorf("slice: %d bytes past the received Data.db's end", len(p)-i))
		}
		start, end := f.info.Offsets[f.cur], f.recordEnd(f.cur)
		if f.in == start {
			f.mu.Lock()
			f.through = f.writesThrough(f.cur)
			f.mu.Unlock()
		}
		k := int(min(int64(len(p)-i), end-f.in))
		if at := f.off + f.in - start; f.through {
			if !f.pend.follows(i, at) {
				if err := f.flush(); err != nil {
					return f.fail(err)
				}
			}
			f.pend.add(i, k, at)
		} else {
			if err := f.flush(); err != nil {
				return f.fail(err)
			}
			f.buf[f.cur] = append(f.buf[f.cur], p[i:i+k]...)
			f.recvDigest.fold(crc32.ChecksumIEEE(p[i:i+k]), int64(k))
		}
		f.in += int64(k)
		i += k
		if f.in == end {
			if err := f.recordDone(); err != nil {
				return f.fail(err)
			}
		}
	}
	if err := f.flush(); err != nil {
		return f.fail(err)
	}
	return nil
}

// pending is a stretch of the bytes take was given that go through to the child, contiguous
// there too, not yet written (write) or folded into the digests.
type pending struct {
	buf    []byte
	write  bool
	lo, hi int   // buf[lo:hi]
	at     int64 // its child offset
	crc    uint32
}

// follows says whether buf[i:] at child offset at continues the stretch (or none is pending).
func (p *pending) follows(i int, at int64) bool {
	return p.hi == p.lo || i == p.hi && at == p.at+int64(p.hi-p.lo)
}

// add extends the stretch by buf[i:i+k], for child offset at, which follows it.
func (p *pending) add(i, k int, at int64) {
	if p.hi == p.lo {
		p.lo, p.hi, p.at, p.crc = i, i, at, 0
	}
	p.crc = crc32.Update(p.crc, crc32.IEEETable, p.buf[i:i+k])
	p.hi += k
}

func (p *pending) reset() { *p = pending{} }

// folded is d with the pending bytes folded in.
func (p *pending) folded(d digest) digest {
	if p.hi > p.lo {
		d.fold(p.crc, int64(p.hi-p.lo))
	}
	return d
}

// flush writes the pending bytes through (unless a data plane placed them) and folds them
// into both digests.
func (f *InPlaceFill) flush() error {
	p := &f.pend
	if p.hi == p.lo {
		return nil
	}
	if p.write {
		if _, err := f.dst.WriteAt(p.buf[p.lo:p.hi], p.at); err != nil {
			return err
		}
	}
	f.unflushed.Store(0)
	f.digest = p.folded(f.digest)
	f.recvDigest = p.folded(f.recvDigest)
	p.lo = p.hi
	return nil
}

func (f *InPlaceFill) fail(err error) error {
	if f.err == nil {
		f.err = err
	}
	return f.err
}

// writesThrough says whether received chunk j goes straight to its place: a chunk its run
// keeps whole, every child chunk before it written.
func (f *InPlaceFill) writesThrough(j int) bool {
	c, ok := f.verbatimChild(j)
	return ok && c == f.emitted
}

// verbatimChild is the child chunk received chunk j becomes, when a placed run keeps it whole.
func (f *InPlaceFill) verbatimChild(j int) (int, bool) {
	v, ok := f.placedVerbatim(j, true)
	return v.Chunk + j - v.Parent, ok
}

// verbatimParent is the received chunk child chunk c keeps whole, if any.
func (f *InPlaceFill) verbatimParent(c int) (int, bool) {
	v, ok := f.placedVerbatim(c, false)
	return v.Parent + c - v.Chunk, ok
}

// placedVerbatim is the placed runs' stretch of whole chunks that holds received chunk i
// (byParent) or child chunk i.
func (f *InPlaceFill) placedVerbatim(i int, byParent bool) (verbatim, bool) {
	for k := len(f.placed) - 1; k >= 0; k-- {
		v := f.placed[k].verbatim
		if v.N == 0 {
			continue
		}
		lo := v.Chunk
		if byParent {
			lo = v.Parent
		}
		switch {
		case i >= lo+v.N:
			return verbatim{}, false // runs ascend: none before holds it either
		case i >= lo:
			return v, true
		}
	}
	return verbatim{}, false
}

// recordDone finishes received chunk cur: written through, or held and decoded; then lays out
// what it makes possible and writes what it can.
func (f *InPlaceFill) recordDone() error {
	j := f.cur
	f.cur++
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.through {
		f.through = false
		f.offsets = append(f.offsets, f.off)
		f.off += f.recordEnd(j) - f.info.Offsets[j]
		f.emitted++
		if f.pend.write {
			f.unflushed.Add(1)
		}
		if err := f.advance(); err != nil {
			return err
		}
		if len(f.buf) == 0 {
			// (The bytes written through so far in this take are folded in as they will be.)
			f.clean = FillState{Chunks: f.cur, Bytes: f.in, Written: f.off, Emitted: f.emitted, Digest: f.pend.folded(f.digest).crc,
				RecvDigest: f.pend.folded(f.recvDigest).crc, placed: len(f.placed), encoded: len(f.encLens)}
			f.cleanOK = true
		}
		return nil
	}
	b, err := f.reader.ReadChunk(j, nil)
	if err != nil {
		return err
	}
	f.plain[j] = b
	return f.advance()
}

// advance places the runs whose first keys are held and writes the child chunks whose bytes
// are all here.
func (f *InPlaceFill) advance() error {
	for {
		progressed := false
		for len(f.placed) < len(f.runs) {
			k := len(f.placed)
			key, ok, err := f.heldKey(f.runs[k].Lo)
			if err != nil || !ok {
				if err != nil {
					return err
				}
				break
			}
			if err := f.place(k, key); err != nil {
				return err
			}
			progressed = true
		}
		for {
			ok, err := f.emitNext()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			progressed = true
		}
		if !progressed {
			f.evict()
			return nil
		}
	}
}

// heldKey reads the key of the partition at received position pos from held chunks.
func (f *InPlaceFill) heldKey(pos int64) ([]byte, bool, error) {
	var n [2]byte
	if !f.heldBytes(n[:], pos) {
		return nil, false, nil
	}
	key := make([]byte, int(n[0])<<8|int(n[1]))
	if !f.heldBytes(key, pos+2) {
		return nil, false, nil
	}
	return key, true, nil
}

// heldBytes fills b from the decoded held chunks at received position pos, or says they are
// not all here.
func (f *InPlaceFill) heldBytes(b []byte, pos int64) bool {
	for len(b) > 0 {
		j := int(pos / f.L)
		c, ok := f.plain[j]
		at := pos - int64(j)*f.L
		if !ok || at >= int64(len(c)) {
			return false
		}
		n := copy(b, c[at:])
		b, pos = b[n:], pos+int64(n)
	}
	return true
}

// place lays out run k, whose first partition's key is key, after the runs before it.
func (f *InPlaceFill) place(k int, key []byte) error {
	r := f.runs[k]
	last := k == len(f.runs)-1
	minF := f.fm.minRegion()
	p := placeRun(f.L, f.cpos, r, last, minF, false)
	var fill []byte
	var fkeys []fillerKey
	if p.region.Len > 0 {
		tok := f.p.Token(key)
		i, in := f.pieces.locate(tok)
		if !in {
			return fmt.Errorf("%w: the partition at %d (token %s) lies in none of the ranges", ErrCorrupt, r.Lo+f.shifts[k], tok)
		}
		var err error
		fill, fkeys, err = f.fm.region(p.region.Len, f.pieces.pieces[i].r.Left, tok, key)
		if errors.Is(err, errNoFiller) {
			// No filler fits the gap: the run goes right after the one before, re-encoded.
			p, fill, fkeys = placeRun(f.L, f.cpos, r, last, minF, true), nil, nil
		} else if err != nil {
			return err
		}
		for i := range fkeys {
			fkeys[i].Off += p.region.At
		}
	}
	f.placed = append(f.placed, p)
	f.keys = append(f.keys, key)
	f.fills = append(f.fills, fill)
	f.fkeys = append(f.fkeys, fkeys)
	f.cpos = p.end
	return nil
}

// Enter is the rebuild reaching run k's first partition (key, parent position pos): it lays
// the run out if the data has not yet, and returns the run's shift (child position = parent
// position - shift) and the filler partitions before it, at child positions.
func (f *InPlaceFill) Enter(k int, key []byte, pos int64) (int64, []FillerPartition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if k >= len(f.runs) || k > len(f.placed) {
		return 0, nil, fmt.Errorf("slice: the index slice enters run %d of %d before run %d", k, len(f.runs), len(f.placed))
	}
	if r := f.runs[k]; pos-f.shifts[k] != r.Lo {
		return 0, nil, fmt.Errorf("%w: run %d starts at %d, its first partition in the index slice at %d", ErrCorrupt, k, r.Lo+f.shifts[k], pos)
	}
	if k == len(f.placed) {
		if err := f.place(k, append([]byte(nil), key...)); err != nil {
			return 0, nil, err
		}
	} else if !bytes.Equal(f.keys[k], key) {
		return 0, nil, fmt.Errorf("%w: run %d's first key is %x in Data.db, %x in the index slice", ErrCorrupt, k, f.keys[k], key)
	}
	var out []FillerPartition
	for _, fk := range f.fkeys[k] {
		out = append(out, FillerPartition{Key: fk.Key, Token: fk.Tok, Position: fk.Off})
	}
	return f.shifts[k] + f.placed[k].shift, out, nil
}

// FillerPartition is a filler partition of an in-place fill, at a child position.
type FillerPartition struct {
	Key      []byte
	Token    token.Token
	Position int64
}

// laidOut is how far the child's stream is laid out: its end once every run is placed.
func (f *InPlaceFill) laidOut() (int64, bool) { return f.cpos, len(f.placed) == len(f.runs) }

// emitNext writes the next child chunk if its bytes are all here.
func (f *InPlaceFill) emitNext() (bool, error) {
	c := f.emitted
	a := int64(c) * f.L
	end, all := f.laidOut()
	if !all && a+f.L > end {
		return false, nil // the chunk reaches past the runs laid out so far
	}
	if all && c >= chunksFor(end, f.L) {
		return false, nil
	}
	if j, ok := f.verbatimParent(c); ok {
		b, held := f.buf[j]
		if !held || j >= f.cur {
			return false, nil // not yet here: written through as it arrives
		}
		if err := f.emit(b); err != nil {
			return false, err
		}
		delete(f.buf, j)
		return true, nil
	}
	b := min(a+f.L, end)
	f.content = f.content[:0]
	for pos := a; pos < b; {
		k, region := f.stretchAt(pos)
		switch {
		case region:
			p := f.placed[k]
			n := min(b, p.region.At+p.region.Len) - pos
			f.content = append(f.content, f.fills[k][pos-p.region.At:pos-p.region.At+n]...)
			pos += n
		default:
			r, p := f.runs[k], f.placed[k]
			n := min(b, r.Hi-p.shift) - pos
			at := len(f.content)
			f.content = append(f.content, make([]byte, n)...)
			if !f.heldBytes(f.content[at:], pos+p.shift) {
				return false, nil
			}
			pos += n
		}
	}
	var err error
	if f.rec, err = compress.AppendRecord(f.rec[:0], f.codec, f.content, f.rawAt); err != nil {
		return false, err
	}
	f.encBytes += int64(len(f.rec))
	f.encLens = append(f.encLens, int64(len(f.rec)))
	return true, f.emit(f.rec)
}

// stretchAt is the placed run whose region (region) or bytes hold child position pos.
func (f *InPlaceFill) stretchAt(pos int64) (int, bool) {
	for k := len(f.placed) - 1; k >= 0; k-- {
		p := f.placed[k]
		if pos >= f.runs[k].Lo-p.shift {
			return k, false
		}
		if p.region.Len > 0 && pos >= p.region.At {
			return k, true
		}
	}
	return 0, false
}

// emit writes one whole record at the child's end.
func (f *InPlaceFill) emit(rec []byte) error {
	if err := f.flush(); err != nil { // the child's bytes before it, in order
		return err
	}
	if _, err := f.dst.WriteAt(rec, f.off); err != nil {
		return err
	}
	f.digest.fold(crc32.ChecksumIEEE(rec), int64(len(rec)))
	f.offsets = append(f.offsets, f.off)
	f.off += int64(len(rec))
	f.emitted++
	return nil
}

// evict drops held chunks nothing still to be written needs: those before the received
// position of the next child chunk's first byte.
func (f *InPlaceFill) evict() {
	need := f.needFrom()
	for j := range f.buf {
		if j < need && j < f.cur {
			delete(f.buf, j)
		}
	}
	for j := range f.plain {
		if j < need {
			delete(f.plain, j)
		}
	}
}

// needFrom is the first received chunk the child chunks not yet written may read.
func (f *InPlaceFill) needFrom() int {
	a := int64(f.emitted) * f.L
	for k := range f.placed {
		r, p := f.runs[k], f.placed[k]
		if a < r.Hi-p.shift {
			return int(max(r.Lo, a+p.shift) / f.L)
		}
	}
	if k := len(f.placed); k < len(f.runs) {
		return int(f.runs[k].Lo / f.L)
	}
	return math.MaxInt
}

// RebuildLayout is the layout a rebuild of the filled child maps positions with
// (RebuildOptions.Fill): one segment per run, in parent positions, each shift set as the
// rebuild enters the run, the data's length set by Finish.
func (f *InPlaceFill) RebuildLayout() *Layout {
	l := &Layout{Compressed: true, ChunkLength: f.L, DataLength: math.MaxInt64, FileLength: math.MaxInt64}
	for k, r := range f.runs {
		l.Segments = append(l.Segments, Segment{PLo: r.Lo + f.shifts[k], PHi: r.Hi + f.shifts[k], Runs: 1})
	}
	return l
}

// Written is how many bytes of the child's Data.db are written from its start.
func (f *InPlaceFill) Written() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.off
}

// FilledData is what an in-place fill made.
type FilledData struct {
	Info                                        *compress.Info
	DataLength, FileLength                      int64
	Digest                                      uint32
	Runs                                        int
	FillerPartitions, FillerBytes, EncodedBytes int64
	Reencoded                                   int // runs placed off the grid, every chunk re-encoded
}

// Finish writes what is left once every received byte was taken and returns the child's
// Data.db facts (its CompressionInfo, lengths and digest).
func (f *InPlaceFill) Finish() (FilledData, error) {
	if f.err != nil {
		return FilledData{}, f.err
	}
	if f.cur != len(f.info.Offsets) || f.in != f.recvFL {
		return FilledData{}, fmt.Errorf("slice: in-place fill finished after %d of %d received bytes", f.in, f.recvFL)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.advance(); err != nil {
		return FilledData{}, err
	}
	end, all := f.laidOut()
	if !all {
		return FilledData{}, fmt.Errorf("%w: run %d's first key is not in the received data", ErrCorrupt, len(f.placed))
	}
	if want := chunksFor(end, f.L); f.emitted != want {
		return FilledData{}, fmt.Errorf("slice: in-place fill wrote %d of %d chunks", f.emitted, want)
	}
	c := *f.info
	c.DataLength = end
	c.Offsets = f.offsets
	out := FilledData{Info: &c, DataLength: end, FileLength: f.off, Digest: f.digest.crc, Runs: len(f.runs), EncodedBytes: f.encBytes}
	for k, p := range f.placed {
		out.FillerPartitions += int64(len(f.fkeys[k]))
		out.FillerBytes += p.region.Len
		if p.encoded {
			out.Reencoded++
		}
	}
	f.buf, f.plain = nil, nil
	return out, nil
}

// Why says why no filler partition can be made for this table ("" when one can).
func (f *InPlaceFill) Why() string { return f.fmWhy }

// VerifyEnds proves the sender's claim that each run ends exactly where its last partition
// does, and that each run begins with the key it was laid out for: lasts are the parent
// positions of each run's last partition (the rebuild's), data the written child read through
// its CompressionInfo. A run with bytes after its last partition would leave bytes no
// partition owns in the child; fillers keyed from another key might sort after the run.
func (f *InPlaceFill) VerifyEnds(data io.ReaderAt, info *compress.Info, fileLength int64, lasts []int64) error {
	if len(lasts) != len(f.runs) {
		return fmt.Errorf("%w: the index slice entered %d of %d runs", ErrCorrupt, len(lasts), len(f.runs))
	}
	r, err := compress.NewReader(data, fileLength, info)
	if err != nil {
		return err
	}
	var cur rows.Cursor
	var b []byte
	for k, last := range lasts {
		// The run was laid out (its fillers keyed) from this key: the data's or the index
		// slice's, whichever came first; the child's bytes must hold it.
		var n [2]byte
		start := f.runs[k].Lo - f.placed[k].shift
		if _, err := r.ReadAt(n[:], start); err != nil {
			return err
		}
		key := make([]byte, int(n[0])<<8|int(n[1]))
		if _, err := r.ReadAt(key, start+2); err != nil {
			return err
		}
		if !bytes.Equal(key, f.keys[k]) {
			return fmt.Errorf("%w: run %d starts with key %x, it was laid out for %x", ErrCorrupt, k, key, f.keys[k])
		}
		shift := f.shifts[k] + f.placed[k].shift
		pos, end := last-shift, f.runs[k].Hi-f.placed[k].shift
		if pos < 0 || pos >= end {
			return fmt.Errorf("%w: run %d's last partition at %d lies outside it", ErrCorrupt, k, last)
		}
		b = append(b[:0], make([]byte, end-pos)...)
		if _, err := r.ReadAt(b, pos); err != nil {
			return err
		}
		err := cur.ResetTrailing(f.table, f.v, b)
		for err == nil && cur.Next() {
		}
		if err == nil {
			err = cur.Err()
		}
		if err != nil || !cur.Done() || int64(cur.End()) != end-pos {
			return fmt.Errorf("%w: run %d: the partition at parent position %d does not end at the run's end %d (%v)",
				ErrCorrupt, k, last, f.runs[k].Hi+f.shifts[k], err)
		}
	}
	return nil
}

// FillerOverhead is an empty partition's size less its key (0: unknown): the rebuild keeps
// the positions of partitions of a filler's size (RunEntrant's optional method).
func (f *InPlaceFill) FillerOverhead() int64 { return f.over }

// CountFillers counts the partitions at positions (child positions of partitions of a
// filler's size, PartialRebuild.MaybeFillers) that are filler partitions: a sluice-filled
// parent's fillers, passed on as partitions, which the child's partition count leaves out.
func (f *InPlaceFill) CountFillers(data io.ReaderAt, info *compress.Info, fileLength int64, positions []int64) (int64, error) {
	if len(positions) == 0 || f.over <= 0 {
		return 0, nil
	}
	r, err := compress.NewReader(data, fileLength, info)
	if err != nil {
		return 0, err
	}
	var n int64
	var b []byte
	for _, pos := range positions {
		var l [2]byte
		if _, err := r.ReadAt(l[:], pos); err != nil {
			return 0, err
		}
		b = append(b[:0], make([]byte, f.over+int64(int(l[0])<<8|int(l[1])))...)
		if _, err := r.ReadAt(b, pos); err != nil {
			return 0, err
		}
		if sstable.IsFiller(f.table, f.v, b) {
			n++
		}
	}
	return n, nil
}

// KeyAt reads the key of the partition at parent position pos from the child as written: ok is
// false until the chunks holding it are (an IndexPositions rebuild, whose slice carries no
// keys, reads them here as the child is written; the key is valid until the next call).
func (f *InPlaceFill) KeyAt(pos int64) ([]byte, bool, error) {
	f.mu.Lock()
	k := -1
	for i := range f.runs {
		if pos >= f.runs[i].Lo+f.shifts[i] && pos < f.runs[i].Hi+f.shifts[i] {
			k = i
			break
		}
	}
	if k < 0 {
		f.mu.Unlock()
		return nil, false, fmt.Errorf("slice: parent position %d lies in no run", pos)
	}
	if k >= len(f.placed) {
		f.mu.Unlock()
		return nil, false, nil
	}
	child := pos - f.shifts[k] - f.placed[k].shift
	// The chunks in the file: emitted ones whose bytes a take has not written yet are not.
	inFile, fileLength := f.emitted-int(f.unflushed.Load()), f.off
	if inFile < f.emitted {
		fileLength = f.offsets[inFile]
	}
	if f.keyReader == nil || f.keysChunks != inFile {
		c := *f.info
		c.Offsets = f.offsets[:inFile]
		c.DataLength = int64(inFile) * f.L
		if end, all := f.laidOut(); all && inFile == chunksFor(end, f.L) {
			c.DataLength = end
		}
		// One reader follows the file as it grows (its codec and buffers stay), and the
		// chunk decoded last stays too: an emitted chunk never changes, and partitions are
		// asked for in order, many to a chunk, while chunks are emitted between them.
		var err error
		if f.keyReader == nil {
			if f.keyReader, err = compress.NewReader(f.src, fileLength, &c); err == nil {
				f.keyAhead = newKeyChunks(f.keyReader)
			}
		} else {
			err = f.keyReader.Grow(fileLength, &c)
		}
		if err != nil {
			f.mu.Unlock()
			return nil, false, err
		}
		f.keysChunks = inFile
	}
	f.mu.Unlock()
	var n [2]byte
	if ok, err := f.keyBytesAt(inFile, n[:], child); !ok || err != nil {
		return nil, false, err
	}
	// The key is valid until the next call: one buffer serves them all.
	f.keyBuf = slices.Grow(f.keyBuf[:0], int(n[0])<<8|int(n[1]))[:int(n[0])<<8|int(n[1])]
	if ok, err := f.keyBytesAt(inFile, f.keyBuf, child+2); !ok || err != nil {
		return nil, false, err
	}
	return f.keyBuf, true, nil
}

// keyBytesAt fills b from the written child at position pos, reading its first inFile
// chunks; false when they do not reach that far yet.
func (f *InPlaceFill) keyBytesAt(inFile int, b []byte, pos int64) (bool, error) {
	for len(b) > 0 {
		c := int(pos / f.L)
		if c >= inFile {
			return false, nil
		}
		data, err := f.keyAhead.get(c, inFile)
		if err != nil {
			return false, err
		}
		at := pos - int64(c)*f.L
		if at >= int64(len(data)) {
			return false, nil
		}
		n := copy(b, data[at:])
		b, pos = b[n:], pos+int64(n)
	}
	return true, nil
}

// FillState is where an in-place fill may resume: the received chunks and bytes taken, the
// child's bytes and chunks written, the CRC32s of both so far, the first keys of the runs
// laid out and the lengths of the re-encoded chunks written (the child's chunk offsets follow
// from them and the received chunks' lengths).
type FillState struct {
	Chunks     int      `json:"chunks"`
	Bytes      int64    `json:"bytes"`
	Written    int64    `json:"written"`
	Emitted    int      `json:"emitted"`
	Digest     uint32   `json:"digest"`
	RecvDigest uint32   `json:"recv_digest"`
	Keys       [][]byte `json:"keys"`
	Encoded    []int64  `json:"encoded"`

	placed, encoded int // the counts the lists are cut to (Clean)
}

// Clean returns the last point the fill may resume from (false: none yet).
func (f *InPlaceFill) Clean() (FillState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.cleanOK {
		return FillState{}, false
	}
	st := f.clean
	st.Keys = append([][]byte(nil), f.keys[:st.placed]...)
	st.Encoded = append([]int64(nil), f.encLens[:st.encoded]...)
	return st, true
}

// Resume restarts the fill at st, a clean point of an earlier fill of the same partial whose
// written child prefix kept holds: it lays the runs out again from their keys, copies the
// prefix into dst proving every chunk record's CRC and the prefix's digest, and takes up
// the received bytes after st.Bytes. Call it before the first Write.
func (f *InPlaceFill) Resume(st FillState, kept io.ReaderAt) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.in != 0 || len(f.placed) != 0 {
		return errors.New("slice: an in-place fill resumes before it takes any byte")
	}
	n := len(f.info.Offsets)
	if st.Chunks <= 0 || st.Chunks > n || (st.Chunks < n && st.Bytes != f.info.Offsets[st.Chunks]) ||
		(st.Chunks == n && st.Bytes != f.recvFL) || len(st.Keys) > len(f.runs) || st.Emitted <= 0 || st.Written <= 0 {
		return fmt.Errorf("%w: resume point %+v does not fit the received partial", ErrCorrupt, st)
	}
	for k, key := range st.Keys {
		if err := f.place(k, key); err != nil {
			return err
		}
	}
	// The child's chunk offsets, from the layout and the re-encoded lengths.
	offsets := make([]int64, 0, st.Emitted)
	var off int64
	e := 0
	for c := 0; c < st.Emitted; c++ {
		offsets = append(offsets, off)
		if j, ok := f.verbatimParent(c); ok {
			off += f.recordEnd(j) - f.info.Offsets[j]
			continue
		}
		if e >= len(st.Encoded) {
			return fmt.Errorf("%w: resume point: chunk %d's length is not recorded", ErrCorrupt, c)
		}
		off += st.Encoded[e]
		e++
	}
	if off != st.Written || e != len(st.Encoded) {
		return fmt.Errorf("%w: resume point: %d chunks make %d bytes, the record says %d", ErrCorrupt, st.Emitted, off, st.Written)
	}
	// Copied record by record, each proven by its own CRC, the whole by the digest.
	var rec []byte
	var d digest
	for c, o := range offsets {
		end := st.Written
		if c+1 < len(offsets) {
			end = offsets[c+1]
		}
		rec = append(rec[:0], make([]byte, end-o)...)
		if _, err := kept.ReadAt(rec, o); err != nil {
			return fmt.Errorf("reading the kept child Data.db at %d: %w", o, err)
		}
		body := rec[:len(rec)-compress.CRCLength]
		if len(rec) < compress.CRCLength || crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(rec[len(body):]) {
			return fmt.Errorf("%w: chunk %d of the kept child Data.db at %d: stored CRC does not match", compress.ErrChecksum, c, o)
		}
		if _, err := f.dst.WriteAt(rec, o); err != nil {
			return err
		}
		d.fold(crc32.ChecksumIEEE(rec), int64(len(rec)))
	}
	if d.crc != st.Digest {
		return fmt.Errorf("%w: the kept child Data.db's first %d bytes have CRC32 %08x, the record says %08x", compress.ErrChecksum, st.Written, d.crc, st.Digest)
	}
	f.encLens = append(f.encLens, st.Encoded...)
	for _, n := range st.Encoded {
		f.encBytes += n
	}
	f.offsets, f.off, f.emitted, f.digest = offsets, st.Written, st.Emitted, d
	f.in, f.cur, f.recvDigest = st.Bytes, st.Chunks, digest{crc: st.RecvDigest, started: true}
	f.clean, f.cleanOK = st, true
	f.clean.placed, f.clean.encoded = len(st.Keys), len(st.Encoded)
	return nil
}
