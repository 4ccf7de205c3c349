package slice

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
)

// rechunk decompresses the parent chunks holding the child's runs and recompresses exactly the
// runs' bytes, back to back, into fresh chunks: no dead bytes, and a child that stock Cassandra
// verify and scrub accept. Rows are not parsed.
func (sp *splitter) rechunk(oc *openChild, dst *os.File) error {
	info := sp.parent.Compression
	bw := fsx.NewAsyncWriter(dst, 1<<20, 4)
	w, err := compress.NewWriter(bw, compress.WriterOptions{Version: sp.parent.Version(), Compressor: info.Compressor,
		Options: info.Options, ChunkLength: info.ChunkLength, MaxCompressedLength: rawThreshold(sp.parent)})
	if err != nil {
		return err
	}
	var off int64
	l := Layout{Compressed: true, ChunkLength: int64(info.ChunkLength)}
	for _, r := range oc.plan.Runs {
		if err = rechunkRun(sp.parent, r, w); err != nil {
			break
		}
		l.Segments = append(l.Segments, Segment{PLo: r.Lo, PHi: r.Hi, Shift: r.Lo - off, Runs: 1})
		off += r.Hi - r.Lo
	}
	res, cerr := w.Close()
	if err := errors.Join(err, cerr, bw.Close()); err != nil {
		return err
	}
	l.DataLength, l.FileLength = res.DataLength, res.FileLength
	oc.layout = l
	oc.data = DataResult{Compression: res.Info, DataLength: res.DataLength, FileLength: res.FileLength, Digest: res.Digest, HasDigest: !sp.opts.NoDigest}
	oc.child = Child{Copied: res.FileLength}
	return nil
}

// rechunkUncompressed writes the runs of an uncompressed parent back to back, checking every
// parent CRC.db chunk it takes bytes from before the child's fresh CRC.db covers them: no dead
// bytes, and nothing laundered.
func (sp *splitter) rechunkUncompressed(oc *openChild, dst *os.File) error {
	C := int64(sp.spec.CRCChunkLength)
	cw := compress.NewCRCWriter(sp.spec.CRCChunkLength)
	bw := bufio.NewWriterSize(io.MultiWriter(dst, cw), 1<<20)
	buf := make([]byte, C)
	path := sp.parent.Path(descriptor.Data)
	l := Layout{ChunkLength: C}
	var off int64
	for _, r := range oc.plan.Runs {
		for k := r.Lo / C; k*C < r.Hi; k++ {
			n := min(C, sp.parent.DataLength()-k*C)
			if _, err := sp.parent.DataFile().ReadAt(buf[:n], k*C); err != nil {
				return fmt.Errorf("%s: reading chunk %d: %w", path, k, err)
			}
			if crc := sp.parent.CRC; crc != nil {
				if k >= int64(len(crc.CRCs)) || crc32.ChecksumIEEE(buf[:n]) != crc.CRCs[k] {
					return fmt.Errorf("%w: %s: chunk %d (offset %d) does not match CRC.db", ErrCorrupt, path, k, k*C)
				}
			}
			lo, hi := max(r.Lo-k*C, 0), min(r.Hi-k*C, n)
			if _, err := bw.Write(buf[lo:hi]); err != nil {
				return err
			}
		}
		l.Segments = append(l.Segments, Segment{PLo: r.Lo, PHi: r.Hi, Shift: r.Lo - off, Runs: 1})
		off += r.Hi - r.Lo
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	l.DataLength, l.FileLength = off, off
	oc.layout = l
	crcs, digest := cw.Result()
	oc.data = DataResult{CRC: crcs, DataLength: off, FileLength: off, Digest: digest, HasDigest: !sp.opts.NoDigest}
	oc.child = Child{Copied: off}
	return nil
}

// rechunkRun writes the parent's uncompressed bytes [r.Lo, r.Hi) to w.
func rechunkRun(parent *sstable.Table, r RunPlan, w *compress.Writer) error {
	L := int64(parent.Compression.ChunkLength)
	sc := parent.Data.NewScanner(int(r.Lo/L), int((r.Hi-1)/L)+1)
	for sc.Next() {
		b := sc.Bytes()
		start := sc.Offset()
		lo, hi := max(r.Lo-start, 0), min(r.Hi-start, int64(len(b)))
		if lo < hi {
			if _, err := w.Write(b[lo:hi]); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}
