package slice

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/sluicedb/sluice/internal/lib/crcx"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
)

// ErrCorrupt reports parent bytes that disagree with the checksums the parent stored for
// them (inline chunk CRCs, CRC.db, Digest.crc32). Nothing is written over such bytes: a
// child's fresh checksums would vouch for the corruption.
var ErrCorrupt = errors.New("parent does not match its own checksum")

// ErrUnverifiable reports an uncompressed parent with neither CRC.db nor Digest.crc32: its
// bytes cannot be proven, so no child with new checksums is made from them.
var ErrUnverifiable = errors.New("parent has no checksum to verify its bytes against")

func corruptParent(parent *sstable.Table, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, parent.Path(descriptor.Data), err)
}

// checkProvable makes sure the bytes of parent can be proven before a child is written: a
// compressed parent carries inline chunk CRCs and an uncompressed one CRC.db; an uncompressed
// parent without CRC.db is read whole once against its Digest.crc32, or refused.
func checkProvable(parent *sstable.Table) error {
	if parent.Compression != nil || parent.CRC != nil {
		return nil
	}
	if !parent.Has(descriptor.Digest) {
		return fmt.Errorf("%w: %s has neither CRC.db nor Digest.crc32", ErrUnverifiable, parent.Desc)
	}
	raw, err := os.ReadFile(parent.Path(descriptor.Digest))
	if err != nil {
		return err
	}
	want, err := compress.ParseDigest(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", parent.Path(descriptor.Digest), err)
	}
	h := crc32.NewIEEE()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(parent.DataFile(), 0, parent.DataFileLength), make([]byte, 1<<20)); err != nil {
		return err
	}
	if got := h.Sum32(); got != want {
		return corruptParent(parent, fmt.Errorf("Data.db CRC32 %d, Digest.crc32 says %d", got, want))
	}
	return nil
}

// provenUncompressed feeds the parent's bytes [lo, hi) to w (the child's CRC.db writer) and
// proves them against the parent's CRC.db: the CRC32 of what w saw must equal the one
// compress.RangeDigest derives from CRC.db. Without CRC.db, checkProvable already proved the
// whole file.
func provenUncompressed(parent *sstable.Table, lo, hi int64, w io.Writer) error {
	var want uint32
	if parent.CRC != nil {
		var err error
		if want, err = compress.RangeDigest(parent.DataFile(), parent.CRC, parent.DataFileLength, lo, hi); err != nil {
			return corruptParent(parent, err)
		}
	}
	h := crc32.NewIEEE()
	if _, err := io.CopyBuffer(io.MultiWriter(w, h), io.NewSectionReader(parent.DataFile(), lo, hi-lo), make([]byte, 1<<20)); err != nil {
		return err
	}
	if parent.CRC != nil && h.Sum32() != want {
		err := compress.FindBadSlice(parent.DataFile(), parent.CRC, parent.DataFileLength, lo, hi)
		if err == nil {
			err = fmt.Errorf("bytes [%d, %d) changed while being read", lo, hi)
		}
		return corruptParent(parent, err)
	}
	return nil
}

// provenRecords reads the child's Data.db (l.FileLength bytes, chunk records at
// info.Offsets) and checks every record's inline CRC while computing the child's digest. A
// failure names the parent's chunk and offset.
func provenRecords(parent *sstable.Table, child *os.File, info *compress.Info, l *Layout) (uint32, error) {
	n := l.FileLength
	h := crc32.NewIEEE()
	cc := compress.NewChunkChecker(info.Offsets, n)
	if _, err := io.CopyBuffer(io.MultiWriter(h, cc), io.NewSectionReader(child, 0, n), make([]byte, 1<<20)); err != nil {
		var ce *compress.ChunkError
		if errors.As(err, &ce) { // name the parent's chunk and offset, not the child's
			ce.Chunk, ce.Offset = l.parentChunk(ce.Chunk, ce.Offset)
			ce.What = fmt.Sprintf("chunk %d", ce.Chunk)
		}
		return 0, corruptParent(parent, err)
	}
	if !cc.Done() {
		return 0, corruptParent(parent, fmt.Errorf("%w: %d chunk records verified of %d", compress.ErrLength, cc.Verified(), len(info.Offsets)))
	}
	return h.Sum32(), nil
}

// provenRange checks every chunk of parent holding uncompressed bytes [lo, hi) against its
// stored checksum (inline CRC or CRC.db) in one sequential pass, before a rewrite publishes
// its first child: a rewrite re-serialises rows under new checksums, so a damaged chunk found
// only when its child is written would leave the earlier children visible.
func provenRange(parent *sstable.Table, lo, hi int64) error {
	if hi <= lo {
		return nil
	}
	L := int64(parent.Data.ChunkLength())
	sc := parent.Data.NewScanner(int(lo/L), int((hi-1)/L)+1)
	for sc.Next() {
	}
	if err := sc.Err(); err != nil {
		return corruptParent(parent, err)
	}
	return nil
}

// proveAhead checks, before the first child is written, every parent chunk the children will
// take, when the split would otherwise find a damaged chunk only after publishing earlier
// install batches: more children than one batch, and a mode that proves the bytes it moves
// (an uncompressed parent, rechunk, or a digest computed from the child's bytes). It costs
// one more sequential read of the parent's range; a split that derives its digest from the
// stored CRCs reads nothing and launders nothing, so it is not made to.
func (sp *splitter) proveAhead() error {
	if len(sp.plans) <= installBatch {
		return nil
	}
	proves := sp.parent.Compression == nil || sp.mode == ModeRechunk || (!sp.opts.NoDigest && !sp.digestFromCRCs)
	if !proves {
		return nil
	}
	return provenRange(sp.parent, sp.plans[0].Lo, sp.plans[len(sp.plans)-1].Hi)
}

// LayoutDigest is the CRC32 of the Data.db laid out by l derived from the parent's stored
// checksums rather than from the bytes: the inline chunk CRCs (compressed), or CRC.db with the
// slices a segment cuts read and checked (uncompressed, compress.RangeDigest). A streaming
// sender puts it in the Manifest so that bytes damaged anywhere on their way fail the
// receiver's comparison.
func LayoutDigest(parent *sstable.Table, l *Layout) (uint32, error) {
	switch {
	case parent.Compression != nil:
		return chunkRunDigest(parent.DataFile(), parent.Compression, parent.DataFileLength, l)
	case parent.CRC == nil:
		return 0, fmt.Errorf("%w: %s has no CRC.db", ErrUnverifiable, parent.Desc)
	}
	var crc uint32
	if l.Pad > 0 {
		return 0, fmt.Errorf("slice: LayoutDigest of a padded layout")
	}
	for k, s := range l.Segments {
		d, err := compress.RangeDigest(parent.DataFile(), parent.CRC, parent.DataFileLength, s.SrcOff, s.SrcEnd)
		if err != nil {
			return 0, corruptParent(parent, err)
		}
		if k == 0 {
			crc = d
			continue
		}
		crc = crcx.Combine(crc, d, s.Length())
	}
	return crc, nil
}

// chunkRunDigest derives the CRC32 of a child's Data.db (head pad + chunk records) from the
// parent's inline chunk CRCs, segment by segment (compress.RunDigest: 4 bytes read per chunk,
// and the pad), joined with CRC-32 combination. A damaged parent chunk makes the derived digest
// disagree with the bytes, which verify then reports.
//
// The CRCs are read through a file of their own on which the kernel reads only what is asked
// (fsx.ReadExactly), after the segments' bytes were asked of the device (fsx.Prefetch): each
// 4-byte read would otherwise miss the page cache and start the kernel's readahead, which on a
// device with a large read_ahead_kb (8 MiB on a virtio disk) reads far past each run's end into
// bytes no child holds (a sender of 16 vnode ranges read 1.6x the bytes it sent). The
// segments' bytes are the ones the sender streams next, so they are read once, and nothing else.
func chunkRunDigest(src *os.File, info *compress.Info, fileLength int64, l *Layout) (uint32, error) {
	if f, err := fsx.Reopen(src); err == nil {
		defer f.Close()
		fsx.ReadExactly(f)
		src = f
	}
	for k, s := range l.Segments {
		lo, hi := info.Offsets[s.FirstChunk], fileLength
		if s.LastChunk+1 < len(info.Offsets) {
			hi = info.Offsets[s.LastChunk+1]
		}
		if k == 0 {
			lo -= l.Pad
		}
		fsx.Prefetch(src, lo, hi-lo)
	}
	var crc uint32
	for k, s := range l.Segments {
		padOff, pad := int64(0), int64(0)
		if k == 0 {
			padOff, pad = s.SrcOff-l.Pad, l.Pad
		}
		d, err := compress.RunDigest(src, info, fileLength, s.FirstChunk, s.LastChunk, padOff, pad)
		if err != nil {
			return 0, err
		}
		if k == 0 {
			crc = d
			continue
		}
		crc = crcx.Combine(crc, d, s.Length())
	}
	return crc, nil
}
