package stream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/generation"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// installer receives one sstable into the target directory: nothing is visible under a final
// name there until the commit Finish hands back publishes it. The receiver, not the peer,
// names every file: a new generation and a component picked from a fixed list. There is one
// per kind (entireInstaller, partialInstaller, rowsInstaller); installFiles holds what they
// share.
//
// The contract, pebble's Writable's: after creation exactly one of Finish or Abort is called,
// and no other method after it. Abort removes everything the installer created; so does a
// Finish that fails. A Finish that succeeds hands everything still to be published or removed
// to the *pending it returns.
type installer interface {
	// write puts one accepted Data frame's payload in place.
	write(d *wire.Data) error
	// writable is the file d's payload of n bytes goes to, and the offset in it, for a data
	// plane that places payloads itself (splice); nil when the payload is kept in memory (the
	// index and rows slices, an entire sstable's small components, a filled partial's bytes
	// that are not written through).
	writable(d *wire.Data, n int64) (Writable, int64)
	// took says d's payload is in place and checked (a rebuild reading keys from Data.db
	// waits for them).
	took(d *wire.Data)
	// placed hands the installer payload bytes of d a data plane placed itself and read back
	// from the file, as write would have seen them (the CRC.db of an uncompressed child).
	placed(d *wire.Data, b []byte) error
	// data is the Data.db being received: kept under a second name and synced for a resume.
	data() Writable
	// publishes is the sstable the installer will publish, when it is named before Finish
	// (entire, partial: a batch's resume record names it before the shared commit); a rows
	// sstable is named by its rewrite.
	publishes() (descriptor.Descriptor, bool)
	// Finish seals the sstable (every file written and checked; a rows sstable rewritten)
	// and returns the commit that publishes it. ctx ends a fill or a rewrite.
	Finish(ctx context.Context) (*pending, error)
	// Abort removes every file and directory the installer created.
	Abort()
}

// newInstaller checks the target directory's free space for in and prepares its files.
// scratchPrefix names the private directories of those received into scratch.
func newInstaller(dir, scratchPrefix string, store storage, in *Incoming, strict bool) (installer, error) {
	need := int64(in.Total()) + 2*int64(in.Manifest.IndexSliceLength) + int64(len(in.Manifest.Statistics)) + 1<<20
	switch {
	case in.Kind == wire.KindRows:
		// The received child, its rewrite and the published copy of the rewrite; a rewrite
		// is at most the uncompressed data plus its index.
		need = 2*need + int64(in.Manifest.DataLength)
	case in.Kind == wire.KindPartial && in.Info != nil && len(in.Spans) == 0:
		// The received partial and its filled copy, until the first is removed (filled in
		// place, the one copy).
		need *= 2
	}
	if err := fsx.CheckFreeSpace(dir, need); err != nil {
		return nil, err
	}
	f := installFiles{in: in, dir: dir, store: store, strict: strict, files: map[descriptor.Component]Writable{}}
	switch in.Kind {
	case wire.KindEntire:
		return newEntireInstaller(f)
	case wire.KindPartial:
		return newPartialInstaller(f, scratchPrefix)
	case wire.KindRows:
		return newRowsInstaller(f, scratchPrefix)
	}
	return nil, fmt.Errorf("%w: sstable kind %v", ErrProtocol, in.Kind)
}

// installFiles is what every installer shares: the install its files are received into,
// their Writables, and the scratch directory of a kind received privately.
type installFiles struct {
	in    *Incoming
	dir   string // the target directory
	store storage
	inst  *fsx.Install
	desc  descriptor.Descriptor // the received files (in scratch for some kinds)
	files map[descriptor.Component]Writable
	dataW Writable
	// scratch is a private directory inside dir the sstable is received into (rows, and a
	// compressed partial, which is then filled), or "".
	scratch string
	// finished: the Writables are finished (finishFiles), so abort does not abort them too.
	finished bool
	// strict verifies the sstable by Cassandra's sequential rules before it is published
	// (Config.VerifyStrict): an entire one, or a partial filled as it arrived.
	strict bool
}

// direct receives the sstable straight into dir under a new generation, Data.db first
// (created under the generation lock).
func (f *installFiles) direct() error {
	var err error
	f.inst, f.desc, err = generation.Install(f.dir, f.in.Version, func(inst *fsx.Install, d descriptor.Descriptor) error {
		w, err := inst.Create(d.Filename(descriptor.Data))
		if err == nil {
			f.dataW = f.store.writable(w)
			f.files[descriptor.Data] = f.dataW
		}
		return err
	})
	return err
}

// inScratch receives the sstable into a new private directory inside dir, as generation 1:
// on the target's file system (renames and clones stay cheap), invisible to Cassandra, which
// lists only the files of a table directory.
func (f *installFiles) inScratch(scratchPrefix string) error {
	var err error
	if f.scratch, err = os.MkdirTemp(f.dir, scratchPrefix); err != nil {
		return err
	}
	f.desc = descriptor.Descriptor{Dir: f.scratch, Version: f.in.Version, ID: "1"}
	if f.inst, err = fsx.NewInstall(f.scratch, f.desc.Filename(descriptor.TOC)); err != nil {
		return err
	}
	f.dataW, err = f.create(descriptor.Data)
	return err
}

// create creates component c of the received sstable.
func (f *installFiles) create(c descriptor.Component) (Writable, error) {
	file, err := f.inst.Create(f.desc.Filename(c))
	if err != nil {
		return nil, err
	}
	w := f.store.writable(file)
	f.files[c] = w
	return w, nil
}

func (f *installFiles) data() Writable { return f.dataW }

// writeAt writes a payload at off of w, an error saying which sstable and directory.
func (f *installFiles) writeAt(w Writable, p []byte, off int64) error {
	if _, err := w.WriteAt(p, off); err != nil {
		return f.writeErr(err)
	}
	return nil
}

// writeErr says where a write of the received sstable failed: its ID and the target
// directory (an ENOSPC names the file system that is full).
func (f *installFiles) writeErr(err error) error {
	return fmt.Errorf("receiving %s into %s: %w", f.in.ID, f.dir, err)
}

// finishFiles finishes every Writable: nothing is written to them any more.
func (f *installFiles) finishFiles() error {
	f.finished = true
	var errs []error
	for _, w := range f.files {
		if err := w.Finish(); err != nil {
			errs = append(errs, f.writeErr(err))
		}
	}
	return errors.Join(errs...)
}

// abort gives up every Writable, removes the install's temporaries and the scratch directory.
func (f *installFiles) abort() {
	if !f.finished {
		for _, w := range f.files {
			w.Abort()
		}
	}
	if f.inst != nil {
		f.inst.Abort()
	}
	if f.scratch != "" {
		os.RemoveAll(f.scratch)
	}
}

// pending is a sealed sstable waiting for the commit that makes it visible: alone (commit) or
// with a batch (fsx.CommitAll of install, then committed). Exactly one of commit, committed
// or discard is called.
type pending struct {
	install    *fsx.Install
	final      descriptor.Descriptor // the sstable the commit publishes
	partitions int64                 // its partitions, less fillers
	// fill is what a compressed partial's fill made, fillers the filler partitions an entire
	// sstable carries (one sluice filled, sent whole).
	fill    fill
	fillers int64
	// strict: sstable.Verify with Strict passed on the files the commit publishes.
	strict bool
	// scratch, a private directory, goes once the sstable is published or given up.
	scratch string
}

// fill is what filling a received compressed partial made (slice.Child's counts).
type fill struct {
	runs                                        int
	fillerPartitions, fillerBytes, encodedBytes int64
}

// verifyUncommitted runs sstable.Verify, with every partition held to ranges (and strictly, by
// Cassandra's sequential rules, when strict), on the files inst has created for the sstable d
// but not yet published: through a scratch directory of symbolic links under their final
// names, pointing at their temporaries. A problem is an ErrChecksum naming it.
func verifyUncommitted(inst *fsx.Install, d descriptor.Descriptor, ranges token.RangeSet, strict bool) (*sstable.Report, error) {
	scratch, err := os.MkdirTemp("", "sluice-verify-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	d.Dir = scratch
	for name, tmp := range inst.Temporaries() {
		target, err := filepath.Abs(tmp)
		if err != nil {
			return nil, err
		}
		if err := os.Symlink(target, filepath.Join(scratch, name)); err != nil {
			return nil, err
		}
	}
	rep, err := sstable.Verify(d.Prefix(), sstable.VerifyOptions{Ranges: ranges, Strict: strict})
	if err != nil {
		return rep, fmt.Errorf("%w: verify: %w", ErrChecksum, err)
	}
	if !rep.OK {
		return rep, fmt.Errorf("%w: verify: %v", ErrChecksum, rep.Problems)
	}
	return rep, nil
}

// commit publishes the sstable on its own; on an error nothing of it remains.
func (p *pending) commit() error {
	if err := p.install.Commit(); err != nil {
		p.discard()
		return err
	}
	p.committed()
	return nil
}

// committed finishes a published sstable: its scratch directory goes. A scratch directory
// that fails to go now is swept by the next Fetch of this request, and must not fail what is
// already published.
func (p *pending) committed() {
	if p.scratch != "" {
		_ = os.RemoveAll(p.scratch)
	}
}

// discard removes everything of an sstable whose commit failed (and rolled back) or will not
// happen.
func (p *pending) discard() {
	p.install.Abort()
	if p.scratch != "" {
		os.RemoveAll(p.scratch)
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
