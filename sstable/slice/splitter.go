package slice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/generation"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
)

// splitter runs the zero-copy modes: one index pass, a child started (data moved, builder
// opened) at its first partition and finished at its last; partitions between its runs are
// passed over.
type splitter struct {
	parent   *sstable.Table
	spec     *Spec
	plans    []ChildPlan
	dir      string
	mode     Mode
	opts     Options
	align    int64
	children []Child

	next    int // next plan to start
	cur     *openChild
	pending []*openChild // built, waiting to be installed together (the finisher's)
	lastEnd int64        // end of the last Rows.db entry seen (BTI)
	cloned  int64        // the preparer's (prepareAhead), read once it is done
	// prevTok is the token of the partition before (its bytes copied into prevBuf): plans
	// derived from samples (SplitEqual) hold only if the index is in token order.
	prevTok token.Token
	prevBuf []byte
	hasPrev bool          // prevTok is set
	prevOrd int64         // the ordinal of the partition prevTok is of
	table   *schema.Table // the parent's, compiled when a filler is first made
	pieces  *Pieces       // the requested ranges: filler keys stay inside them
	over    int64         // an empty partition's size less its key (emptyOverhead), once known
	// filler makes filler partitions (nil: the key type has none, fillerWhy says why).
	filler     *fillerMaker
	fillerWhy  string
	fillerDone bool
	// digestFromCRCs derives digests from inline CRCs instead of reading children.
	digestFromCRCs bool
	// derived: the plans were derived without the planner's pass over the index (SplitEqual),
	// covering every partition; the index pass checks them (errStalePlan).
	derived bool
	seen    int64 // partitions the index pass has met
}

// errStalePlan reports an index that disagrees with plans derived before the split's index
// pass (a child's first partition is not where its plan says, or the index ends elsewhere).
// SplitEqual plans again from a whole pass when its plans came from Summary.db.
var errStalePlan = errors.New("the index disagrees with the split's plan")

type openChild struct {
	plan    ChildPlan
	run     int // the plan's run the scan is in or before
	begun   int // the run whose partitions the builder is taking
	inst    *fsx.Install
	desc    descriptor.Descriptor
	layout  Layout
	builder *Builder
	data    DataResult
	child   Child
	// regions are the child's filler partitions by the run they precede; nextRegion is the
	// first not yet added to the builder.
	regions    []regionKeys
	nextRegion int
	// last is the last partition added; inherited counts the parent's own filler partitions
	// among the child's (a parent that sluice filled), found as each one's end is known.
	last      lastPartition
	inherited int64
}

// lastPartition is where a child's last added partition starts, in the parent.
type lastPartition struct {
	pos    int64
	keyLen int
	run    int
	ok     bool
}

func newSplitter(parent *sstable.Table, plans []ChildPlan, dir string, mode Mode, opts Options) (*splitter, error) {
	spec, err := SpecOf(parent)
	if err != nil {
		return nil, err
	}
	if opts.Digest == DigestNever {
		opts.NoDigest = true
	}
	if opts.Digest == DigestAuto && parent.Compression != nil &&
		(mode == ModeReflink || (mode == ModeAuto && opts.Mover != nil && opts.Mover.Reflink(dir) == fsx.CapabilitySupported)) {
		opts.NoDigest = true // see DigestAuto
	}
	sp := &splitter{parent: parent, spec: spec, plans: plans, dir: dir, mode: mode, opts: opts, align: 1}
	// A digest from the inline CRCs reads 4 bytes per chunk: cheap from the page cache, but
	// from the device each read waits for a page. When the parent is mostly not cached, one
	// sequential read of the child's bytes is faster.
	if parent.Compression != nil && !opts.NoDigest {
		if resident, err := fsx.ResidentBytes(parent.DataFile()); err == nil && resident*2 >= parent.DataFileLength {
			sp.digestFromCRCs = true
		}
	}
	if mode == ModeReflink || mode == ModeAuto {
		if sp.align, err = fsx.BlockSize(dir); err != nil || sp.align < 1 {
			sp.align = 1
		}
	}
	return sp, nil
}

func (sp *splitter) usedMode() Mode {
	switch {
	case sp.mode == ModeRechunk:
		return ModeRechunk
	case sp.cloned > 0:
		return ModeReflink
	}
	return ModeCopy
}

// run makes the children in three overlapping stages, so that a split uses a second core: a
// preparer moves each child's Data.db bytes (clone or copy, dead-head fill, digest) in plan
// order, one child ahead of the index pass; the index pass (this goroutine) feeds each child's
// partitions to its builder; a finisher writes each built child's remaining components and
// installs them in batches. Generations are still taken in plan order (the preparer's), and a
// failure anywhere stops the others and discards every child not yet installed.
func (sp *splitter) run(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pre := sp.prepareAhead(ctx)
	fin := sp.startFinisher()
	defer func() {
		if err != nil && sp.cur != nil {
			_ = sp.cur.inst.Abort()
		}
		sp.cur = nil
		cancel()
		for p := range pre { // the preparer stops at the cancel; discard what it made
			if p.oc != nil {
				_ = p.oc.inst.Abort()
			}
		}
		err = errors.Join(err, fin.close(err == nil))
		if errors.Is(err, errFinisherFailed) {
			err = fin.err // the finisher's own error says what failed
		}
	}()
	// A BTI parent's keys are read for the children's partitions only (scanLazy), and their
	// order checked among them: the trie walk itself is in key order.
	err = scanLazy(sp.parent, true, func(lp *lazyPartition) error {
		p := &lp.Partition
		if p.Ordinal%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		lazy := lp.e != nil
		if !lazy {
			if err := sp.inOrder(p); err != nil {
				return err
			}
		}
		if sp.cur != nil && p.Ordinal > sp.cur.plan.LastOrdinal() {
			if err := sp.inherit(sp.cur, -1); err != nil {
				return err
			}
			if err := fin.take(sp.cur); err != nil {
				return err
			}
			sp.cur = nil
		}
		sp.seen = p.Ordinal + 1
		if sp.cur == nil && sp.next < len(sp.plans) && p.Ordinal == sp.plans[sp.next].FirstOrdinal {
			if err := sp.load(lp); err != nil {
				return err
			}
			if plan := &sp.plans[sp.next]; sp.derived && !bytes.Equal(p.Key, plan.First) {
				return fmt.Errorf("%w: %w: %s: partition %d is not child %d's first partition",
					sstable.ErrCorrupt, errStalePlan, sp.parent.Desc, p.Ordinal, sp.next+1)
			}
			if err := sp.start(ctx, pre); err != nil {
				return err
			}
			sp.next++
		}
		if oc := sp.cur; oc != nil {
			var in bool
			if oc.run, in = oc.plan.Contains(oc.run, p.Ordinal); in {
				if oc.run != oc.begun {
					oc.begun = oc.run
					oc.builder.BeginRun(sp.lastEnd)
				}
				if err := oc.addFillers(oc.run); err != nil {
					return err
				}
				if err := sp.load(lp); err != nil {
					return err
				}
				if err := oc.builder.Add(p); err != nil {
					return err
				}
				if err := sp.inherit(oc, p.Position); err != nil {
					return err
				}
				oc.last = lastPartition{pos: p.Position, keyLen: len(p.Key), run: oc.run, ok: true}
			}
		}
		if p.IndexPos >= 0 && sp.spec.ParentRows != nil {
			end, err := lp.rowsEnd(sp.spec.ParentRows)
			if err != nil {
				return err
			}
			sp.lastEnd = end
		}
		return nil
	})
	if last := sp.plans[len(sp.plans)-1].LastOrdinal(); err == nil && sp.derived && sp.seen != last+1 {
		err = fmt.Errorf("%w: %w: %s: the index holds %d partitions, the plan %d",
			sstable.ErrCorrupt, errStalePlan, sp.parent.Desc, sp.seen, last+1)
	}
	if err == nil && sp.next < len(sp.plans) {
		err = fmt.Errorf("%w: %s: the index ended before partition %d, where child %d of %d begins",
			sstable.ErrCorrupt, sp.parent.Desc, sp.plans[sp.next].FirstOrdinal, sp.next+1, len(sp.plans))
	}
	if err == nil && sp.cur != nil {
		if err = sp.inherit(sp.cur, -1); err == nil {
			err = fin.take(sp.cur)
		}
		sp.cur = nil
	}
	return err
}

// load reads a BTI partition's key, when the pass has not yet (scanLazy), and checks its order
// against the last one loaded and that it lies in the ranges split: partitions between the
// loaded ones are passed over, placed by their trie paths alone.
func (sp *splitter) load(lp *lazyPartition) error {
	if lp.e == nil {
		return nil
	}
	if err := lp.load(true); err != nil {
		return err
	}
	p := &lp.Partition
	if err := sp.inOrder(p); err != nil {
		return err
	}
	if sp.pieces != nil && sp.pieces.Find(p.Token) < 0 {
		return fmt.Errorf("%w: %s: partition %d (token %s), planned from Partitions.db, is outside the ranges",
			sstable.ErrCorrupt, sp.parent.Path(descriptor.Partitions), p.Ordinal, p.Token)
	}
	return nil
}

// prepared is one child made by prepareAhead, or the error that stopped it.
type prepared struct {
	oc  *openChild
	err error
}

// prepareAhead prepares the children in plan order on a goroutine of its own, at most two
// ahead of the index pass (one waiting in the channel, one being made). It stops after an
// error (sent) or when ctx is cancelled, closing the channel; a child it made but could not
// hand over it discards.
func (sp *splitter) prepareAhead(ctx context.Context) <-chan prepared {
	out := make(chan prepared, 1)
	go func() {
		defer close(out)
		for _, plan := range sp.plans {
			oc, err := sp.prepare(plan)
			select {
			case out <- prepared{oc, err}:
			case <-ctx.Done():
				if oc != nil {
					_ = oc.inst.Abort()
				}
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// prefetchEdges asks the kernel to start reading, all at once, the parent blocks at the ends of
// every child's segments: a clone shares only whole blocks, so the partial blocks at a
// segment's ends are copied, one child after another, and each copy of an uncached block would
// otherwise wait for the device in turn (most of a cold reflink split's wall time). Advice only:
// a failure changes nothing but the wait.
func (sp *splitter) prefetchEdges() {
	if sp.parent.Compression == nil || sp.align <= 1 || (sp.mode != ModeReflink && sp.mode != ModeAuto) {
		return
	}
	f := sp.parent.DataFile()
	for _, p := range sp.plans {
		l := NewLayout(geometry(sp.parent, 0), p.Runs, sp.align)
		for k, s := range l.Segments {
			lo := s.SrcOff
			if k == 0 {
				lo -= l.Pad
			}
			fsx.Prefetch(f, lo-lo%sp.align, sp.align)
			end := s.SrcEnd - 1 - (s.SrcEnd-1)%sp.align
			fsx.Prefetch(f, end, s.SrcEnd-end)
		}
	}
}

// inOrder fails on a partition whose token sorts before the one ahead of it (of a BTI parent,
// the one loaded before it): the planner and the children's ranges rely on the index being in
// token order.
func (sp *splitter) inOrder(p *sstable.Partition) error {
	if p.Token.Kind == token.KindMurmur3 {
		// The common case, without copying a token (and its slice) per partition.
		if sp.hasPrev && p.Token.Long < sp.prevTok.Long {
			return sp.outOfOrder(p)
		}
		sp.prevTok.Long, sp.hasPrev, sp.prevOrd = p.Token.Long, true, p.Ordinal
		return nil
	}
	if sp.hasPrev && p.Token.Compare(sp.prevTok) < 0 {
		return sp.outOfOrder(p)
	}
	sp.prevTok, sp.hasPrev, sp.prevOrd = p.Token, true, p.Ordinal
	if p.Token.Bytes != nil {
		sp.prevBuf = append(sp.prevBuf[:0], p.Token.Bytes...)
		sp.prevTok.Bytes = sp.prevBuf
	}
	return nil
}

func (sp *splitter) outOfOrder(p *sstable.Partition) error {
	prev := sp.prevTok
	prev.Kind = p.Token.Kind
	return fmt.Errorf("%w: %s: partition %d (token %s) sorts before partition %d (token %s): the index is out of token order",
		sstable.ErrCorrupt, sp.parent.Desc, p.Ordinal, p.Token, sp.prevOrd, prev)
}

// geometry is the parent's shape for NewLayout.
func geometry(t *sstable.Table, crcChunkLength int) Geometry {
	return Geometry{Info: t.Compression, FileLength: t.DataFileLength, DataLength: t.DataLength(), CRCChunkLength: int64(crcChunkLength)}
}

// prepare opens a child and moves the Data.db bytes its partitions need: everything a child
// takes from its plan alone, so it can be done ahead of the index pass.
func (sp *splitter) prepare(plan ChildPlan) (*openChild, error) {
	var dst *os.File
	var inst *fsx.Install
	var desc descriptor.Descriptor
	var err error
	if t := sp.opts.Into; t != nil {
		inst, desc, dst = t.Inst, t.Desc, t.Data
	} else {
		inst, desc, err = generation.Install(sp.dir, sp.parent.Version(), func(inst *fsx.Install, d descriptor.Descriptor) error {
			var err error
			dst, err = inst.Create(d.Filename(descriptor.Data))
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	oc := &openChild{plan: plan, inst: inst, desc: desc}
	switch {
	case sp.mode == ModeRechunk && sp.parent.Compression != nil:
		err = sp.rechunk(oc, dst)
	case sp.mode == ModeRechunk:
		err = sp.rechunkUncompressed(oc, dst)
	case sp.parent.Compression != nil:
		err = sp.copyChunks(oc, dst)
	default:
		err = sp.copyUncompressed(oc, dst)
	}
	if err != nil {
		_ = inst.Abort()
		return nil, fmt.Errorf("child %s (%s): %w", desc, plan.Range, err)
	}
	oc.child.Runs = len(oc.layout.Segments)
	return oc, nil
}

// start takes the next prepared child at its first partition and opens its builder. A BTI
// child takes the parent's Rows.db from the page holding the end of the previous entry, so
// its tries keep their page layout: that is known only here, in the index pass.
func (sp *splitter) start(ctx context.Context, pre <-chan prepared) error {
	p, ok := <-pre
	switch {
	case !ok:
		return errors.Join(errors.New("slice: split stopped before every child was prepared"), ctx.Err())
	case p.err != nil:
		return p.err
	}
	oc := p.oc
	sp.cur = oc
	var err error
	oc.builder, err = NewBuilder(sp.spec, oc.inst, oc.desc, &oc.layout, sp.lastEnd&^4095)
	if err == nil {
		err = oc.builder.Expect(oc.plan.Partitions + oc.fillerCount())
	}
	return err
}

// moveSegments moves the layout's segments into dst, each cloned where the file system can
// share its block-aligned middle.
func (sp *splitter) moveSegments(l *Layout, dst *os.File, clone bool) (fsx.Stats, error) {
	var total fsx.Stats
	for k, s := range l.Segments {
		dstOff, srcOff, n := s.DstOff, s.SrcOff, s.Length()
		if k == 0 {
			dstOff, srcOff, n = 0, srcOff-l.Pad, n+l.Pad
		}
		st, err := sp.opts.Mover.Move(dst, dstOff, sp.parent.DataFile(), srcOff, n, clone)
		if err != nil {
			return total, err
		}
		total.Cloned += st.Cloned
		total.Copied += st.Copied
	}
	sp.cloned += total.Cloned
	return total, nil
}

// schema is the parent's compiled header, for writing filler partitions.
func (sp *splitter) schema() (*schema.Table, error) {
	if sp.table == nil {
		t, err := schema.Compile(sp.parent.Statistics.Header)
		if err != nil {
			return nil, err
		}
		sp.table = t
	}
	return sp.table, nil
}

// installBatch bounds how many built children wait to be installed together (each holds its
// files open until then).
const installBatch = 16

// errFinisherFailed stops the index pass when the finisher has failed; run reports the
// finisher's own error instead.
var errFinisherFailed = errors.New("slice: finishing a child failed")

// finisher writes each built child's remaining components (Builder.Finish) and installs them
// in batches of installBatch, on a goroutine of its own, in the order the index pass hands
// them over. It owns sp.pending and sp.children until close returns.
type finisher struct {
	sp     *splitter
	in     chan *openChild
	done   chan struct{}
	commit bool // set by close before in is closed: install the last batch, or discard it
	failed atomic.Bool
	err    error // the first error, read after done
}

func (sp *splitter) startFinisher() *finisher {
	f := &finisher{sp: sp, in: make(chan *openChild, installBatch), done: make(chan struct{})}
	go f.loop()
	return f
}

func (f *finisher) loop() {
	defer close(f.done)
	sp := f.sp
	for oc := range f.in {
		if f.err != nil {
			_ = oc.inst.Abort()
			continue
		}
		if _, err := oc.builder.Finish(oc.data); err != nil {
			_ = oc.inst.Abort()
			f.fail(err)
			continue
		}
		sp.pending = append(sp.pending, oc)
		if len(sp.pending) >= installBatch {
			if err := sp.install(); err != nil {
				f.fail(err)
			}
		}
	}
	if f.err == nil && f.commit && len(sp.pending) > 0 {
		if err := sp.install(); err != nil {
			f.err = err
		}
	}
	for _, oc := range sp.pending { // after a failure: built, never to be installed
		_ = oc.inst.Abort()
	}
	sp.pending = nil
}

func (f *finisher) fail(err error) {
	f.err = err
	f.failed.Store(true)
	for _, oc := range f.sp.pending {
		_ = oc.inst.Abort()
	}
	f.sp.pending = nil
}

// take hands a built child over; it fails (discarding the child) once the finisher has.
func (f *finisher) take(oc *openChild) error {
	if f.failed.Load() {
		_ = oc.inst.Abort()
		return errFinisherFailed
	}
	f.in <- oc
	return nil
}

// close waits for the finisher: with commit, after installing the last batch; without, after
// discarding every child not yet installed. It returns the finisher's error.
func (f *finisher) close(commit bool) error {
	f.commit = commit
	close(f.in)
	<-f.done
	return f.err
}

// install publishes the pending children, sharing the directory syncs between them; each is
// still atomic on its own.
func (sp *splitter) install() error {
	ins := make([]*fsx.Install, len(sp.pending))
	for i, oc := range sp.pending {
		ins[i] = oc.inst
	}
	if sp.opts.Into == nil {
		if err := fsx.CommitAll(ins...); err != nil {
			sp.pending = nil
			return err
		}
	}
	for _, oc := range sp.pending {
		c := oc.child
		c.Desc, c.Range, c.Partitions = oc.desc, oc.plan.Range, oc.plan.Partitions-oc.inherited
		c.FillerPartitions += oc.inherited
		c.FirstToken, c.LastToken, c.DataFileLength = oc.plan.FirstTok, oc.plan.LastTok, oc.data.FileLength
		c.Runs = len(oc.layout.Segments)
		c.Digest = oc.data.HasDigest
		sp.children = append(sp.children, c)
	}
	sp.pending = nil
	return nil
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
