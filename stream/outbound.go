package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/wire"
)

// outbound is the sending half of a data plane: how one sstable's Data frames leave. QUIC
// gives every sstable a unidirectional stream of its own, ended by FIN; the TCP data plane
// carries every sstable on one connection, each ended by an empty Data frame. The session's
// one send loop (sendSession.pump) runs over either. A plane only moves bytes: what it needs
// of the session is the narrow planeLink, and it never reads the control stream or steps the
// Sender (pump does, between frames).
type outbound interface {
	// open starts sstable id's data.
	open(ctx context.Context, id string) error
	// shared says the plane carries every sstable on one connection: a receiver that fails
	// an sstable cannot reset its data, so the send loop looks for that outcome on the
	// control stream between frames and stops sending it. A plane of its own per sstable
	// reports the receiver's reset as a write error instead.
	shared() bool
	// write sends one frame: header d, then the n payload bytes of src from done.
	write(ctx context.Context, d *wire.Data, src *source, done, n int64) error
	// finish ends the sstable's data after the loop returned err (nil: all sent), and
	// returns what ends the session, if anything.
	finish(ctx context.Context, id string, err error) error
}

// planeLink is what a data plane may ask of its session, and all of it: the frames it sends
// are built in the session's one buffer, and a local failure of an sstable is told to the
// receiver on the control stream.
type planeLink interface {
	// frame reads the n payload bytes of src from done straight into the session's buffer
	// behind room for d's header, writes the header in front and returns the whole frame.
	frame(d *wire.Data, src *source, done, n int64) ([]byte, error)
	// header encodes d's header for an n-byte payload the plane sends itself (sendfile).
	header(d *wire.Data, n int64) []byte
	// failed tells the receiver that sstable id failed here (Failure{internal}).
	failed(id string, err error) error
}

// sendOne sends one planned sstable: its Manifest on the control stream, then its sources
// as Data frames on the data plane.
func (ss *sendSession) sendOne(ctx context.Context, p *prepared) error {
	id := p.o.planned.ID
	if ok, err := ss.beginOne(p); !ok {
		return err
	}
	sources := p.srcs
	defer closeSources(sources)
	timeout := ss.srv.cfg.IdleTimeout
	var plane outbound = &quicOut{link: ss, conn: ss.conn, timeout: timeout}
	if ss.offer != nil {
		dc, err := ss.dataConn(ctx)
		if err != nil {
			return err
		}
		plane = &tcpOut{link: ss, dc: dc, peer: ss.peer, timeout: timeout}
	}
	if err := plane.open(ctx, id); err != nil {
		return err
	}
	return plane.finish(ctx, id, ss.pump(ctx, plane, id, sources))
}

// pump is the one send loop: every source in frames of at most the session's frame size,
// each waiting on the outbound limiter and counted in the session's progress. Sources go in
// order, except one made ahead (readAhead: the index slice), whose frames also ride along
// between the frames of the sources before it whenever a whole one is ready: the receiver
// rebuilds from them while the runs still arrive, and the index pass is not left to the end.
// File sources are read ahead as the read-ahead policy says (aheadOf).
func (ss *sendSession) pump(ctx context.Context, plane outbound, id string, sources []source) error {
	size := int64(len(ss.buf) - hdrRoom)
	done := make([]int64, len(sources))
	total := func(i int) int64 {
		if sources[i].mem != nil {
			return int64(len(sources[i].mem))
		}
		return sources[i].n
	}
	frameOf := func(i int) int64 {
		if f := sources[i].frame; f > 0 {
			return min(f, size)
		}
		return size
	}
	frame := func(i int) error {
		src := &sources[i]
		if plane.shared() {
			if stop, err := ss.outcomeKnown(ctx, id); stop || err != nil {
				if err == nil {
					err = errStopped
				}
				return err
			}
		}
		n := min(frameOf(i), total(i)-done[i])
		d := wire.Data{SSTableID: id, Stream: src.stream, Component: src.component, Offset: uint64(src.start + done[i])}
		if hl := wire.DataHeaderLength(&d, int(n)); hl > hdrRoom {
			return fmt.Errorf("stream: Data header of %d bytes", hl)
		}
		aheadOf(sources, i, done[i])
		if err := ss.srv.out.Wait(ctx, int(n)); err != nil {
			return err
		}
		if err := plane.write(ctx, &d, src, done[i], n); err != nil {
			return err
		}
		done[i] += n
		ss.tr.update(func(st *SessionStatus) { st.BytesDone += n })
		return nil
	}
	along := -1
	for i := range sources {
		if _, ok := sources[i].seq.(*readAhead); ok {
			along = i
		}
	}
	for i := range sources {
		for done[i] < total(i) {
			err := frame(i)
			if err == nil && along > i && done[along] < total(along) && sources[along].seq.(*readAhead).ready(min(frameOf(along), total(along)-done[along])) &&
				inStep(sources, along, done, total, frameOf(along)) {
				err = frame(along)
			}
			if errors.Is(err, errStopped) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// inStep says whether the next frame of sources[along], a read-ahead source interleaved with
// the sources before it, may go now: always, unless it is paced; then only while the share of
// it sent, that frame included, stays within the share of the sources before it sent.
func inStep(sources []source, along int, done []int64, total func(int) int64, size int64) bool {
	if !sources[along].paced {
		return true
	}
	var sent, all int64
	for j := range along {
		sent, all = sent+done[j], all+total(j)
	}
	next := min(done[along]+size, total(along))
	return all == 0 || float64(next)/float64(total(along)) <= float64(sent)/float64(all)
}

// outcomeKnown reads what the control stream holds and says whether the receiver already gave
// sstable id an outcome (it failed it), so that the rest is not sent.
func (ss *sendSession) outcomeKnown(ctx context.Context, id string) (bool, error) {
	if err := ss.poll(ctx, false); err != nil {
		return false, err
	}
	acked, _ := ss.sm.Outcome(id)
	return acked, nil
}

// errStopped ends pump early without an error: the receiver gave the sstable an outcome.
var errStopped = errors.New("stream: stopped by the receiver")

// quicOut is one unidirectional QUIC stream per sstable.
type quicOut struct {
	link    planeLink
	conn    *quic.Conn
	timeout time.Duration // for each write
	us      *quic.SendStream
}

func (q *quicOut) open(ctx context.Context, _ string) error {
	us, err := q.conn.OpenUniStreamSync(ctx)
	q.us = us
	return err
}

// shared: a receiver that fails the sstable resets its stream, which the next write reports.
func (q *quicOut) shared() bool { return false }

func (q *quicOut) write(_ context.Context, d *wire.Data, src *source, done, n int64) error {
	frame, err := q.link.frame(d, src, done, n)
	if err != nil {
		return err
	}
	writeDeadline(q.us, q.timeout)
	_, err = q.us.Write(frame)
	return err
}

// frame reads the payload straight into the session's one buffer behind room for the
// frame header, which is then written in front of it, so that a frame leaves in one Write
// with no copy (planeLink).
func (ss *sendSession) frame(d *wire.Data, src *source, done, n int64) ([]byte, error) {
	buf := ss.buf
	payload := buf[hdrRoom : hdrRoom+n]
	switch {
	case src.mem != nil:
		copy(payload, src.mem[done:done+n])
	case src.seq != nil: // read in order, frame after frame
		if _, err := io.ReadFull(src.seq, payload); err != nil {
			return nil, fmt.Errorf("producing the index slice at %d: %w", done, err)
		}
	default:
		if err := src.r.ReadAt(payload, src.off+done); err != nil {
			return nil, err
		}
	}
	hl := wire.DataHeaderLength(d, int(n))
	wire.AppendDataHeader(buf[hdrRoom-hl:hdrRoom-hl], d, int(n))
	return buf[hdrRoom-hl : hdrRoom+n], nil
}

// header encodes d's header into the session's buffer (planeLink).
func (ss *sendSession) header(d *wire.Data, n int64) []byte {
	return wire.AppendDataHeader(ss.buf[:0], d, int(n))
}

// failed tells the receiver that sstable id failed on this side (planeLink).
func (ss *sendSession) failed(id string, err error) error {
	return ss.send(&wire.Failure{Code: wire.CodeInternal, SSTableID: id, Reason: err.Error()})
}

// finish closes the stream (FIN), or resets it on a local error and tells the receiver why
// on the control stream; a reset by the receiver needs no word: it said why itself.
func (q *quicOut) finish(ctx context.Context, id string, err error) error {
	if err == nil {
		return q.us.Close()
	}
	q.us.CancelWrite(quic.StreamErrorCode(wire.CodeInternal))
	var se *quic.StreamError
	if errors.As(err, &se) && se.Remote {
		return nil
	}
	if ctx.Err() != nil || q.conn.Context().Err() != nil {
		return err
	}
	return q.link.failed(id, err)
}

// tcpOut is the session's TCP data connection, plain or TLS. Unlike QUIC, one connection
// carries every sstable, so a local error in the middle of a frame cannot be confined to one
// sstable: it fails the session.
type tcpOut struct {
	link    planeLink
	dc      *dataConn
	peer    string
	timeout time.Duration // for each write
}

func (t *tcpOut) open(context.Context, string) error { return nil }

// shared: one connection carries every sstable.
func (t *tcpOut) shared() bool { return true }

// write sends a file payload over plain TCP as the header from memory and the bytes with
// sendfile; any other frame (TLS, a payload from memory, or a Readable without a file)
// leaves in one Write from the session's buffer, as on QUIC.
func (t *tcpOut) write(ctx context.Context, d *wire.Data, src *source, done, n int64) error {
	writeDeadline(t.dc.c, t.timeout)
	plain := t.dc.plain()
	var f *os.File
	if src.r != nil {
		f = src.r.File()
	}
	if plain == nil || f == nil {
		frame, err := t.link.frame(d, src, done, n)
		if err != nil {
			return err
		}
		_, err = t.dc.c.Write(frame)
		return err
	}
	if _, err := t.dc.c.Write(t.link.header(d, n)); err != nil {
		return err
	}
	_, err := fsx.Sendfile(ctx, plain, f, src.off+done, n)
	return err
}

// finish ends the sstable with an empty Data frame (QUIC's FIN), also when the receiver
// stopped it early.
func (t *tcpOut) finish(_ context.Context, id string, err error) error {
	if err != nil {
		return fmt.Errorf("sending %s over TCP to %s: %w", id, t.peer, err)
	}
	end := t.link.header(&wire.Data{SSTableID: id, Stream: wire.StreamRuns}, 0)
	if _, err := t.dc.c.Write(end); err != nil {
		return fmt.Errorf("sending %s over TCP to %s: %w", id, t.peer, err)
	}
	return nil
}
