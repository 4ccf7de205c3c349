package stream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

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

// installJob writes one received sstable through an fsx.Install: nothing is visible under a
// final name in the target directory until commit, and abort removes every temporary. The
// receiver, not the peer, names every file: a new generation and a component picked from a
// fixed list.
//
// A rows sstable is received like a partial one, but into a private scratch directory
// inside the target directory (same file system, invisible to Cassandra, which lists only
// the files of a table directory); finish rewrites its rows into a new sstable there
// (slice.Split, ModeRewrite) and publishes that one into the target directory under a new
// generation with a second install, then removes the scratch directory.
type installJob struct {
	in      *Incoming
	dir     string                // the target directory
	desc    descriptor.Descriptor // the received files (in scratch for rows)
	final   descriptor.Descriptor // the sstable finish published
	inst    *fsx.Install
	data    *os.File   // Data.db, all kinds
	comps   []*os.File // entire: one per Manifest component (nil while kept in mem)
	mem     [][]byte   // entire: the small components, kept as they arrive
	files   map[descriptor.Component]*os.File
	index   []byte
	rebuild *slice.PartialRebuild // partial and rows: the index slice rebuilt as it arrives
	feed    *rebuildFeed          // hands rebuild the slice on a goroutine of its own
	rows    []byte
	crcw    *compress.CRCWriter
	scratch string // rows and filled partials: the received sstable, private
	pub     *fsx.Install
	// A compressed partial is received into scratch as the sender laid it out (whole parent
	// chunks, dead bytes between runs), then filled (refill) into pubDesc: the sstable the
	// shared commit publishes. filled is what the fill made.
	pubDesc descriptor.Descriptor
	pubData *os.File
	filled  slice.Child
	ctx     context.Context // ends a fill when the session ends (nil: never)
	fillers int64           // entire: the filler partitions among the manifest's partitions
	// beforePublish, if set, is called with the final descriptor just before the commit that
	// makes the sstable visible in the target directory, so the caller can record the install
	// first: a crash between that commit and a record written after it would fetch the
	// sstable again on resume and install it twice.
	beforePublish func(final descriptor.Descriptor) error
}

// published runs beforePublish for final.
func (j *installJob) published(final descriptor.Descriptor) error {
	if j.beforePublish == nil {
		return nil
	}
	return j.beforePublish(final)
}

// newInstallJob prepares the files of in. scratchPrefix names the private directory of a
// rows sstable.
func newInstallJob(dir, scratchPrefix string, in *Incoming) (*installJob, error) {
	need := int64(in.Total()) + 2*int64(in.Manifest.IndexSliceLength) + int64(len(in.Manifest.Statistics)) + 1<<20
	switch {
	case in.Kind == wire.KindRows:
		// The received child, its rewrite and the published copy of the rewrite; a rewrite
		// is at most the uncompressed data plus its index.
		need = 2*need + int64(in.Manifest.DataLength)
	case in.Kind == wire.KindPartial && in.Info != nil:
		// The received partial and its filled copy, until the first is removed.
		need *= 2
	}
	if err := fsx.CheckFreeSpace(dir, need); err != nil {
		return nil, err
	}
	j := &installJob{in: in, dir: dir}
	var err error
	switch in.Kind {
	case wire.KindEntire:
		j.inst, j.desc, err = generation.Install(dir, in.Version, func(inst *fsx.Install, d descriptor.Descriptor) error {
			j.files, j.comps, j.mem = map[descriptor.Component]*os.File{}, nil, make([][]byte, len(in.Manifest.Components))
			for i, c := range in.Manifest.Components {
				if i != in.DataComponent && c.Length <= smallComponent {
					// Kept as it arrives; seal creates and writes the file (spillSmall).
					j.mem[i] = make([]byte, 0, c.Length)
					j.comps = append(j.comps, nil)
					continue
				}
				f, err := inst.Create(d.Filename(descriptor.Component(c.Name)))
				if err != nil {
					return err
				}
				j.files[descriptor.Component(c.Name)] = f
				j.comps = append(j.comps, f)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		j.data = j.comps[in.DataComponent]
		return j, nil
	case wire.KindPartial:
		if in.Info == nil {
			// Uncompressed runs arrive back to back: nothing to fill.
			if err := j.direct(dir); err != nil {
				return nil, err
			}
			j.crcw = compress.NewCRCWriter(in.CRCChunkLength)
			return j, nil
		}
		if err := j.receiveInScratch(dir, scratchPrefix); err != nil {
			return nil, err
		}
		j.pub, j.pubDesc, err = generation.Install(dir, in.Version, func(inst *fsx.Install, d descriptor.Descriptor) error {
			var err error
			j.pubData, err = inst.Create(d.Filename(descriptor.Data))
			return err
		})
		if err != nil {
			j.abort()
			return nil, err
		}
	case wire.KindRows:
		if err := j.receiveInScratch(dir, scratchPrefix); err != nil {
			return nil, err
		}
	default:
		if err := j.direct(dir); err != nil {
			return nil, err
		}
	}
	if in.Info == nil {
		j.crcw = compress.NewCRCWriter(in.CRCChunkLength)
	}
	return j, nil
}

// receiveInScratch makes the job receive its sstable into a private scratch directory inside
// dir, as generation 1.
func (j *installJob) receiveInScratch(dir, scratchPrefix string) error {
	var err error
	in := j.in
	{
		if j.scratch, err = os.MkdirTemp(dir, scratchPrefix); err != nil {
			return err
		}
		j.desc = descriptor.Descriptor{Dir: j.scratch, Version: in.Version, ID: "1"}
		if j.inst, err = fsx.NewInstall(j.scratch, j.desc.Filename(descriptor.TOC)); err != nil {
			j.abort()
			return err
		}
		j.files = map[descriptor.Component]*os.File{}
		if j.data, err = j.create(descriptor.Data); err != nil {
			j.abort()
			return err
		}
	}
	return nil
}

// direct makes the job receive its sstable straight into dir under a new generation.
func (j *installJob) direct(dir string) error {
	var err error
	j.inst, j.desc, err = generation.Install(dir, j.in.Version, func(inst *fsx.Install, d descriptor.Descriptor) error {
		f, err := inst.Create(d.Filename(descriptor.Data))
		j.data, j.files = f, map[descriptor.Component]*os.File{descriptor.Data: f}
		return err
	})
	return err
}

// target is the sstable the job publishes: the filled one for a compressed partial.
func (j *installJob) target() descriptor.Descriptor {
	if j.pub != nil && j.in.Kind == wire.KindPartial {
		return j.pubDesc
	}
	return j.desc
}

// committer is the install a shared commit publishes.
func (j *installJob) committer() *fsx.Install {
	if j.pub != nil && j.in.Kind == wire.KindPartial {
		return j.pub
	}
	return j.inst
}

func (j *installJob) create(c descriptor.Component) (*os.File, error) {
	f, err := j.inst.Create(j.desc.Filename(c))
	if err != nil {
		return nil, err
	}
	j.files[c] = f
	return f, nil
}

// write puts one accepted Data frame's payload in place. A partial's index slice goes to the
// child's rebuild as it arrives (slice.PartialRebuild on a goroutine of its own): a BIG child's
// right away, a BTI child's once its rows slice, which the records point into and the sender
// sends first, is in; index frames that come before that wait in memory (bounded by
// Config.MaxIndexSlice).
func (j *installJob) write(d *wire.Data) error {
	switch d.Stream {
	case wire.StreamRuns:
		if j.crcw != nil {
			j.crcw.Write(d.Payload)
		}
		_, err := j.data.WriteAt(d.Payload, int64(d.Offset))
		return err
	case wire.StreamIndex:
		if j.feed == nil && j.rowsIn() {
			if err := j.startRebuild(); err != nil {
				return err
			}
		}
		if j.feed != nil {
			if err := j.feed.Write(d.Payload); err != nil {
				return fmt.Errorf("%w: %w", ErrManifest, err)
			}
			return nil
		}
		if j.index == nil {
			// Its length is announced (and bounded by MaxIndexSlice): one allocation, not a
			// doubling series whose garbage peaks at twice the slice.
			j.index = make([]byte, 0, j.in.Manifest.IndexSliceLength)
		}
		j.index = append(j.index, d.Payload...)
		return nil
	case wire.StreamComponent:
		if j.in.Kind == wire.KindEntire {
			if f := j.comps[d.Component]; f != nil {
				_, err := f.WriteAt(d.Payload, int64(d.Offset))
				return err
			}
			// Incoming.Accept admitted the frame at the next offset, within the length.
			j.mem[d.Component] = append(j.mem[d.Component], d.Payload...)
			return nil
		}
		j.rows = append(j.rows, d.Payload...)
		if j.index != nil && j.rowsIn() {
			// The index frames that came first go to the rebuild now.
			if err := j.startRebuild(); err != nil {
				return err
			}
			held := j.index
			j.index = nil
			if err := j.feed.Write(held); err != nil {
				return fmt.Errorf("%w: %w", ErrManifest, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: stream %v", ErrProtocol, d.Stream)
}

// rowsIn reports whether a partial's (or rows transfer's) index slice can be rebuilt as it
// arrives: always for BIG, for BTI once the whole rows slice is in.
func (j *installJob) rowsIn() bool {
	if j.in.Kind == wire.KindEntire {
		return false
	}
	if j.in.Version.Format == version.Big {
		return true
	}
	return uint64(len(j.rows)) == j.in.Manifest.Components[0].Length
}

// startRebuild starts the child's rebuild from the manifest (and, BTI, the rows slice) and
// the goroutine that feeds it.
func (j *installJob) startRebuild() error {
	m := j.in.Manifest
	spec, err := slice.SpecFromStatistics(j.in.Version, m.Statistics, j.rows)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrManifest, err)
	}
	if j.rebuild, err = slice.NewPartialRebuild(spec, j.inst, j.desc, j.in.Layout, j.rebuildOptions()); err != nil {
		return fmt.Errorf("%w: rebuilding: %w", ErrManifest, err)
	}
	j.feed = newRebuildFeed(j.rebuild)
	j.feed.arrived(int64(j.in.got[0])) // a positions slice's keys are read from Data.db as it comes
	return nil
}

// dataArrived tells the rebuild, if one runs, how much of Data.db is in place and checked.
func (j *installJob) dataArrived() {
	if j.feed != nil {
		j.feed.arrived(int64(j.in.got[0]))
	}
}

// rebuildOptions says what the index slice is and what it must hold: the announced count, its
// format and the ranges the session asked for.
func (j *installJob) rebuildOptions() slice.RebuildOptions {
	m := j.in.Manifest
	return slice.RebuildOptions{Partitions: int64(m.Partitions), Format: slice.IndexFormat(m.IndexFormat), Ranges: j.in.Ranges,
		Data: j.data, Compression: j.in.Info}
}

// file is the file a Data frame's payload goes to at its offset, or nil for the index
// and rows slices and an entire sstable's small components, which are kept in memory.
func (j *installJob) file(d *wire.Data) *os.File {
	switch {
	case d.Stream == wire.StreamRuns:
		return j.data
	case d.Stream == wire.StreamComponent && j.in.Kind == wire.KindEntire:
		return j.comps[d.Component]
	}
	return nil
}

// replay feeds the first n bytes of a Data.db kept by an interrupted session (path) through
// Accept and write, as if they had arrived again: one sequential read copies them into this
// install, re-verifies their chunk CRCs and rebuilds the digest and CRC.db state.
func (j *installJob) replay(path string, n int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, min(n, 1<<20))
	for off := int64(0); off < n; {
		k := min(int64(len(buf)), n-off)
		if _, err := f.ReadAt(buf[:k], off); err != nil {
			return fmt.Errorf("reading the kept Data.db prefix %s at %d: %w", path, off, err)
		}
		d := j.in.DataFrame(off, buf[:k])
		if err := j.in.Accept(&d); err != nil {
			return fmt.Errorf("kept Data.db prefix %s: %w", path, err)
		}
		if err := j.write(&d); err != nil {
			return err
		}
		off += k
	}
	return nil
}

// finish seals the sstable (seal), then commits it on its own (a rows sstable is then
// rewritten and published). It returns the partition count. Partial and entire sstables of a
// fetch go through seal and a shared commit instead (commitBatch).
func (j *installJob) finish(ctx context.Context) (int64, error) {
	partitions, err := j.seal()
	if err != nil {
		return 0, err
	}
	if j.in.Kind != wire.KindRows {
		if err := j.published(j.target()); err != nil {
			return 0, err
		}
	}
	if err := j.committer().Commit(); err != nil {
		return 0, err
	}
	j.final = j.target()
	if j.in.Kind == wire.KindRows {
		return partitions, j.rewriteRows(ctx, partitions)
	}
	return partitions, nil
}

// seal rebuilds (partial, rows) or completes and verifies (entire) the sstable: every file
// of its install is written, nothing is synced or published yet. It returns the partition
// count.
func (j *installJob) seal() (int64, error) {
	in, m := j.in, j.in.Manifest
	if in.Kind == wire.KindEntire {
		if err := j.finishEntire(); err != nil {
			return 0, err
		}
		// An entire copy of an sstable sluice filled carries its fillers (verify counts them).
		return int64(m.Partitions) - j.fillers, nil
	}
	spec, err := slice.SpecFromStatistics(in.Version, m.Statistics, j.rows)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	var partitions int64
	if j.feed != nil {
		if err := j.feed.wait(); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrManifest, err)
		}
	}
	if j.rebuild != nil {
		partitions = j.rebuild.Records()
	} else if partitions, err = slice.CountIndexSlice(j.index, slice.IndexFormat(m.IndexFormat)); err != nil {
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
	if j.crcw != nil {
		data.CRC, data.Digest = j.crcw.Result()
	}
	if j.rebuild != nil {
		_, err = j.rebuild.Finish(data)
	} else {
		// partitions is the Manifest's (checked above).
		_, err = slice.RebuildPartial(spec, j.inst, j.desc, in.Layout, j.index, data, j.rebuildOptions())
	}
	if err != nil {
		return 0, fmt.Errorf("%w: rebuilding: %w", ErrManifest, err)
	}
	// The slices are in the rebuilt files now; a job waiting for a shared commit holds no
	// more than its open files.
	j.index, j.rows, j.rebuild = nil, nil, nil
	if j.target() != j.desc {
		if err := j.refill(partitions); err != nil {
			return 0, err
		}
		// The sender's own fillers (a parent sluice filled) arrived as partitions.
		partitions = j.filled.Partitions
	}
	return partitions, nil
}

// refill makes the received partial, proven and rebuilt in the scratch directory as the
// sender laid it out, into the sstable the job publishes: every byte of its data in a
// partition its index addresses (slice.Slice over the session's ranges, each run ending at its
// last partition's end, filler partitions where the runs leave gaps), so that Cassandra's
// sequential readers read it as its index does, whatever the sender's version. The scratch
// copy is removed; the filled one waits for the shared commit.
func (j *installJob) refill(partitions int64) error {
	if err := j.inst.Publish(); err != nil {
		return err
	}
	recv, err := sstable.Open(j.desc.Prefix())
	if err != nil {
		return fmt.Errorf("%w: opening the received partial: %w", ErrChecksum, err)
	}
	defer recv.Close()
	ranges := j.in.Ranges
	if len(ranges) == 0 {
		// A session without ranges (tests' receivers) took the whole ring.
		min := recv.Partitioner.MinToken()
		ranges = token.RangeSet{{Left: min, Right: min}}
	}
	ctx := j.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	res, err := slice.Slice(ctx, recv, ranges, j.dir, slice.Options{Mode: slice.ModeAuto, ExactEnds: true,
		Into: &slice.Target{Inst: j.pub, Desc: j.pubDesc, Data: j.pubData}})
	switch {
	case errors.Is(err, slice.ErrCorrupt) || errors.Is(err, sstable.ErrCorrupt):
		return fmt.Errorf("%w: filling the received partial %s: %w", ErrChecksum, j.in.ID, err)
	case err != nil:
		return fmt.Errorf("filling the received partial %s: %w", j.in.ID, err)
	}
	if c := res.Children; len(c) != 1 || c[0].Partitions+c[0].FillerPartitions < partitions {
		return fmt.Errorf("%w: filling %d received partitions of %s gave %d sstables", ErrManifest, partitions, j.in.ID, len(res.Children))
	}
	j.filled = res.Children[0]
	recv.Close()
	if err := os.RemoveAll(j.scratch); err == nil {
		j.scratch = ""
	}
	return nil
}

// rewriteRows rewrites the received child (committed in the scratch directory) row by row
// over the whole ring into a second scratch directory, then publishes the result into the
// target directory under a new generation, its TOC last, and removes the scratch.
func (j *installJob) rewriteRows(ctx context.Context, partitions int64) error {
	child, err := sstable.Open(j.desc.Prefix())
	if err != nil {
		return fmt.Errorf("%w: opening the received child: %w", ErrChecksum, err)
	}
	defer child.Close()
	everything := token.RangeSet{{Left: child.Partitioner.MinToken(), Right: child.Partitioner.MinToken()}}
	out := filepath.Join(j.scratch, "rewritten")
	res, err := slice.Split(ctx, child, everything, out, slice.Options{Mode: slice.ModeRewrite})
	if err != nil {
		return fmt.Errorf("rewriting the rows of %s: %w", j.in.ID, err)
	}
	if len(res.Children) != 1 || res.Children[0].Partitions != partitions {
		return fmt.Errorf("%w: rewriting %d partitions gave %d sstables", ErrManifest, partitions, len(res.Children))
	}
	src := res.Children[0].Desc
	ents, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	var comps []descriptor.Component
	for _, e := range ents {
		if c, ok := strings.CutPrefix(e.Name(), src.Filename("")); ok && c != "" {
			comps = append(comps, descriptor.Component(c))
		}
	}
	// Data.db is created under the generation lock; the rest, and the copies, after it.
	var first *os.File
	j.pub, j.final, err = generation.Install(j.dir, j.in.Version, func(inst *fsx.Install, d descriptor.Descriptor) error {
		var err error
		first, err = inst.Create(d.Filename(descriptor.Data))
		return err
	})
	if err != nil {
		return err
	}
	for _, c := range comps {
		dst := first
		if c != descriptor.Data {
			if dst, err = j.pub.Create(j.final.Filename(c)); err != nil {
				return err
			}
		}
		if err := copyFile(dst, src.Path(c)); err != nil {
			return err
		}
	}
	if err := j.published(j.final); err != nil {
		return err
	}
	if err := j.pub.Commit(); err != nil {
		return err
	}
	// The sstable is installed: a scratch directory that fails to go now is swept by the
	// next Fetch of this request, and must not fail what is already published.
	_ = os.RemoveAll(j.scratch)
	return nil
}

// copyFile copies the file at path into dst (in-kernel where the file system can).
func copyFile(dst *os.File, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = fsx.CopyRange(dst, 0, f, 0, fi.Size())
	return err
}

func (j *installJob) finishEntire() error {
	in, m := j.in, j.in.Manifest
	if err := j.spillSmall(); err != nil {
		return err
	}
	if f := j.files[descriptor.Digest]; f != nil {
		b := make([]byte, 16)
		n, _ := f.ReadAt(b, 0)
		want, err := strconv.ParseUint(strings.TrimSpace(string(b[:n])), 10, 32)
		if err != nil {
			return fmt.Errorf("%w: Digest.crc32 %q", ErrManifest, b[:n])
		}
		if uint32(want) != in.Digest() || m.Digest != in.Digest() {
			return fmt.Errorf("%w: Data.db CRC32 %d, Digest.crc32 says %d, manifest %d", ErrChecksum, in.Digest(), want, m.Digest)
		}
	}
	toc := []descriptor.Component{}
	for _, c := range m.Components {
		toc = append(toc, descriptor.Component(c.Name))
	}
	write := func(c descriptor.Component, b []byte) error {
		f, err := j.create(c)
		if err != nil {
			return err
		}
		_, err = f.Write(b)
		toc = append(toc, c)
		return err
	}
	if err := write(descriptor.Statistics, m.Statistics); err != nil {
		return err
	}
	if len(m.Compression) > 0 {
		if err := write(descriptor.CompressionInfo, m.Compression); err != nil {
			return err
		}
	}
	toc = append(toc, descriptor.TOC)
	f, err := j.create(descriptor.TOC)
	if err != nil {
		return err
	}
	if _, err := f.Write(descriptor.AppendTOC(nil, toc)); err != nil {
		return err
	}
	return j.verify()
}

// smallComponent is the largest component of an entire sstable (Data.db aside) kept in
// memory as it arrives and written by seal, which runs beside the receive loop: for a small
// sstable, creating its files is most of that loop's own per-sstable work. A batch's bytes
// bound what its sstables hold (batchBytes).
const smallComponent = 256 << 10

// spillSmall creates and writes the components kept in memory.
func (j *installJob) spillSmall() error {
	for i, b := range j.mem {
		if j.comps[i] != nil {
			continue
		}
		f, err := j.create(descriptor.Component(j.in.Manifest.Components[i].Name))
		if err != nil {
			return err
		}
		if _, err := f.Write(b); err != nil {
			return err
		}
		j.comps[i] = f
	}
	j.mem = nil
	return nil
}

// verify runs sstable.Verify on the uncommitted files through a scratch directory of
// symbolic links with final names pointing at the install's temporaries.
func (j *installJob) verify() error {
	scratch, err := os.MkdirTemp("", "sluice-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	d := j.desc
	d.Dir = scratch
	for c, f := range j.files {
		target, err := filepath.Abs(f.Name())
		if err != nil {
			return err
		}
		if err := os.Symlink(target, d.Path(c)); err != nil {
			return err
		}
	}
	// The sender chose to send it whole because the ranges hold every partition: checked.
	rep, err := sstable.Verify(d.Prefix(), sstable.VerifyOptions{Ranges: j.in.Ranges})
	if err != nil {
		return fmt.Errorf("%w: verify: %w", ErrChecksum, err)
	}
	if !rep.OK {
		return fmt.Errorf("%w: verify: %v", ErrChecksum, rep.Problems)
	}
	j.fillers = rep.Fillers
	return nil
}

// abort removes every temporary and, for rows, the scratch directory. It is a no-op for
// what already committed into the target directory.
func (j *installJob) abort() {
	if j.feed != nil {
		_ = j.feed.wait() // the rebuild writes into the install's files
	}
	if j.inst != nil {
		j.inst.Abort()
	}
	if j.pub != nil {
		j.pub.Abort()
	}
	if j.scratch != "" {
		os.RemoveAll(j.scratch)
	}
}

// localCode maps a local install error to its wire code.
func localCode(err error) wire.Code {
	var nse *fsx.NoSpaceError
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, fsx.ErrNoSpace) || errors.As(err, &nse) {
		return wire.CodeNoSpace
	}
	return codeOf(err)
}
