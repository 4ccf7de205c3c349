package slice

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"

	"github.com/sluicedb/sluice/internal/crcx"
	"github.com/sluicedb/sluice/internal/fsx"
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
	crc     uint32
	hasCRC  bool
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
	w.out.Digest = w.crc
	return w.out, nil
}

func (w *filledWriter) write() error {
	fl := w.fl
	// Chunks before the first verbatim one are held until the head pad is known.
	var pending []byte
	var pendingOffsets []int64
	holding := w.clone && w.align > 1 && len(fl.Verbatim) > 0
	v := 0
	for c := 0; c < fl.Chunks; {
		var parent int
		var ok bool
		parent, ok, v = fl.chunkSource(c, v)
		if ok {
			s := fl.Verbatim[v]
			n := s.N - (c - s.Chunk)
			if holding {
				pad := w.padFor(parent, int64(len(pending)))
				if err := w.emit(make([]byte, pad), nil); err != nil {
					return err
				}
				if err := w.emit(pending, pendingOffsets); err != nil {
					return err
				}
				pending, pendingOffsets, holding = nil, nil, false
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
		if holding {
			pendingOffsets = append(pendingOffsets, int64(len(pending)))
			pending = append(pending, rec...)
			if len(pending) > maxPendingHead {
				if err := w.emit(pending, pendingOffsets); err != nil {
					return err
				}
				pending, pendingOffsets, holding = nil, nil, false
			}
		} else if err := w.emit(rec, []int64{0}); err != nil {
			return err
		}
		c++
	}
	return w.emit(pending, pendingOffsets)
}

// padFor is the head pad that puts parent chunk p's record, after n bytes of records, at its
// parent offset modulo the block size.
func (w *filledWriter) padFor(p int, n int64) int64 {
	want := w.parent.Compression.Offsets[p] % w.align
	return ((want-n)%w.align + w.align) % w.align
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

func (w *filledWriter) fold(crc uint32, n int64) {
	if !w.hasCRC {
		w.crc, w.hasCRC = crc, true
		return
	}
	w.crc = crcx.Combine(w.crc, crc, n)
}

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
