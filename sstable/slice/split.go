package slice

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
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

// DigestPolicy says which children get a Digest.crc32.
type DigestPolicy string

const (
	// DigestAlways (the zero value) writes one for every child.
	DigestAlways DigestPolicy = ""
	// DigestAuto writes one unless the child's Data.db is cloned from a compressed parent
	// (reflink): that digest needs every chunk's stored CRC, trailers on about one page in
	// three of Data.db, so from a cold cache it reads nearly the whole parent and costs a
	// reflink split of 1 GiB 8x its time (docs/BENCHMARKS.md). Without it the child is still
	// an ordinary sstable: each chunk keeps its CRC, which `sluice sstable verify` checks, and
	// Cassandra's verifier, finding no digest, checks every partition (extended verification),
	// as for the children of CASSANDRA-21550's zero-copy split. `sluice sstable split` and
	// `slice` default to it.
	DigestAuto DigestPolicy = "auto"
	// DigestNever writes none (NoDigest).
	DigestNever DigestPolicy = "never"
)

// ParseDigestPolicy reads auto, always or never.
func ParseDigestPolicy(s string) (DigestPolicy, error) {
	switch s {
	case "always":
		return DigestAlways, nil
	case string(DigestAuto), string(DigestNever):
		return DigestPolicy(s), nil
	}
	return "", fmt.Errorf("--digest %q: want auto, always or never", s)
}

// Options tunes Split. The zero value is mode auto with a digest.
type Options struct {
	Mode Mode
	// NoDigest writes no Digest.crc32 whatever Digest says (DigestNever).
	NoDigest bool
	Digest   DigestPolicy
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
	Digest         bool // has a Digest.crc32 (Options.Digest)
	Range          token.Range
	Partitions     int64
	FirstToken     token.Token
	LastToken      token.Token
	DataFileLength int64
	Cloned         int64 // Data.db bytes shared with the parent
	Copied         int64 // Data.db bytes copied or written
	// Runs is the number of contiguous pieces of the parent the child's Data.db concatenates
	// (1 for a split child; rechunk and rewrite count the runs they joined).
	Runs int
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
