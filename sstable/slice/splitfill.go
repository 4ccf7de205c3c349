package slice

import (
	"errors"
	"fmt"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/compress"
	"os"

	"github.com/sluicedb/sluice/sstable"
)

// copyChunks lays the child out so that every byte of its data belongs to a partition its
// index addresses (fill.go): the parent's whole chunks inside each run moved as they are
// (cloned where it can), the chunks at the runs' edges re-encoded with filler partitions in
// the gaps between runs.
func (sp *splitter) copyChunks(oc *openChild, dst *os.File) error {
	info := sp.parent.Compression
	// Clone only where the directory has shown it can: elsewhere (auto on ext4) the moves copy,
	// and growing edge records to keep later runs block-aligned would buy nothing.
	clone := sp.mode == ModeReflink || (sp.mode == ModeAuto && sp.opts.Mover.Reflink(sp.dir) != fsx.CapabilityUnsupported)
	fm, why := sp.fillerMaker()
	var fl fillLayout
	var fill [][]byte
	var regions []regionKeys
	var unfilled map[int]bool
	for {
		fl = planFill(int64(info.ChunkLength), oc.plan.Runs, fm.minRegion(), unfilled)
		var err error
		fill, regions, err = sp.fillers(fm, &fl)
		var nf *noFillerError
		if !errors.As(err, &nf) {
			if err != nil {
				return err
			}
			break
		}
		// No filler fits the gap before that run: it is re-encoded off the grid instead.
		why = nf.Error()
		if unfilled == nil {
			unfilled = map[int]bool{}
		}
		unfilled[nf.run] = true
	}
	if err := fl.check(); err != nil {
		return err
	}
	// The digest: none (--no-digest), derived from the parent's stored CRCs (a cached parent), or
	// computed over the written child, every chunk proven on the way (provenRecords, below).
	derive := sp.digestFromCRCs && !sp.opts.NoDigest
	fd, err := writeFilled(sp.parent, &fl, fill, dst, sp.opts.Mover, clone, sp.align, derive)
	if err != nil {
		return err
	}
	sp.cloned += fd.Stats.Cloned
	oc.layout = fl.layout()
	oc.layout.FileLength = fd.FileLength
	oc.regions = regions
	oc.data = DataResult{Compression: fd.Info, DataLength: fl.DataLength, FileLength: fd.FileLength, HasDigest: !sp.opts.NoDigest, Digest: fd.Digest}
	if !sp.opts.NoDigest && !derive {
		// A digest of the bytes themselves: prove every chunk first.
		if oc.data.Digest, err = provenRecords(sp.parent, dst, fd.Info, &oc.layout); err != nil {
			return err
		}
	}
	var fillers int64
	for _, r := range regions {
		fillers += int64(len(r.keys))
	}
	oc.child = Child{Cloned: fd.Stats.Cloned, Copied: fd.Stats.Copied, FillerPartitions: fillers,
		FillerBytes: fl.fillerBytes(), EncodedBytes: fd.Encoded}
	if fl.Encoded > 0 && why != "" {
		oc.child.Reencoded = fmt.Sprintf("%d runs re-encoded: %s", fl.Encoded, why)
	}
	return nil
}

// noFillerError is a filler region that could not be made, before run.
type noFillerError struct {
	run int
	err error
}

func (e *noFillerError) Error() string { return e.err.Error() }
func (e *noFillerError) Unwrap() error { return e.err }

// regionKeys are the filler partitions of one region, at child positions.
type regionKeys struct {
	run  int
	keys []fillerKey // Off is the child position
}

// fillerMaker is the parent's filler maker, made once, or nil with why none can be.
func (sp *splitter) fillerMaker() (*fillerMaker, string) {
	if !sp.fillerDone {
		sp.fillerDone = true
		t, err := sp.schema()
		if err != nil {
			sp.fillerWhy = err.Error()
		} else {
			sp.filler, sp.fillerWhy = newFillerMaker(t, sp.parent.Version(), sp.parent.Partitioner)
		}
	}
	return sp.filler, sp.fillerWhy
}

// fillers makes the filler bytes of fl's regions, each keyed just below the first partition of
// the run it precedes, inside that run's range.
func (sp *splitter) fillers(fm *fillerMaker, fl *fillLayout) ([][]byte, []regionKeys, error) {
	if len(fl.Regions) == 0 {
		return nil, nil, nil
	}
	fill := make([][]byte, len(fl.Regions))
	keys := make([]regionKeys, len(fl.Regions))
	for i, r := range fl.Regions {
		first, err := readKey(sp.parent, fl.Runs[r.Run].Lo)
		if err != nil {
			return nil, nil, err
		}
		tok := sp.parent.Partitioner.Token(first)
		k, in := sp.pieces.locate(tok)
		if !in {
			return nil, nil, fmt.Errorf("%w: %s: the partition at %d (token %s) lies in none of the ranges", ErrCorrupt, sp.parent.Desc, fl.Runs[r.Run].Lo, tok)
		}
		b, ks, err := fm.region(r.Len, sp.pieces.pieces[k].r.Left, tok, first)
		if errors.Is(err, errNoFiller) {
			return nil, nil, &noFillerError{run: r.Run, err: err}
		}
		if err != nil {
			return nil, nil, err
		}
		for j := range ks {
			ks[j].Off += r.At
		}
		fill[i], keys[i] = b, regionKeys{run: r.Run, keys: ks}
	}
	return fill, keys, nil
}

// readKey reads the key of the parent's partition at uncompressed position pos.
func readKey(t *sstable.Table, pos int64) ([]byte, error) {
	var n [2]byte
	if _, err := t.Data.ReadAt(n[:], pos); err != nil {
		return nil, corruptParent(t, err)
	}
	key := make([]byte, int(n[0])<<8|int(n[1]))
	if _, err := t.Data.ReadAt(key, pos+2); err != nil {
		return nil, corruptParent(t, err)
	}
	return key, nil
}

// addFillers adds the filler partitions of the regions before run (and any before it not yet added).
func (oc *openChild) addFillers(run int) error {
	for ; oc.nextRegion < len(oc.regions) && oc.regions[oc.nextRegion].run <= run; oc.nextRegion++ {
		for _, k := range oc.regions[oc.nextRegion].keys {
			if err := oc.builder.AddFiller(k.Key, k.Tok, k.Off); err != nil {
				return err
			}
		}
	}
	return nil
}

// inherit checks whether oc's last added partition, which ends at next (the partition just
// added, or -1: where its run ends), is one of the parent's filler partitions. Only a
// partition of exactly a filler's size is read: its bytes decide.
func (sp *splitter) inherit(oc *openChild, next int64) error {
	l := oc.last
	if !l.ok || l.run == oc.run && next == l.pos {
		return nil
	}
	end := next
	if next < 0 || l.run != oc.run {
		end = oc.plan.Runs[l.run].Hi
	}
	// Only an empty filler (sized by its key) is found by its size alone; the cell-sized
	// fillers of other key types would cost a read of every small partition, and are
	// counted as partitions when passed on (docs/OPERATIONS.md).
	over, err := sp.emptyOverhead()
	if err != nil || end-l.pos != over+int64(l.keyLen) {
		return err
	}
	b := make([]byte, end-l.pos)
	if _, err := sp.parent.Data.ReadAt(b, l.pos); err != nil {
		return corruptParent(sp.parent, err)
	}
	if sstable.IsFiller(sp.table, sp.parent.Version(), b) {
		oc.inherited++
	}
	return nil
}

// emptyOverhead is the size of an empty partition of the parent's table less its key.
func (sp *splitter) emptyOverhead() (int64, error) {
	if sp.over == 0 {
		t, err := sp.schema()
		if err != nil {
			return 0, err
		}
		if sp.over, err = sstable.EmptyOverhead(t, sp.parent.Version()); err != nil {
			return 0, err
		}
	}
	return sp.over, nil
}

// fillerCount is the number of filler partitions the child holds.
func (oc *openChild) fillerCount() int64 {
	var n int64
	for _, r := range oc.regions {
		n += int64(len(r.keys))
	}
	return n
}

// copyUncompressed copies the runs of an uncompressed parent back to back (behind a head pad
// in reflink mode) and proves their bytes against the parent's CRC.db (provenUncompressed: a
// damaged slice fails the child, never laundered into a fresh checksum) while checksumming
// them for the child's CRC.db and digest, as Cassandra's ChecksummedSequentialWriter would. A
// parent without CRC.db was proven whole against its Digest.crc32 (checkProvable).
func (sp *splitter) copyUncompressed(oc *openChild, dst *os.File) error {
	// No head pad: uncompressed, it would be data that a sequential reader parses. The runs
	// sit back to back, so the child has no byte outside a partition.
	oc.layout = NewLayout(geometry(sp.parent, sp.spec.CRCChunkLength), oc.plan.Runs, 1)
	l := &oc.layout
	st, err := sp.moveSegments(l, dst, sp.mode != ModeCopy && sp.mode != ModeRechunk)
	if err != nil {
		return err
	}
	cw := compress.NewCRCWriter(sp.spec.CRCChunkLength)
	for _, s := range l.Segments {
		if err := provenUncompressed(sp.parent, s.SrcOff, s.SrcEnd, cw); err != nil {
			return err
		}
	}
	crcs, digest := cw.Result()
	oc.data = DataResult{CRC: crcs, DataLength: l.DataLength, FileLength: l.FileLength, Digest: digest, HasDigest: !sp.opts.NoDigest}
	oc.child = Child{Cloned: st.Cloned, Copied: st.Copied}
	return nil
}
