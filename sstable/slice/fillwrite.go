package slice

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
)

// maxPendingHead bounds the re-encoded bytes held before a child's first verbatim chunk while
// the head pad that aligns that chunk for cloning is not yet known; past it the child is
// written without a pad (nothing is shared, everything still correct).
const maxPendingHead = 8 << 20

// filledData is what writeFilled made.
type filledData struct {
	Info       *compress.Info
	FileLength int64
	Stats      fsx.Stats
	Digest     uint32
	Encoded    int64 // Data.db bytes of re-encoded chunks
	Grown      int64 // bytes re-encoded chunks were grown by to keep later chunks clonable
}

// filledWriter writes one child laid out by a fillLayout.
type filledWriter struct {
	parent  *sstable.Table
	fl      *fillLayout
	fill    [][]byte // each region's filler bytes
	dst     *os.File
	mover   *fsx.Mover
	clone   bool
	align   int64
	derive  bool // derive the digest from the parent's stored CRCs
	codec   compress.Codec
	rawAt   int
	parts   []stretch
	p       int // the stretch the last encoded chunk started in
	buf     []byte
	rec     []byte
	out     filledData
	off     int64
	digest  digest
	offsets []int64
}

// writeFilled writes the child laid out by fl into dst: verbatim chunks moved from the parent
// (cloned where clone and the file system allow, behind a head pad that keeps the first of
// them at its parent offset modulo align), every other chunk encoded from the parent's bytes
// (each parent chunk checked against its CRC as it is decompressed: nothing damaged is
// re-encoded under a fresh CRC) and the regions' filler bytes. With derive the digest is
// derived from the parent's stored CRCs for the verbatim chunks; without, the caller proves
// the written child (provenRecords).
func writeFilled(parent *sstable.Table, fl *fillLayout, fill [][]byte, dst *os.File, mover *fsx.Mover, clone bool, align int64, derive bool) (filledData, error) {
	info := parent.Compression
	codec, err := compress.CodecFor(info.Compressor, info.Options)
	if err != nil {
		return filledData{}, err
	}
	w := &filledWriter{parent: parent, fl: fl, fill: fill, dst: dst, mover: mover, clone: clone, align: align,
		derive: derive, codec: codec, rawAt: int(info.MaxCompressedLength), parts: fl.stretches(),
		offsets: make([]int64, 0, fl.Chunks)}
	if w.rawAt <= 0 {
		w.rawAt = math.MaxInt32
	}
	if err := w.write(); err != nil {
		return filledData{}, err
	}
	c := *info
	c.DataLength = fl.DataLength
	c.Offsets = w.offsets
	w.out.Info = &c
	w.out.FileLength = w.off
	w.out.Digest = w.digest.crc
	return w.out, nil
}

// held is an encoded chunk written only once the offset of the verbatim chunks after it is
// known: its record, and the content it encodes (to re-encode it longer).
type held struct {
	rec, content []byte
}

func (w *filledWriter) write() error {
	fl := w.fl
	// With cloning, the chunks before each run of verbatim chunks are held until that run's
	// offset is known: before the first, a head pad (never read) puts it at its parent offset
	// modulo the block size; before each later one, a held record is re-encoded longer by the
	// bytes that do the same (compress.GrowRecord), so every run's whole blocks are shared.
	aligning := w.clone && w.align > 1 && len(fl.Verbatim) > 0
	var pending []held
	var pendingBytes int64
	flush := func() error {
		for _, h := range pending {
			if err := w.emit(h.rec, []int64{0}); err != nil {
				return err
			}
		}
		pending, pendingBytes = nil, 0
		return nil
	}
	first := true
	v := 0
	for c := 0; c < fl.Chunks; {
		var parent int
		var ok bool
		parent, ok, v = fl.chunkSource(c, v)
		if ok {
			s := fl.Verbatim[v]
			n := s.N - (c - s.Chunk)
			if aligning {
				d := w.padFor(parent, w.off+pendingBytes)
				switch {
				case first:
					if err := w.emitPad(d); err != nil {
						return err
					}
				case d > 0:
					w.grow(pending, int(d))
				}
			}
			first = false
			if err := flush(); err != nil {
				return err
			}
			if err := w.moveChunks(parent, n); err != nil {
				return err
			}
			c += n
			continue
		}
		rec, err := w.encode(c)
		if err != nil {
			return err
		}
		if !aligning {
			if err := w.emit(rec, []int64{0}); err != nil {
				return err
			}
			c++
			continue
		}
		pending = append(pending, held{rec: append([]byte(nil), rec...), content: append([]byte(nil), w.buf...)})
		pendingBytes += int64(len(rec))
		if pendingBytes > maxPendingHead {
			// Too much to hold for one alignment: written as it is.
			if first {
				first = false
			}
			if err := flush(); err != nil {
				return err
			}
		}
		c++
	}
	return flush()
}

// grow re-encodes one of the held records by exactly d bytes longer, the last that can be.
func (w *filledWriter) grow(pending []held, d int) {
	for j := len(pending) - 1; j >= 0; j-- {
		if rec, err := compress.GrowRecord(w.codec, pending[j].content, pending[j].rec, d, w.rawAt); err == nil {
			pending[j].rec = rec
			w.out.Grown += int64(d)
			return
		}
	}
}

// emitPad writes the head pad: n zero bytes before the first record, which no reader reads.
func (w *filledWriter) emitPad(n int64) error {
	if n == 0 {
		return nil
	}
	if err := w.emit(make([]byte, n), nil); err != nil {
		return err
	}
	w.out.Encoded -= n
	return nil
}

// padFor is how many bytes put parent chunk p's record, were it written at file offset at, at
// its parent offset modulo the block size.
func (w *filledWriter) padFor(p int, at int64) int64 {
	want := w.parent.Compression.Offsets[p] % w.align
	return ((want-at)%w.align + w.align) % w.align
}

// emit writes b at the current offset; offsets, relative to b, start chunk records.
func (w *filledWriter) emit(b []byte, offsets []int64) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := w.dst.WriteAt(b, w.off); err != nil {
		return err
	}
	for _, o := range offsets {
		w.offsets = append(w.offsets, w.off+o)
	}
	w.fold(crc32.ChecksumIEEE(b), int64(len(b)))
	w.off += int64(len(b))
	w.out.Stats.Copied += int64(len(b))
	w.out.Encoded += int64(len(b))
	return nil
}

func (w *filledWriter) fold(crc uint32, n int64) { w.digest.fold(crc, n) }

// moveChunks moves parent chunks [p, p+n) as they are.
func (w *filledWriter) moveChunks(p, n int) error {
	info := w.parent.Compression
	src := info.Offsets[p]
	end := w.parent.DataFileLength
	if p+n < len(info.Offsets) {
		end = info.Offsets[p+n]
	}
	for k := p; k < p+n; k++ {
		w.offsets = append(w.offsets, w.off+info.Offsets[k]-src)
	}
	st, err := w.mover.Move(w.dst, w.off, w.parent.DataFile(), src, end-src, w.clone)
	if err != nil {
		return err
	}
	w.out.Stats.Cloned += st.Cloned
	w.out.Stats.Copied += st.Copied
	if w.derive {
		d, err := compress.RunDigest(w.parent.DataFile(), info, w.parent.DataFileLength, p, p+n-1, 0, 0)
		if err != nil {
			return err
		}
		w.fold(d, end-src)
	}
	w.off += end - src
	return nil
}

// encode makes child chunk c's record from the stretches it covers.
func (w *filledWriter) encode(c int) ([]byte, error) {
	fl := w.fl
	a := int64(c) * fl.L
	b := min(a+fl.L, fl.DataLength)
	w.buf = w.buf[:0]
	for a < b {
		for w.p < len(w.parts) && w.parts[w.p].At+w.parts[w.p].Len <= a {
			w.p++
		}
		if w.p == len(w.parts) {
			return nil, fmt.Errorf("slice: fill layout: child position %d lies in no stretch", a)
		}
		s := w.parts[w.p]
		n := min(b, s.At+s.Len) - a
		if s.Region >= 0 {
			w.buf = append(w.buf, w.fill[s.Region][a-s.At:a-s.At+n]...)
		} else {
			at := len(w.buf)
			w.buf = append(w.buf, make([]byte, n)...)
			if _, err := w.parent.Data.ReadAt(w.buf[at:], s.PLo+a-s.At); err != nil {
				var ce *compress.ChunkError
				if errors.As(err, &ce) {
					return nil, corruptParent(w.parent, err)
				}
				return nil, fmt.Errorf("%s: reading parent bytes at %d: %w", w.parent.Desc, s.PLo+a-s.At, err)
			}
		}
		a += n
	}
	var err error
	w.rec, err = compress.AppendRecord(w.rec[:0], w.codec, w.buf, w.rawAt)
	return w.rec, err
}
