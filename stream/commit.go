package stream

import (
	"context"
	"errors"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/wire"
)

// Shared commits: the one place sstables received whole are published, through
// fsx.CommitAll, whatever their kind's installer. A fetch of many small sstables spent most of its time in syncs: each
// install fsynced every file, its directory three times and the resume record twice, and
// the next sstable's bytes waited for all of it and for its rebuild. Now an sstable that
// arrived whole waits, unsynced and invisible, in a batch;
// a batch is finished (installer.Finish: rebuilt or verified, every file written) and committed by
// fsx.CommitAll (one syncfs, or one fsync per file for a few files, and three directory
// syncs for the whole batch) on a goroutine of its own while the next sstables' bytes flow,
// after one save of the resume record naming all of them.
//
// Crash argument: nothing of a batch is visible before CommitAll has made its files durable
// (each install keeps its own intent record and renames its TOC last); the resume record
// names a batch's sstables before the commit, and loadState drops every name whose TOC does
// not exist, so a crash before or during the commit fetches those sstables again and a
// crash after it does not. The Installed acknowledgements go out only after the commit.

const (
	// defaultCommitBatch and batchBytes bound a batch: how many sealed sstables
	// (Config.CommitBatch), and how many received bytes of them, may wait for one shared
	// commit. A batch also goes when the next sstable is itself batchBytes or more (small
	// ones do not wait through a big one) and when nothing more is to arrive.
	defaultCommitBatch = 64
	batchBytes         = 64 << 20
)

// commitDue says whether the sealed sstables waiting (count of them, bytes received for
// them) should be committed now, before an sstable of next bytes (0: none yet) is received,
// with batches of at most limit sstables.
func commitDue(count, limit int, bytes, next int64, allReceived bool) bool {
	switch {
	case count == 0:
		return false
	case allReceived, count >= limit, bytes >= batchBytes, next >= batchBytes:
		return true
	}
	return false
}

// sealed is an sstable received whole, waiting for its Finish and commit: inst until Finish
// is called (on the committing goroutine), then done, what Finish handed back.
type sealed struct {
	in       *Incoming
	inst     installer
	done     *pending
	part     string // its kept Data.db, or ""
	replayed int64
}

// commitRun is a batch being finished and committed on its own goroutine.
type commitRun struct {
	ctx   context.Context // the session's: ends a fill
	batch []*sealed
	// sealErrs[i] is why batch[i] could not be finished (it is left out of the commit).
	sealErrs []error
	done     chan error // the commit's error, after sealErrs are set
}

// beforeSharedCommit, set only by tests, runs on the committing goroutine before a batch's
// files are synced; an error ends the session there, as a crash between the data written
// and the shared sync would.
var beforeSharedCommit func() error

// seal queues t's sstable, received whole, to be finished and committed with a batch.
func (rs *recvSession) seal(t *transfer) error {
	rs.sealed = append(rs.sealed, &sealed{in: t.in, inst: t.inst, part: t.part, replayed: t.replayed})
	rs.sealedBytes += int64(t.in.Received())
	t.inst = nil // the batch owns it now
	rs.sm.Received(t.in.ID)
	return rs.commitIfDue(0)
}

// commitIfDue starts the shared commit of the waiting batch when commitDue says so, before
// an sstable of next bytes is received, and collects a finished earlier batch.
func (rs *recvSession) commitIfDue(next int64) error {
	if commitDue(len(rs.sealed), rs.cfg.CommitBatch, rs.sealedBytes, next, rs.sm.AllReceived()) {
		return rs.startCommit()
	}
	return rs.settle(false)
}

// startCommit records the waiting batch in the resume record and commits it on a new
// goroutine, after the batch before it is settled (one commit at a time).
func (rs *recvSession) startCommit() error {
	if err := rs.settle(true); err != nil {
		return err
	}
	batch := rs.sealed
	rs.sealed, rs.sealedBytes = nil, 0
	tocs := map[string]string{}
	for _, s := range batch {
		d, _ := s.inst.publishes() // entire and partial: named from the start
		tocs[s.in.ID] = d.Filename(descriptor.TOC)
	}
	if err := rs.state.publishing(tocs); err != nil {
		rs.sealed = batch // aborted with the session
		return err
	}
	run := &commitRun{ctx: rs.ctx, batch: batch, sealErrs: make([]error, len(batch)), done: make(chan error, 1)}
	rs.committing = run
	go run.run()
	return nil
}

// run finishes every sstable of the batch, then commits those that finished.
func (run *commitRun) run() {
	var ins []*fsx.Install
	for i, s := range run.batch {
		inst := s.inst
		s.inst = nil // Finish ends it either way
		if s.done, run.sealErrs[i] = inst.Finish(run.ctx); run.sealErrs[i] == nil {
			ins = append(ins, s.done.install)
		}
	}
	if beforeSharedCommit != nil {
		if err := beforeSharedCommit(); err != nil {
			run.done <- sessionErr{err}
			return
		}
	}
	if len(ins) == 0 {
		run.done <- nil
		return
	}
	run.done <- fsx.CommitAll(ins...)
}

// settle collects the batch being committed, waiting for it when block: its sstables are
// installed and acknowledged, or, when the commit failed (and rolled back), each of them
// fails alone. An error ends the session.
func (rs *recvSession) settle(block bool) error {
	run := rs.committing
	if run == nil {
		return nil
	}
	var err error
	if block {
		err = <-run.done
	} else {
		select {
		case err = <-run.done:
		default:
			return nil
		}
	}
	rs.committing = nil
	if se, ok := err.(sessionErr); ok {
		// As a crash would: nothing published, the record keeps naming the batch (loadState
		// drops names without a TOC).
		for _, s := range run.batch {
			if s.done != nil {
				s.done.discard()
			}
		}
		return se.error
	}
	var errs []error
	var failed []*sealed
	for i, s := range run.batch {
		switch {
		case run.sealErrs[i] != nil:
			errs = append(errs, rs.commitFailed([]*sealed{s}, run.sealErrs[i]))
		case err != nil:
			failed = append(failed, s)
		default:
			s.done.committed()
			if crashAfterPublish != nil && crashAfterPublish() {
				return errCrashAfterPublish
			}
			errs = append(errs, rs.installed(s))
		}
	}
	if len(failed) > 0 {
		errs = append(errs, rs.commitFailed(failed, err))
	}
	return errors.Join(errs...)
}

// installed finishes a committed sstable: the resume record stops naming its kept prefix,
// the result lists it and the sender hears of it.
func (rs *recvSession) installed(s *sealed) error {
	in, p := s.in, s.done
	if err := rs.state.installed(in.ID, s.part); err != nil {
		return err
	}
	got := int64(in.Received()) - s.replayed
	f := Fetched{Path: p.final.Prefix(), Kind: in.Kind.String(), SSTable: in.ID, Partitions: p.partitions, Bytes: got, Runs: 1}
	if in.Kind == wire.KindPartial {
		f.Runs = len(in.Layout.Segments)
		if c := p.fill; c.runs > 0 {
			f.Runs, f.FillerPartitions, f.FillerBytes, f.ReencodedBytes = c.runs, c.fillerPartitions, c.fillerBytes, c.encodedBytes
		}
	}
	if in.Kind == wire.KindEntire {
		f.FillerPartitions = p.fillers
	}
	f.StrictVerified = p.strict
	rs.res.SSTables = append(rs.res.SSTables, f)
	rs.progress(func(st *SessionStatus) { st.FilesDone++; st.BytesDone = rs.res.BytesReceived })
	rs.cfg.observeSSTable(Receiving, in.Kind.String(), got, nil)
	return rs.send(rs.sm.Installed(in.ID, uint64(p.partitions)).Send...)
}

// commitFailed fails sstables that could not be finished, or whose shared commit failed and
// was rolled back: none of them is visible, the record stops naming them, and the sender
// is told.
func (rs *recvSession) commitFailed(batch []*sealed, err error) error {
	ids := make([]string, len(batch))
	for i, s := range batch {
		ids[i] = s.in.ID
	}
	errs := []error{rs.state.unpublished(ids...)}
	code := localCode(err)
	for _, s := range batch {
		if s.done != nil {
			s.done.discard()
		}
		errs = append(errs, rs.state.drop(s.in.ID, s.part))
		rs.failed(s.in.ID, code, err)
		rs.cfg.observeSSTable(Receiving, s.in.Kind.String(), 0, err)
		errs = append(errs, rs.send(rs.sm.Failed(s.in.ID, code, err.Error()).Send...))
	}
	return errors.Join(errs...)
}

// drain ends a session's shared commits: a batch being committed is waited for (and what it
// installed is listed), and the sealed sstables still waiting are aborted (their kept
// prefixes stay for a resume).
func (rs *recvSession) drain() {
	if rs.committing != nil {
		_ = rs.settle(true)
	}
	for _, s := range rs.sealed {
		s.inst.Abort()
	}
	rs.sealed, rs.sealedBytes = nil, 0
}
