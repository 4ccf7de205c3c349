package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/generation"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
	"github.com/sluicedb/sluice/wire"
)

// partialInstaller receives a partial child: its Data.db runs as they arrive, its other
// components rebuilt from the index slice (childRebuild). An uncompressed child is received
// straight into the target directory (its runs arrive back to back). A compressed one is
// received into a scratch directory as the sender laid it out (whole parent chunks, dead
// bytes between runs), then filled (refill) into the sstable the commit publishes.
type partialInstaller struct {
	childInstaller
	// pub publishes the filled sstable (compressed), pubDesc; pubData is its Data.db, which
	// the fill writes.
	pub     *fsx.Install
	pubDesc descriptor.Descriptor
	pubData *os.File
}

func newPartialInstaller(f installFiles, scratchPrefix string) (installer, error) {
	p := &partialInstaller{childInstaller: childInstaller{installFiles: f}}
	p.child.files = &p.installFiles
	if f.in.Info != nil && len(f.in.Spans) > 0 {
		// Filled as it arrives: straight into the target directory, every byte written once.
		if err := p.direct(); err != nil {
			p.Abort()
			return nil, err
		}
		if err := p.child.startFill(); err != nil {
			p.Abort()
			return nil, err
		}
		return p, nil
	}
	if f.in.Info == nil {
		if err := p.direct(); err != nil {
			p.Abort()
			return nil, err
		}
		p.child.crcw = compress.NewCRCWriter(f.in.CRCChunkLength)
		return p, nil
	}
	if err := p.inScratch(scratchPrefix); err != nil {
		p.Abort()
		return nil, err
	}
	var err error
	p.pub, p.pubDesc, err = generation.Install(p.dir, p.in.Version, func(inst *fsx.Install, d descriptor.Descriptor) error {
		var err error
		p.pubData, err = inst.Create(d.Filename(descriptor.Data))
		return err
	})
	if err != nil {
		p.Abort()
		return nil, err
	}
	return p, nil
}

// childInstaller is what the partial and rows installers share: the received files and the
// child's rebuild, fed by the data plane (Data.db runs written at their offsets, an
// uncompressed child's CRC.db computed as they arrive; the index and rows slices to the
// rebuild).
type childInstaller struct {
	installFiles
	child childRebuild
}

func (c *childInstaller) write(d *wire.Data) error {
	if d.Stream == wire.StreamRuns && c.child.fill != nil {
		if err := c.child.fill.Write(d.Payload); err != nil {
			return c.fillErr(err)
		}
		return nil
	}
	if d.Stream == wire.StreamRuns {
		if c.child.crcw != nil {
			c.child.crcw.Write(d.Payload)
		}
		return c.writeAt(c.dataW, d.Payload, int64(d.Offset))
	}
	return c.child.write(d)
}

func (c *childInstaller) writable(d *wire.Data, n int64) (Writable, int64) {
	if d.Stream != wire.StreamRuns {
		return nil, 0
	}
	if c.child.fill != nil {
		// Filled in place: only bytes written through at their place in the child.
		if at, ok := c.child.fill.Placeable(n); ok {
			return c.dataW, at
		}
		return nil, 0
	}
	return c.dataW, int64(d.Offset)
}
func (c *childInstaller) took(d *wire.Data) { c.child.took(d) }

func (c *childInstaller) placed(d *wire.Data, b []byte) error {
	if d.Stream != wire.StreamRuns {
		return nil
	}
	if c.child.fill != nil {
		if err := c.child.fill.Placed(b); err != nil {
			return c.fillErr(err)
		}
	}
	if c.child.crcw != nil {
		c.child.crcw.Write(b)
	}
	return nil
}

// fillErr says what failed filling the received runs in place: a chunk or layout that does
// not hold (a checksum failure, the sstable's fault) or the write (the target's).
func (f *installFiles) fillErr(err error) error {
	if errors.Is(err, compress.ErrChecksum) || errors.Is(err, slice.ErrCorrupt) {
		return fmt.Errorf("%w: filling %s as it arrives: %w", ErrChecksum, f.in.ID, err)
	}
	return f.writeErr(err)
}

// resumeFill restarts the in-place fill after the clean point st of an earlier session,
// whose written child Data.db is kept at path: the prefix is copied and proven (every
// chunk's CRC, the digest), and the received bytes' accounting taken up after it.
func (p *partialInstaller) resumeFill(path string, st slice.FillState) error {
	if p.child.fill == nil {
		return fmt.Errorf("%w: %s's kept prefix was filled in place, this receive is not", ErrManifest, p.in.ID)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := p.child.fill.Resume(st, f); err != nil {
		if errors.Is(err, compress.ErrChecksum) || errors.Is(err, slice.ErrCorrupt) {
			return fmt.Errorf("%w: the kept Data.db prefix %s: %w", ErrChecksum, path, err)
		}
		return fmt.Errorf("the kept Data.db prefix %s: %w", path, err)
	}
	return p.in.resumedAt(st.Chunks, st.Bytes, st.RecvDigest)
}

func (p *partialInstaller) publishes() (descriptor.Descriptor, bool) {
	if p.pub != nil {
		return p.pubDesc, true
	}
	return p.desc, true
}

// Finish rebuilds the child's components and, compressed, fills it; the shared commit (or
// its own) publishes it.
func (p *partialInstaller) Finish(ctx context.Context) (*pending, error) {
	partitions, err := p.child.seal()
	if err != nil {
		p.Abort()
		return nil, err
	}
	if f := p.child.filled; f != nil {
		strict, err := p.verifyStrict()
		if err != nil {
			p.Abort()
			return nil, err
		}
		return &pending{install: p.inst, final: p.desc, partitions: partitions, strict: strict,
			fill: fill{runs: f.Runs, fillerPartitions: f.FillerPartitions, fillerBytes: f.FillerBytes, encodedBytes: f.EncodedBytes}}, nil
	}
	if p.pub == nil {
		strict, err := p.verifyStrict()
		if err != nil {
			p.Abort()
			return nil, err
		}
		return &pending{install: p.inst, final: p.desc, partitions: partitions, strict: strict}, nil
	}
	filled, err := p.refill(ctx, partitions)
	if err != nil {
		p.Abort()
		return nil, err
	}
	// The sender's own fillers (a parent sluice filled) arrived as partitions.
	return &pending{install: p.pub, final: p.pubDesc, partitions: filled.Partitions, scratch: p.scratch,
		fill: fill{runs: filled.Runs, fillerPartitions: filled.FillerPartitions, fillerBytes: filled.FillerBytes, encodedBytes: filled.EncodedBytes}}, nil
}

// verifyStrict verifies the sealed child as published, strictly, under Config.VerifyStrict
// (what a Cassandra sidecar's import would otherwise do after the fetch; here it runs on the
// commit's goroutine while the next sstables stream). The ranges are the rebuild's to hold
// (each partition's token checked as its index entry was made): the filler partitions lie
// between them. false when not asked to.
func (p *partialInstaller) verifyStrict() (bool, error) {
	if !p.strict {
		return false, nil
	}
	if _, err := verifyUncommitted(p.inst, p.desc, nil, true); err != nil {
		return false, err
	}
	return true, nil
}

// refill makes the received partial, proven and rebuilt in the scratch directory as the
// sender laid it out, into the sstable the installer publishes: every byte of its data in a
// partition its index addresses (slice.Slice over the session's ranges, each run ending at
// its last partition's end, filler partitions where the runs leave gaps), so that
// Cassandra's sequential readers read it as its index does, whatever the sender's version.
// The scratch copy is removed; the filled one waits for the commit.
func (p *partialInstaller) refill(ctx context.Context, partitions int64) (slice.Child, error) {
	if err := p.inst.Publish(); err != nil {
		return slice.Child{}, err
	}
	recv, err := sstable.Open(p.desc.Prefix())
	if err != nil {
		return slice.Child{}, fmt.Errorf("%w: opening the received partial: %w", ErrChecksum, err)
	}
	defer recv.Close()
	ranges := p.in.Ranges
	if len(ranges) == 0 {
		// A session without ranges (tests' receivers) took the whole ring.
		min := recv.Partitioner.MinToken()
		ranges = token.RangeSet{{Left: min, Right: min}}
	}
	res, err := slice.Slice(ctx, recv, ranges, p.dir, slice.Options{Mode: slice.ModeAuto, ExactEnds: true,
		Into: &slice.Target{Inst: p.pub, Desc: p.pubDesc, Data: p.pubData}})
	switch {
	case errors.Is(err, slice.ErrCorrupt) || errors.Is(err, sstable.ErrCorrupt):
		return slice.Child{}, fmt.Errorf("%w: filling the received partial %s: %w", ErrChecksum, p.in.ID, err)
	case err != nil:
		return slice.Child{}, fmt.Errorf("filling the received partial %s: %w", p.in.ID, err)
	}
	if c := res.Children; len(c) != 1 || c[0].Partitions+c[0].FillerPartitions < partitions {
		return slice.Child{}, fmt.Errorf("%w: filling %d received partitions of %s gave %d sstables", ErrManifest, partitions, p.in.ID, len(res.Children))
	}
	recv.Close()
	if err := os.RemoveAll(p.scratch); err == nil {
		p.scratch = ""
	}
	return res.Children[0], nil
}

func (p *partialInstaller) Abort() {
	p.child.stop()
	p.abort()
	if p.pub != nil {
		p.pub.Abort()
	}
}

// childRebuild rebuilds a child's components (partial and rows) from its index slice: as the
// slice arrives (slice.PartialRebuild on a goroutine of its own, rebuildFeed), a BIG child's
// right away, a BTI child's once its rows slice, which the records point into and the sender
// sends first, is in; index frames that come before that wait in memory (bounded by
// Config.MaxIndexSlice).
type childRebuild struct {
	files   *installFiles
	reader  *os.File // Data.db read back for an IndexPositions slice's keys, when its Writable has no file
	index   []byte
	rows    []byte
	rebuild *slice.PartialRebuild
	lay     *slice.Layout // the in-place fill's rebuild layout
	feed    *rebuildFeed
	crcw    *compress.CRCWriter // an uncompressed child's CRC.db, from the runs as they arrive
	// fill lays a compressed child out as its runs arrive (Incoming.Spans), filled, writing
	// Data.db; filled is what it made, once sealed.
	fill   *slice.InPlaceFill
	filled *slice.FilledData
}

// startFill prepares the in-place fill of the received runs into the Data.db being written.
func (c *childRebuild) startFill() error {
	in := c.files.in
	spec, err := slice.SpecFromStatistics(in.Version, in.Manifest.Statistics, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrManifest, err)
	}
	ranges := in.Ranges
	if len(ranges) == 0 {
		// A session without ranges (tests' receivers) took the whole ring.
		min := spec.Partitioner.MinToken()
		ranges = token.RangeSet{{Left: min, Right: min}}
	}
	// The rebuild of a positions slice reads the keys back from the chunks written.
	var src io.ReaderAt
	if f := c.files.dataW.File(); f != nil {
		src = f
	} else {
		if c.reader, err = os.Open(c.files.dataW.Name()); err != nil {
			return err
		}
		src = c.reader
	}
	c.fill, err = slice.NewInPlaceFill(in.Layout, in.Info, slice.InPlaceOptions{Spec: spec, Ranges: ranges, Runs: in.Spans}, c.files.dataW, src)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrManifest, err)
	}
	in.fillClean = c.fill.Clean
	return nil
}

// layout is the layout the rebuild maps parent positions with: the received one, or the
// in-place fill's, laid out as the rebuild goes.
func (c *childRebuild) layout() *slice.Layout {
	if c.fill != nil {
		if c.lay == nil {
			c.lay = c.fill.RebuildLayout()
		}
		return c.lay
	}
	return c.files.in.Layout
}

// write takes an index or rows slice frame.
func (c *childRebuild) write(d *wire.Data) error {
	switch d.Stream {
	case wire.StreamIndex:
		if c.feed == nil && c.rowsIn() {
			if err := c.start(); err != nil {
				return err
			}
		}
		if c.feed != nil {
			if err := c.feed.Write(d.Payload); err != nil {
				return fmt.Errorf("%w: %w", ErrManifest, err)
			}
			return nil
		}
		if c.index == nil {
			// Its length is announced (and bounded by MaxIndexSlice): one allocation, not a
			// doubling series whose garbage peaks at twice the slice.
			c.index = make([]byte, 0, c.files.in.Manifest.IndexSliceLength)
		}
		c.index = append(c.index, d.Payload...)
		return nil
	case wire.StreamComponent:
		c.rows = append(c.rows, d.Payload...)
		if c.index != nil && c.rowsIn() {
			// The index frames that came first go to the rebuild now.
			if err := c.start(); err != nil {
				return err
			}
			held := c.index
			c.index = nil
			if err := c.feed.Write(held); err != nil {
				return fmt.Errorf("%w: %w", ErrManifest, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: stream %v", ErrProtocol, d.Stream)
}

// rowsIn reports whether the index slice can be rebuilt as it arrives: always for BIG, for
// BTI once the whole rows slice is in.
func (c *childRebuild) rowsIn() bool {
	in := c.files.in
	if in.Version.Format == version.Big {
		return true
	}
	return uint64(len(c.rows)) == in.Manifest.Components[0].Length
}

// start starts the child's rebuild from the manifest (and, BTI, the rows slice) and the
// goroutine that feeds it.
func (c *childRebuild) start() error {
	f := c.files
	spec, err := slice.SpecFromStatistics(f.in.Version, f.in.Manifest.Statistics, c.rows)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrManifest, err)
	}
	opts, err := c.options()
	if err != nil {
		return err
	}
	if c.rebuild, err = slice.NewPartialRebuild(spec, f.inst, f.desc, c.layout(), opts); err != nil {
		return fmt.Errorf("%w: rebuilding: %w", ErrManifest, err)
	}
	c.feed = newRebuildFeed(c.rebuild)
	c.feed.arrived(int64(f.in.got[0])) // a positions slice's keys are read from Data.db as it comes
	return nil
}

// took tells the rebuild, if one runs, how much of Data.db is in place and checked, after
// a runs frame was.
func (c *childRebuild) took(d *wire.Data) {
	if c.feed != nil && d.Stream == wire.StreamRuns {
		c.feed.arrived(int64(c.files.in.got[0]))
	}
}

// options says what the index slice is and what it must hold: the announced count, its
// format and the ranges the session asked for; and, for an IndexPositions slice, the
// received Data.db its keys are read from.
func (c *childRebuild) options() (slice.RebuildOptions, error) {
	in := c.files.in
	m := in.Manifest
	opts := slice.RebuildOptions{Partitions: int64(m.Partitions), Format: slice.IndexFormat(m.IndexFormat), Ranges: in.Ranges,
		Compression: in.Info}
	if c.fill != nil {
		opts.Fill = c.fill
	}
	if opts.Format != slice.IndexPositions || c.fill != nil {
		return opts, nil
	}
	if f := c.files.dataW.File(); f != nil {
		opts.Data = f
		return opts, nil
	}
	if c.reader == nil {
		var err error
		if c.reader, err = os.Open(c.files.dataW.Name()); err != nil {
			return opts, err
		}
	}
	opts.Data = c.reader
	return opts, nil
}

// seal finishes the received files and rebuilds the others: every file of the install is
// written, nothing is synced or published yet. It returns the partition count.
func (c *childRebuild) seal() (int64, error) {
	f := c.files
	in, m := f.in, f.in.Manifest
	if c.fill != nil {
		filled, err := c.fill.Finish()
		if err != nil {
			return 0, c.files.fillErr(err)
		}
		c.filled = &filled
	}
	if err := f.finishFiles(); err != nil {
		return 0, err
	}
	spec, err := slice.SpecFromStatistics(in.Version, m.Statistics, c.rows)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	var partitions int64
	if c.feed != nil {
		if err := c.feed.wait(); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrManifest, err)
		}
	}
	if c.rebuild != nil {
		partitions = c.rebuild.Records()
	} else if partitions, err = slice.CountIndexSlice(c.index, slice.IndexFormat(m.IndexFormat)); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	if uint64(partitions) != m.Partitions {
		return 0, fmt.Errorf("%w: index slice holds %d partitions, manifest says %d", ErrManifest, partitions, m.Partitions)
	}
	// The bytes must be the parent's: the digest the sender derived from the parent's
	// stored checksums, sent on the control stream, against what arrived.
	if in.Digest() != m.Digest {
		return 0, fmt.Errorf("%w: Data.db CRC32 %08x, the manifest's digest of the parent's checksums %08x", ErrChecksum, in.Digest(), m.Digest)
	}
	data := slice.DataResult{Compression: in.Info, DataLength: int64(m.DataLength), FileLength: int64(m.DataFileLength),
		Digest: in.Digest(), HasDigest: true}
	if c.crcw != nil {
		data.CRC, data.Digest = c.crcw.Result()
	}
	if fd := c.filled; fd != nil {
		data = slice.DataResult{Compression: fd.Info, DataLength: fd.DataLength, FileLength: fd.FileLength, Digest: fd.Digest, HasDigest: true}
		if c.rebuild == nil {
			// The whole slice waited for the rows slice (BTI): rebuilt now, laid out as it goes.
			var opts slice.RebuildOptions
			if opts, err = c.options(); err == nil {
				c.rebuild, err = slice.NewPartialRebuild(spec, f.inst, f.desc, c.layout(), opts)
			}
			if err == nil {
				err = c.rebuild.Write(c.index)
			}
			if err != nil {
				c.closeReader()
				return 0, fmt.Errorf("%w: rebuilding: %w", ErrManifest, err)
			}
		}
	}
	if c.rebuild != nil {
		_, err = c.rebuild.Finish(data)
	} else {
		// partitions is the Manifest's (checked above).
		var opts slice.RebuildOptions
		if opts, err = c.options(); err == nil {
			_, err = slice.RebuildPartial(spec, f.inst, f.desc, in.Layout, c.index, data, opts)
		}
	}
	c.closeReader()
	if err != nil {
		return 0, fmt.Errorf("%w: rebuilding: %w", ErrManifest, err)
	}
	if c.filled != nil {
		inherited, err := c.verifyEnds()
		if err != nil {
			return 0, err
		}
		partitions -= inherited
	}
	// The slices are in the rebuilt files now; a sealed sstable waiting for a shared commit
	// holds no more than its open files.
	c.index, c.rows, c.rebuild = nil, nil, nil
	return partitions, nil
}

// verifyEnds proves that each run of a child filled in place ends exactly at its last
// partition's end, as the sender claimed (wire.Span): otherwise bytes no partition owns would
// sit inside the child. It returns how many of the partitions are a sluice-filled parent's
// filler partitions, passed on.
func (c *childRebuild) verifyEnds() (int64, error) {
	fd := c.filled
	r := c.files.dataW.File()
	if r == nil {
		f, err := os.Open(c.files.dataW.Name())
		if err != nil {
			return 0, err
		}
		defer f.Close()
		r = f
	}
	if err := c.fill.VerifyEnds(r, fd.Info, fd.FileLength, c.rebuild.RunLasts()); err != nil {
		return 0, c.files.fillErr(err)
	}
	n, err := c.fill.CountFillers(r, fd.Info, fd.FileLength, c.rebuild.MaybeFillers())
	if err != nil {
		return 0, c.files.fillErr(err)
	}
	return n, nil
}

// stop waits for a rebuild in progress, which writes into the install's files, before they
// are removed.
func (c *childRebuild) stop() {
	if c.feed != nil {
		_ = c.feed.wait()
	}
	c.closeReader()
}

func (c *childRebuild) closeReader() {
	if c.reader != nil {
		c.reader.Close()
		c.reader = nil
	}
}
