package slice

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sluicedb/sluice/internal/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/generation"
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
}

// Child is one written child sstable.
type Child struct {
	Desc           descriptor.Descriptor
	Range          token.Range
	Partitions     int64
	FirstToken     token.Token
	LastToken      token.Token
	DataFileLength int64
	// DeadBytes counts bytes of the child's Data.db that belong to no partition of the child:
	// the reflink head pad, the part of the first chunk before its first partition and the part
	// of the last chunk after its last. Readers never reach them: they enter Data.db only at
	// index positions.
	DeadBytes int64
	Cloned    int64 // Data.db bytes shared with the parent
	Copied    int64 // Data.db bytes copied or written
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
	if err := checkProvable(parent); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := fsx.CleanLeftovers(dir); err != nil {
		return nil, fmt.Errorf("removing leftovers of an interrupted split in %s: %w", dir, err)
	}
	ps, err := NewPieces(parent.Partitioner, ranges)
	if err != nil {
		return nil, err
	}
	plans, err := PlanTable(parent, ps, ranges)
	if err != nil {
		return nil, err
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
	if res.Mode == ModeReflink || res.Mode == ModeAuto {
		// An explicit reflink happens or fails with the reason; only auto falls back.
		if err := opts.Mover.ProbeReflink(dir, parent.DataFile()); err != nil {
			if res.Mode == ModeReflink {
				return nil, fmt.Errorf("%w: --mode reflink into %s: %w", ErrRefused, dir, err)
			}
			res.Reason = fmt.Sprintf("reflink unavailable, copied: %v", err)
		}
	}
	if err := checkSpace(parent, plans, dir, res.Mode, opts); err != nil {
		return nil, err
	}
	if res.Mode == ModeRewrite {
		return res, rewrite(ctx, parent, plans, dir, res)
	}
	sp, err := newSplitter(parent, plans, dir, res.Mode, opts)
	if err != nil {
		return nil, err
	}
	if err := sp.proveAhead(); err != nil {
		return nil, err
	}
	if err := sp.run(ctx); err != nil {
		return nil, err
	}
	res.Children = sp.children
	res.Mode = sp.usedMode()
	if opts.Mode == ModeAuto && res.Mode == ModeCopy && res.Reason == "" {
		res.Reason = "no block-aligned run long enough to clone, copied"
	}
	return res, nil
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
	pl := NewPlanner(ps)
	err := parent.ScanPartitions(func(p *sstable.Partition) error {
		pl.Add(p.Ordinal, p.Key, p.Token, p.Position)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pl.Finish(ranges, parent.DataLength()), nil
}

// checkSpace refuses a split the destination cannot hold, before writing anything. Copies need
// the children's Data.db plus index components; clones only their unaligned edges, but a clone
// can fall back to a copy, so reflink needs the full amount unless the directory is known to
// support it.
func checkSpace(parent *sstable.Table, plans []ChildPlan, dir string, mode Mode, opts Options) error {
	var need int64
	for _, c := range plans {
		need += c.Hi - c.Lo // uncompressed: an upper bound for compressed data and rewrites
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
// opened) at its first partition and finished at its last.
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
	pending []*openChild // built, waiting to be installed together
	lastEnd int64        // end of the last Rows.db entry seen (BTI)
	cloned  int64
	// digestFromCRCs derives digests from inline chunk CRCs instead of reading children.
	digestFromCRCs bool
}

type openChild struct {
	plan    ChildPlan
	inst    *fsx.Install
	desc    descriptor.Descriptor
	builder *Builder
	data    DataResult
	child   Child
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

func (sp *splitter) run(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			if sp.cur != nil {
				_ = sp.cur.inst.Abort()
			}
			for _, oc := range sp.pending {
				_ = oc.inst.Abort()
			}
		}
	}()
	err = sp.parent.ScanPartitions(func(p *sstable.Partition) error {
		if p.Ordinal%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if sp.cur != nil && p.Ordinal >= sp.cur.plan.FirstOrdinal+sp.cur.plan.Partitions {
			if err := sp.finish(); err != nil {
				return err
			}
		}
		if sp.cur == nil && sp.next < len(sp.plans) && p.Ordinal == sp.plans[sp.next].FirstOrdinal {
			if err := sp.start(sp.plans[sp.next]); err != nil {
				return err
			}
			sp.next++
		}
		if sp.cur != nil {
			if err := sp.cur.builder.Add(p); err != nil {
				return err
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
	if err == nil && sp.cur != nil {
		err = sp.finish()
	}
	if err == nil {
		err = sp.install()
	}
	return err
}

// start opens a child: it moves the Data.db bytes its partitions need and opens the builder.
func (sp *splitter) start(plan ChildPlan) error {
	var dst *os.File
	inst, desc, err := generation.Install(sp.dir, sp.parent.Version(), func(inst *fsx.Install, d descriptor.Descriptor) error {
		var err error
		dst, err = inst.Create(d.Filename(descriptor.Data))
		return err
	})
	if err != nil {
		return err
	}
	oc := &openChild{plan: plan, inst: inst, desc: desc}
	sp.cur = oc
	var shift int64
	switch {
	case sp.mode == ModeRechunk && sp.parent.Compression != nil:
		shift, err = sp.rechunk(oc, dst)
	case sp.parent.Compression != nil:
		shift, err = sp.copyChunks(oc, dst)
	default:
		shift, err = sp.copyUncompressed(oc, dst)
	}
	if err != nil {
		return fmt.Errorf("child %s (%s): %w", desc, plan.Range, err)
	}
	// A BTI child takes the parent's Rows.db from the page holding the end of the previous
	// entry, so its tries keep their page layout.
	rowsCut := sp.lastEnd &^ 4095
	oc.builder, err = NewBuilder(sp.spec, inst, desc, shift, plan.Hi, rowsCut)
	return err
}

// copyChunks moves the run of whole parent chunks holding the child, cloning where it can.
func (sp *splitter) copyChunks(oc *openChild, dst *os.File) (int64, error) {
	info := sp.parent.Compression
	align := int64(1)
	if sp.mode != ModeCopy {
		align = sp.align
	}
	run := LayoutCompressed(info, sp.parent.DataFileLength, oc.plan.Lo, oc.plan.Hi, align)
	st, err := sp.opts.Mover.Move(dst, 0, sp.parent.DataFile(), run.SrcOff-run.Pad, run.FileLength(), sp.mode != ModeCopy)
	if err != nil {
		return 0, err
	}
	sp.cloned += st.Cloned
	oc.data = DataResult{Compression: run.Info(info), DataLength: run.DataLength, FileLength: run.FileLength(), HasDigest: !sp.opts.NoDigest}
	if !sp.opts.NoDigest {
		if sp.digestFromCRCs {
			// Derived from the stored CRCs, the digest vouches for nothing new.
			oc.data.Digest, err = compress.RunDigest(sp.parent.DataFile(), info, sp.parent.DataFileLength,
				run.FirstChunk, run.LastChunk, run.SrcOff-run.Pad, run.Pad)
		} else {
			// A digest of the bytes themselves: prove every chunk first.
			oc.data.Digest, err = provenRecords(sp.parent, dst, oc.data.Compression, run)
		}
		if err != nil {
			return 0, err
		}
	}
	oc.child = Child{DeadBytes: run.Dead, Cloned: st.Cloned, Copied: st.Copied}
	return run.Shift, nil
}

// copyUncompressed moves the bytes of an uncompressed parent and checksums them for CRC.db
// (and the digest) as Cassandra's ChecksummedSequentialWriter would, on a grid that starts at
// the child's first byte.
func (sp *splitter) copyUncompressed(oc *openChild, dst *os.File) (int64, error) {
	align := int64(1)
	if sp.mode == ModeReflink || sp.mode == ModeAuto {
		align = sp.align
	}
	run := LayoutUncompressed(oc.plan.Lo, oc.plan.Hi, align)
	st, err := sp.opts.Mover.Move(dst, 0, sp.parent.DataFile(), run.SrcOff-run.Pad, run.FileLength(), sp.mode != ModeCopy && sp.mode != ModeRechunk)
	if err != nil {
		return 0, err
	}
	sp.cloned += st.Cloned
	cw := compress.NewCRCWriter(sp.spec.CRCChunkLength)
	if err := provenUncompressed(sp.parent, run.SrcOff-run.Pad, run.SrcEnd, cw); err != nil {
		return 0, err
	}
	crcs, digest := cw.Result()
	oc.data = DataResult{CRC: crcs, DataLength: run.DataLength, FileLength: run.FileLength(), Digest: digest, HasDigest: !sp.opts.NoDigest}
	oc.child = Child{DeadBytes: run.Dead, Cloned: st.Cloned, Copied: st.Copied}
	return run.Shift, nil
}

// rechunk decompresses the parent chunks holding [lo, hi) and recompresses exactly those bytes
// into fresh chunks, so the child starts at its first partition: no dead bytes, and a child
// that stock Cassandra verify and scrub accept. Rows are not parsed.
func (sp *splitter) rechunk(oc *openChild, dst *os.File) (int64, error) {
	info := sp.parent.Compression
	run := LayoutCompressed(info, sp.parent.DataFileLength, oc.plan.Lo, oc.plan.Hi, 1)
	bw := fsx.NewAsyncWriter(dst, 1<<20, 4)
	w, err := compress.NewWriter(bw, compress.WriterOptions{Version: sp.parent.Version(), Compressor: info.Compressor,
		Options: info.Options, ChunkLength: info.ChunkLength, MaxCompressedLength: rawThreshold(sp.parent)})
	if err != nil {
		return 0, err
	}
	sc := sp.parent.Data.NewScanner(run.FirstChunk, run.LastChunk+1)
	for sc.Next() {
		b := sc.Bytes()
		start := sc.Offset()
		lo, hi := max(oc.plan.Lo-start, 0), min(oc.plan.Hi-start, int64(len(b)))
		if lo < hi {
			if _, err := w.Write(b[lo:hi]); err != nil {
				_, _ = w.Close()
				_ = bw.Close()
				return 0, err
			}
		}
	}
	res, cerr := w.Close()
	if err := errors.Join(sc.Err(), cerr, bw.Close()); err != nil {
		return 0, err
	}
	oc.data = DataResult{Compression: res.Info, DataLength: res.DataLength, FileLength: res.FileLength, Digest: res.Digest, HasDigest: !sp.opts.NoDigest}
	oc.child = Child{Copied: res.FileLength}
	return oc.plan.Lo, nil
}

// installBatch bounds how many built children wait to be installed together (each holds its
// files open until then).
const installBatch = 16

// finish writes the open child's components; install publishes it with its batch.
func (sp *splitter) finish() error {
	oc := sp.cur
	if _, err := oc.builder.Finish(oc.data); err != nil {
		return err
	}
	sp.pending = append(sp.pending, oc)
	sp.cur = nil
	if len(sp.pending) >= installBatch {
		return sp.install()
	}
	return nil
}

// install publishes the pending children, sharing the directory syncs between them; each is
// still atomic on its own.
func (sp *splitter) install() error {
	ins := make([]*fsx.Install, len(sp.pending))
	for i, oc := range sp.pending {
		ins[i] = oc.inst
	}
	if err := fsx.CommitAll(ins...); err != nil {
		sp.pending = nil
		return err
	}
	for _, oc := range sp.pending {
		c := oc.child
		c.Desc, c.Range, c.Partitions = oc.desc, oc.plan.Range, oc.plan.Partitions
		c.FirstToken, c.LastToken, c.DataFileLength = oc.plan.FirstTok, oc.plan.LastTok, oc.data.FileLength
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
