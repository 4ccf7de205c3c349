package slice

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/crcx"
	"github.com/sluicedb/sluice/internal/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/generation"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
)

// Mode is how a child's Data.db bytes are produced.
type Mode string

const (
	ModeAuto    Mode = "auto"    // reflink where the file system can, else copy; rewrite when zero-copy is refused
	ModeReflink Mode = "reflink" // share the parent's extents (FICLONERANGE), copying only unaligned edges
	ModeCopy    Mode = "copy"    // copy_file_range, then sendfile, then a buffered copy
	ModeRechunk Mode = "rechunk" // decompress and recompress the boundary chunks: no dead bytes, no rows read
	ModeRewrite Mode = "rewrite" // read every row and write a new sstable: the baseline
)

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAuto, ModeReflink, ModeCopy, ModeRechunk, ModeRewrite:
		return m, nil
	}
	return "", fmt.Errorf("unknown split mode %q (want auto, reflink, copy, rechunk or rewrite)", s)
}

// ErrRefused reports a parent that zero-copy cannot handle, or too little free space; it is
// decided before anything is written.
var ErrRefused = errors.New("split refused")

// Options tunes Split. The zero value is mode auto with a digest.
type Options struct {
	Mode     Mode
	NoDigest bool
	// Mover copies and clones; its per-directory reflink capability cache is worth sharing
	// between splits. Nil means a fresh one.
	Mover *fsx.Mover
	// Bounds limits the multi-run child of Slice; past them it falls back to one child per run,
	// or with RechunkPastBounds to one rechunked (gap-free) child, so that a caller that must
	// never raise the sstable count (cleanup) still gets one.
	Bounds            Bounds
	RechunkPastBounds bool
	// ExactEnds ends each run at its last partition's end-of-partition flag rather than at the
	// next indexed partition: for a parent that may hold bytes no partition owns between its
	// partitions (a multi-run sstable written before filler partitions, a received partial
	// before it is filled), which no run may take in. It reads each run's last partition.
	ExactEnds bool
	// Into, with Slice, is where the one child goes: an install whose Data.db is created,
	// which the caller commits (Result.Children then lists the child uncommitted), instead of
	// a new generation that Slice commits. The child is never split per run.
	Into *Target
}

// Target is an install made by the caller for Options.Into.
type Target struct {
	Inst *fsx.Install
	Desc descriptor.Descriptor
	Data *os.File // Data.db, created and empty
}

// Child is one written child sstable.
type Child struct {
	Desc           descriptor.Descriptor
	Range          token.Range
	Partitions     int64
	FirstToken     token.Token
	LastToken      token.Token
	DataFileLength int64
	// DeadBytes counts the child's uncompressed Data.db bytes that belong to no partition of
	// the child: the part of each run's first chunk before its first partition and of each
	// run's last chunk after its last (the child's data ends with its last partition), and
	// partitions between runs less than a chunk apart. Readers never reach them: they enter
	// Data.db only at index positions.
	DeadBytes int64
	Cloned    int64 // Data.db bytes shared with the parent
	Copied    int64 // Data.db bytes copied or written
	// Runs is the number of contiguous pieces of the parent the child's Data.db concatenates
	// (1 for a split child; rechunk and rewrite count the runs they joined).
	Runs int
	// Unscannable, when not empty, says why a reader that walks Data.db from its start
	// without the index (Cassandra 5.0's compaction, cleanup, sstabledump) would misread the
	// child: dead bytes between runs, or a dead head that could not be filled. Empty means
	// the split laid out nothing such a reader trips on; a parent with dead regions of its own
	// (a multi-run sstable) passes them on, which `sstable verify` reports (Scannable).
	Unscannable string
	// FillerPartitions and FillerBytes are the filler partitions (fill.go) the child holds:
	// empty partitions in the gaps its runs leave, counted apart from Partitions.
	FillerPartitions int64
	FillerBytes      int64
	// EncodedBytes is the part of Data.db written as re-encoded chunks (the runs' edges, and
	// runs whose gap could not be filled) rather than moved as the parent's chunks.
	EncodedBytes int64
	// Reencoded says why runs were re-encoded whole, when some were.
	Reencoded string
}

// Result is what Split did.
type Result struct {
	Children []Child
	Mode     Mode   // the mode really used for Data.db
	Reason   string // why auto did not clone (copy) or did not use zero-copy (rewrite), when it did not
}

// Split writes one child sstable into dir for every piece of ranges that holds partitions of
// parent (a wrapping range with partitions on both sides of the ring's minimum gives two). The
// parent is never modified. Each child is installed atomically; on error, children already
// installed stay, nothing partial is visible, and the next Split in dir removes leftovers.
func Split(ctx context.Context, parent *sstable.Table, ranges token.RangeSet, dir string, opts Options) (*Result, error) {
	return execute(ctx, parent, ranges, nil, dir, opts, false)
}

// Slice writes at most one child sstable into dir holding exactly parent's partitions in
// ranges (any number, wrapping allowed): the parent's chunk runs for every range, concatenated
// in token order (Layout). Nothing is written when no partition falls in the ranges. When the
// child would break opts.Bounds (zero-copy modes only: rechunk and rewrite leave no dead bytes)
// it falls back to one child per run and Result.Reason says why.
func Slice(ctx context.Context, parent *sstable.Table, ranges token.RangeSet, dir string, opts Options) (*Result, error) {
	return execute(ctx, parent, ranges, nil, dir, opts, true)
}

// execute splits (one child per piece) or slices (one is set). plans, when not nil, are the
// children planned already (SplitEqual); otherwise an index pass plans them.
func execute(ctx context.Context, parent *sstable.Table, ranges token.RangeSet, plans []ChildPlan, dir string, opts Options, one bool) (*Result, error) {
	derived := plans != nil
	if opts.Mode == "" {
		opts.Mode = ModeAuto
	}
	if opts.Mover == nil {
		m, err := fsx.NewMover(fsx.Config{})
		if err != nil {
			return nil, err
		}
		opts.Mover = m
	}
	ps, err := NewPieces(parent.Partitioner, ranges)
	if err != nil {
		return nil, err
	}
	if err := checkProvable(parent); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if opts.Into == nil {
		// (With Into the caller owns the directory and its installs in flight.)
		if _, err := fsx.CleanLeftovers(dir); err != nil {
			return nil, fmt.Errorf("removing leftovers of an interrupted split in %s: %w", dir, err)
		}
	}
	if opts.Into != nil {
		if !one {
			return nil, errors.New("slice: Options.Into takes the one child of Slice")
		}
		opts.Bounds = Bounds{MaxRuns: math.MaxInt, MaxDeadRatio: -1}
	}
	if plans == nil {
		e := endsNext
		switch {
		case opts.Mode == ModeRechunk:
			e = endsAll // rechunk reads every byte anyway: a parent's own dead regions go too
		case opts.ExactEnds:
			e = endsRun
		}
		if plans, err = planTable(parent, ps, ranges, e); err != nil {
			return nil, err
		}
	}
	res := &Result{Mode: opts.Mode}
	if reason := Refusal(parent); reason != "" {
		switch opts.Mode {
		case ModeAuto:
			res.Mode, res.Reason = ModeRewrite, reason
		case ModeReflink, ModeCopy, ModeRechunk:
			return nil, fmt.Errorf("%w: %s: %s", ErrRefused, parent.Desc, reason)
		}
	}
	if len(plans) == 0 {
		return res, nil
	}
	if one {
		var fallback string
		merged := Merge(plans)
		plans, fallback = OnePerParent(parent, plans, res.Mode, opts.Bounds)
		switch {
		case fallback != "" && opts.RechunkPastBounds:
			plans, res.Mode = []ChildPlan{merged}, ModeRechunk
			res.Reason = joinReason(res.Reason, "rechunked: "+fallback)
		case fallback != "":
			res.Reason = joinReason(res.Reason, "one sstable per run: "+fallback)
		}
	}
	if res.Mode == ModeReflink || res.Mode == ModeAuto {
		// An explicit reflink happens or fails with the reason; only auto falls back.
		if err := opts.Mover.ProbeReflink(dir, parent.DataFile()); err != nil {
			if res.Mode == ModeReflink {
				return nil, fmt.Errorf("%w: --mode reflink into %s: %w", ErrRefused, dir, err)
			}
			res.Reason = joinReason(res.Reason, fmt.Sprintf("reflink unavailable, copied: %v", err))
		}
	}
	if opts.Into == nil { // (the caller of Into admitted its space)
		if err := checkSpace(parent, plans, dir, res.Mode, opts); err != nil {
			return nil, err
		}
	}
	if res.Mode == ModeRewrite {
		return res, rewrite(ctx, parent, plans, dir, res)
	}
	sp, err := newSplitter(parent, plans, dir, res.Mode, opts)
	if err != nil {
		return nil, err
	}
	sp.derived = derived
	sp.pieces = ps
	if err := sp.proveAhead(); err != nil {
		return nil, err
	}
	sp.prefetchEdges()
	if err := sp.run(ctx); err != nil {
		return nil, err
	}
	res.Children = sp.children
	res.Mode = sp.usedMode()
	for _, c := range res.Children {
		if c.Reencoded != "" {
			res.Reason = joinReason(res.Reason, c.Reencoded)
			break
		}
	}
	if opts.Mode == ModeAuto && res.Mode == ModeCopy && res.Reason == "" {
		res.Reason = "no block-aligned run long enough to clone, copied"
	}
	return res, nil
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// OnePerParent merges the planner's per-piece children of parent into one multi-run child, or
// keeps them apart when that child would break the bounds (then the reason is returned). Modes
// that write fresh chunks (rechunk, rewrite) join the runs into one gap-free stream of bytes,
// so no bound applies to them.
func OnePerParent(parent *sstable.Table, plans []ChildPlan, mode Mode, b Bounds) ([]ChildPlan, string) {
	one := Merge(plans)
	if mode == ModeRechunk || mode == ModeRewrite {
		return []ChildPlan{one}, ""
	}
	crc := compress.DefaultCRCChunkLength
	if parent.CRC != nil {
		crc = parent.CRC.ChunkLength
	}
	l := NewLayout(geometry(parent, crc), one.Runs, 1)
	if reason := b.Exceeded(&l); reason != "" {
		return plans, reason
	}
	return []ChildPlan{one}, ""
}

// Refusal is why zero-copy cannot take parent, or "". Legacy counter shards must be rewritten
// (Cassandra refuses to stream them as files, too).
func Refusal(parent *sstable.Table) string {
	if s := parent.Statistics.Stats; s != nil && s.HasLegacyCounterShards {
		return "legacy counter shards"
	}
	return ""
}

// PlanTable scans parent's index and returns its children.
func PlanTable(parent *sstable.Table, ps *Pieces, ranges token.RangeSet) ([]ChildPlan, error) {
	return planTable(parent, ps, ranges, endsNext)
}

// Where a planned run ends: at the next indexed partition (a gap-free parent), at its last
// partition's end-of-partition flag (Options.ExactEnds), or, besides, split wherever a partition
// ends before the next one starts (rechunk: a parent with dead regions of its own loses them).
type ends int

const (
	endsNext ends = iota
	endsRun
	endsAll
)

// cut is a dead region inside a planned child: the partition before it ends at at, the next
// one (ordinal ord) starts at next.
type cut struct {
	ord      int64
	at, next int64
}

// planTable is PlanTable, each child ending as e says.
func planTable(parent *sstable.Table, ps *Pieces, ranges token.RangeSet, e ends) ([]ChildPlan, error) {
	pl := NewPlanner(ps)
	var t *schema.Table
	if e != endsNext {
		var err error
		if t, err = schema.Compile(parent.Statistics.Header); err != nil {
			return nil, err
		}
	}
	var last []int64 // each child's last partition's position so far
	cuts := map[int][]cut{}
	err := parent.ScanPartitions(func(p *sstable.Partition) error {
		k := pl.Add(p.Ordinal, p.Key, p.Token, p.Position)
		if e == endsNext || k < 0 {
			return nil
		}
		if k == len(last) {
			last = append(last, -1)
		}
		if prev := last[k]; e == endsAll && prev >= 0 {
			end, err := partitionEnd(parent, t, prev, p.Position)
			if err != nil {
				return err
			}
			if end < p.Position {
				cuts[k] = append(cuts[k], cut{ord: p.Ordinal, at: end, next: p.Position})
			}
		}
		last[k] = p.Position
		return nil
	})
	if err != nil {
		return nil, err
	}
	plans := pl.Finish(ranges, parent.DataLength())
	if e == endsNext {
		return plans, nil
	}
	for i := range plans {
		c := &plans[i]
		if c.Hi, err = partitionEnd(parent, t, last[i], c.Hi); err != nil {
			return nil, err
		}
		c.Runs = c.Runs[:0]
		first, lo := c.FirstOrdinal, c.Lo
		for _, x := range cuts[i] {
			c.Runs = append(c.Runs, RunPlan{FirstOrdinal: first, Partitions: x.ord - first, Lo: lo, Hi: x.at})
			first, lo = x.ord, x.next
		}
		c.Runs = append(c.Runs, RunPlan{FirstOrdinal: first, Partitions: c.FirstOrdinal + c.Partitions - first, Lo: lo, Hi: c.Hi})
	}
	return plans, nil
}

// partitionEnd is where the partition at pos ends: at its end-of-partition flag, which must
// lie before limit (the next indexed partition or the data's end).
func partitionEnd(parent *sstable.Table, t *schema.Table, pos, limit int64) (int64, error) {
	b := make([]byte, limit-pos)
	if _, err := parent.Data.ReadAt(b, pos); err != nil {
		return 0, corruptParent(parent, err)
	}
	var cur rows.Cursor
	err := cur.ResetTrailing(t, parent.Version(), b)
	for err == nil && cur.Next() {
	}
	if err == nil {
		err = cur.Err()
	}
	if err != nil || !cur.Done() {
		return 0, fmt.Errorf("%w: %s: the partition at %d does not end before %d: %v", sstable.ErrCorrupt, parent.Desc, pos, limit, err)
	}
	return pos + int64(cur.End()), nil
}

// checkSpace refuses a split the destination cannot hold, before writing anything. Copies need
// the children's Data.db plus index components; clones only their unaligned edges, but a clone
// can fall back to a copy, so reflink needs the full amount unless the directory is known to
// support it.
func checkSpace(parent *sstable.Table, plans []ChildPlan, dir string, mode Mode, opts Options) error {
	var need int64
	for _, c := range plans {
		for _, r := range c.Runs {
			need += r.Hi - r.Lo // uncompressed: an upper bound for compressed data and rewrites
		}
	}
	if parent.Compression != nil && parent.DataLength() > 0 && mode != ModeRewrite && mode != ModeRechunk {
		need = int64(float64(need) * float64(parent.DataFileLength) / float64(parent.DataLength()))
	}
	if (mode == ModeReflink || mode == ModeAuto) && opts.Mover.Reflink(dir) == fsx.CapabilitySupported {
		need = int64(len(plans)) * 2 * 64 << 10
	}
	// Index components: a generous share of the parent's index per child.
	need += 64 << 20
	if err := fsx.CheckFreeSpace(dir, need); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	return nil
}

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
	err = sp.parent.ScanPartitions(func(p *sstable.Partition) error {
		if p.Ordinal%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := sp.inOrder(p); err != nil {
			return err
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
			e, err := bti.ReadRowIndexEntry(sp.spec.ParentRows, p.IndexPos)
			if err != nil {
				return err
			}
			sp.lastEnd = e.End
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

// inOrder fails on a partition whose token sorts before the one ahead of it: the planner and
// the children's ranges rely on the index being in token order.
func (sp *splitter) inOrder(p *sstable.Partition) error {
	if p.Token.Kind == token.KindMurmur3 {
		// The common case, without copying a token (and its slice) per partition.
		if p.Ordinal > 0 && p.Token.Long < sp.prevTok.Long {
			return sp.outOfOrder(p)
		}
		sp.prevTok.Long = p.Token.Long
		return nil
	}
	if p.Ordinal > 0 && p.Token.Compare(sp.prevTok) < 0 {
		return sp.outOfOrder(p)
	}
	sp.prevTok = p.Token
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
		sstable.ErrCorrupt, sp.parent.Desc, p.Ordinal, p.Token, p.Ordinal-1, prev)
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

// copyChunks lays the child out so that every byte of its data belongs to a partition its
// index addresses (fill.go): the parent's whole chunks inside each run moved as they are
// (cloned where it can), the chunks at the runs' edges re-encoded with filler partitions in
// the gaps between runs.
func (sp *splitter) copyChunks(oc *openChild, dst *os.File) error {
	info := sp.parent.Compression
	clone := sp.mode != ModeCopy
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
	derive := sp.digestFromCRCs || sp.opts.NoDigest
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
	// counted as partitions when passed on (README).
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
		b, err := emptyPartition(rows.NewWriter(t, sp.parent.Version()), nil, nil)
		if err != nil {
			return 0, err
		}
		sp.over = int64(len(b))
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

// chunkRunDigest derives the CRC32 of a child's Data.db (head pad + chunk records) from the
// parent's inline chunk CRCs, segment by segment (compress.RunDigest: 4 bytes read per chunk,
// and the pad), joined with CRC-32 combination. A damaged parent chunk makes the derived digest
// disagree with the bytes, which verify then reports.
func chunkRunDigest(src *os.File, info *compress.Info, fileLength int64, l *Layout, head []byte) (uint32, error) {
	var crc uint32
	for k, s := range l.Segments {
		padOff, pad := int64(0), int64(0)
		if k == 0 {
			padOff, pad = s.SrcOff-l.Pad, l.Pad
		}
		if k == 0 && head != nil {
			// A filled head replaces the pad and the first chunk's record.
			crc = crc32.ChecksumIEEE(head)
			if s.FirstChunk == s.LastChunk {
				continue
			}
			d, err := compress.RunDigest(src, info, fileLength, s.FirstChunk+1, s.LastChunk, 0, 0)
			if err != nil {
				return 0, err
			}
			crc = crcx.Combine(crc, d, s.Length()+l.Pad-int64(len(head)))
			continue
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

// LayoutDigest is the CRC32 of the Data.db laid out by l derived from the parent's stored
// checksums rather than from the bytes: the inline chunk CRCs (compressed), or CRC.db with the
// slices a segment cuts read and checked (uncompressed, compress.RangeDigest). A streaming
// sender puts it in the Manifest so that bytes damaged anywhere on their way fail the
// receiver's comparison.
func LayoutDigest(parent *sstable.Table, l *Layout) (uint32, error) {
	switch {
	case parent.Compression != nil:
		return chunkRunDigest(parent.DataFile(), parent.Compression, parent.DataFileLength, l, nil)
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
