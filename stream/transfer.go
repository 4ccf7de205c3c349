package stream

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/wire"
)

// receive reads the current sstable's data into an installer and commits it, or fails the
// sstable. Only a session-level problem (connection gone, context done, data plane broken)
// is returned as an error; then the verified prefix of Data.db is kept for a resume.
func (rs *recvSession) receive(ctx context.Context, in *Incoming) error {
	plane, err := rs.openInbound(ctx, in.ID)
	if err != nil {
		return fmt.Errorf("waiting for the data of %s: %w", in.ID, err)
	}
	// A big sstable next: the sealed small ones are committed while it streams.
	if err := rs.commitIfDue(int64(in.Total())); err != nil {
		return err
	}
	t := &transfer{rs: rs, ctx: ctx, in: in, plane: plane}
	st := t.begin()
	defer func() {
		if t.inst != nil { // nil once handed on: to a batch, or finished
			t.inst.Abort()
		}
	}()
	if st != nil {
		return t.fail(st)
	}
	st = t.pump()
	// A checkpoint still syncing is recorded before the sstable is installed or failed.
	if err := t.settle(); err != nil && st == nil {
		st = stopped(err, false)
	}
	if st != nil {
		return t.fail(st)
	}
	if st := t.install(); st != nil {
		return t.fail(st)
	}
	return nil
}

// transfer is one sstable being received: its checks (in), its installer (inst), the data
// plane it arrives on and the name its Data.db is kept under for a resume.
type transfer struct {
	rs         *recvSession
	ctx        context.Context
	in         *Incoming
	plane      inbound
	inst       installer
	part       string // the kept Data.db (a hard link to the installer's), or ""
	replayed   int64  // bytes of a kept prefix replayed instead of received
	sinceRport int64
	// syncing is a checkpoint's fsync of the kept Data.db in progress beside the receive
	// loop, whose record (synced) is written once it is done (settle).
	syncing chan error
	synced  *partialState
}

// stop is why a transfer stopped: err, and whether every byte accepted so far was also
// written (so that its verified prefix may be kept).
type stop struct {
	err    error
	intact bool
}

func stopped(err error, intact bool) *stop { return &stop{err: err, intact: intact} }

// begin opens the installer and, when the sender resumes this sstable after a kept prefix,
// replays that prefix into it; then gives the Data.db its kept name.
func (t *transfer) begin() *stop {
	rs, in := t.rs, t.in
	inst, err := newInstaller(rs.dir, rs.state.scratchPattern(), rs.cfg.storage, in, rs.cfg.VerifyStrict)
	if err != nil {
		return stopped(err, false)
	}
	t.inst = inst
	path, off, fill, err := rs.state.replayFor(in)
	if err != nil {
		return stopped(err, false)
	}
	if off > 0 {
		// The sender restarts Data.db at off: the kept prefix fills the gap, replayed through
		// the installer, or (filled in place) taken up as the child it already is.
		if fill != nil {
			p, ok := inst.(*partialInstaller)
			if !ok {
				err = fmt.Errorf("%w: %s's kept prefix was filled in place, this receive is not", ErrManifest, in.ID)
			} else {
				err = p.resumeFill(path, *fill)
			}
		} else {
			err = replay(inst, in, path, off)
		}
		if err != nil {
			return stopped(err, false)
		}
		t.replayed = off
	}
	if t.part, err = rs.state.keep(inst.data()); err != nil {
		return stopped(err, false)
	}
	if t.replayed > 0 {
		// Record the new kept file before dropping the old one.
		if err := rs.state.checkpoint(t.in, inst.data(), t.part); err != nil {
			return stopped(err, false)
		}
	}
	return nil
}

// pump is the one receive loop: each frame's header is admitted by the Receiver's checks,
// its payload taken by the data plane into the installer, and the bytes accounted.
func (t *transfer) pump() *stop {
	var d wire.Data
	for {
		n, end, err := t.plane.next(&d)
		if err != nil {
			return stopped(err, true)
		}
		if end {
			return nil
		}
		s, err := t.in.admit(&d, uint64(n))
		if err != nil {
			return stopped(err, false)
		}
		if err := t.plane.take(t.ctx, t.in, t.inst, s, &d, n); err != nil {
			// A TCP payload cut short leaves the connection mid-frame (the plane is broken):
			// every byte accepted before this frame was written, so its prefix may be kept.
			var cut payloadCut
			return stopped(err, t.plane.broken() || errors.As(err, &cut))
		}
		t.inst.took(&d)
		if st := t.account(n); st != nil {
			return st
		}
	}
}

// account counts n payload bytes received and written: the inbound limit, progress reports
// and checkpoints.
func (t *transfer) account(n int64) *stop {
	rs := t.rs
	rs.res.BytesReceived += n
	if err := rs.cfg.Inbound.Wait(t.ctx, int(n)); err != nil {
		return stopped(err, true)
	}
	if t.sinceRport += n; t.sinceRport >= progressBytes {
		t.sinceRport = 0
		rs.progress(func(s *SessionStatus) { s.BytesDone = rs.res.BytesReceived })
	}
	if t.syncing != nil {
		select {
		case err := <-t.syncing:
			if err := t.recordSynced(err); err != nil {
				return stopped(err, false)
			}
		default:
		}
	}
	if t.in.Progress(n) && t.part != "" && t.syncing == nil {
		// The prefix is recorded once it is durable: its fsync runs beside the receive loop
		// (a checkpoint every 64 MiB would otherwise stop it for the disk each time), and a
		// checkpoint due while one is in flight is left to the next.
		if p, ok := rs.state.prefix(t.in, t.part); ok {
			data, done := t.inst.data(), make(chan error, 1)
			t.synced, t.syncing = p, done
			go func() { done <- data.Sync() }()
		}
	}
	return nil
}

// settle waits for a checkpoint's fsync in progress and writes its record.
func (t *transfer) settle() error {
	if t.syncing == nil {
		return nil
	}
	return t.recordSynced(<-t.syncing)
}

// recordSynced writes the record of the checkpoint whose fsync ended with err.
func (t *transfer) recordSynced(err error) error {
	p := t.synced
	t.syncing, t.synced = nil, nil
	if err != nil {
		return err
	}
	return t.rs.state.record(p)
}

// install completes the sstable and queues it to be finished and committed with a batch
// (commit.go); a rows sstable, which is named by its rewrite, is finished, committed and
// acknowledged here.
func (t *transfer) install() *stop {
	rs, in := t.rs, t.in
	if err := in.Complete(); err != nil {
		return stopped(err, false)
	}
	if in.Kind != wire.KindRows {
		if err := rs.seal(t); err != nil {
			return &stop{err: sessionErr{err}}
		}
		return nil
	}
	inst := t.inst
	t.inst = nil // Finish, called now, ends it either way
	p, err := inst.Finish(t.ctx)
	if err != nil {
		// Every byte arrived and was written: a cancelled rebuild or rewrite may keep them.
		return stopped(err, true)
	}
	// The record names the sstable before its commit (resumeState.publishing).
	if err := rs.state.publishing(map[string]string{in.ID: p.final.Filename(descriptor.TOC)}); err != nil {
		p.discard()
		return stopped(err, true)
	}
	if err := p.commit(); err != nil {
		// Not published: drop the entry before its generation can be reused by another
		// install (best effort; the TOC check on load covers a crash here).
		_ = rs.state.unpublished(in.ID)
		return stopped(err, true)
	}
	if crashAfterPublish != nil && crashAfterPublish() {
		return &stop{err: sessionErr{errCrashAfterPublish}}
	}
	rs.sm.Received(in.ID)
	if err := rs.installed(&sealed{in: in, part: t.part, replayed: t.replayed, done: p}); err != nil {
		return &stop{err: sessionErr{err}}
	}
	return nil
}

// crashAfterPublish, set only by tests, ends the session right after an sstable became
// visible, as a process killed at that instant would, before anything else is recorded.
var crashAfterPublish func() bool

var errCrashAfterPublish = errors.New("stream: test crash after publishing an sstable")

// sessionErr marks an error that ends the session whatever else holds (the control stream
// failed after the sstable was installed).
type sessionErr struct{ error }

func (e sessionErr) Unwrap() error { return e.error }

// fail ends the transfer as DecideFailure says: the session ends (keeping the verified
// prefix when it may), or this sstable alone fails and the sender is told.
func (t *transfer) fail(st *stop) error {
	rs, in, err := t.rs, t.in, st.err
	if se, ok := err.(sessionErr); ok {
		return se.error
	}
	over := func() bool {
		return t.plane.broken() || t.ctx.Err() != nil || rs.conn.Context().Err() != nil || connectionGone(err)
	}
	if !over() {
		// The rest of this sstable's data is still on its way: stop it (QUIC) or skip it to
		// reach the next sstable's (TCP).
		if aerr := t.plane.abandon(in.ID, localCode(err)); aerr != nil {
			err, st.intact = errors.Join(err, aerr), false
		}
	}
	act := DecideFailure(FailureFacts{SessionOver: over(), PrefixIntact: st.intact, Kept: t.part != ""})
	if act.EndSession {
		if act.Checkpoint {
			if cerr := rs.state.checkpoint(in, t.keptData(), t.part); cerr != nil {
				err = errors.Join(err, fmt.Errorf("keeping the received prefix of %s: %w", in.ID, cerr))
			}
		}
		// A kept file the record does not name (nothing verified yet, or a prefix not
		// intact) has nothing to resume from: it goes now rather than at the next sweep.
		if rs.state.unnamed(t.part) {
			if rerr := removeIfExists(filepath.Join(rs.state.dir, t.part)); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return err
	}
	if derr := rs.state.drop(in.ID, t.part); derr != nil {
		return errors.Join(err, derr)
	}
	code := localCode(err)
	rs.failed(in.ID, code, err)
	rs.cfg.observeSSTable(Receiving, in.Kind.String(), 0, err)
	return rs.send(rs.sm.Failed(in.ID, code, err.Error()).Send...)
}

// keptData is the Data.db a checkpoint syncs: the installer's, or nil once it is gone.
func (t *transfer) keptData() Writable {
	if t.inst != nil {
		return t.inst.data()
	}
	return nil
}

const (
	// progressBytes is how often, in received bytes, onProgress hears of a transfer.
	progressBytes = 1 << 20
)
