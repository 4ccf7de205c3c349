package stream

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/wire"
)

// inbound is the receiving half of a data plane: how one sstable's Data frames arrive. QUIC
// gives every sstable a unidirectional stream of its own; the TCP data plane carries every
// sstable on one connection, each ended by an empty Data frame. The session's one receive
// loop (transfer.pump) runs over either.
type inbound interface {
	// next reads the next frame's header into d and returns its payload length; end
	// reports the end of this sstable's data.
	next(d *wire.Data) (n int64, end bool, err error)
	// take moves the current frame's n payload bytes, admitted to slot s of in, through
	// in's checks into job.
	take(ctx context.Context, in *Incoming, job *installJob, s int, d *wire.Data, n int64) error
	// abandon gives up the rest of sstable id's data after it failed here or was refused.
	abandon(id string, code wire.Code) error
	// broken reports that the plane stopped where it cannot carry the session on (a TCP
	// connection left mid-frame): the session ends, as when a QUIC connection breaks.
	broken() bool
}

// quicIn is one sstable's unidirectional QUIC stream.
type quicIn struct {
	us  *quic.ReceiveStream
	fr  *frameReader
	lim wire.Limits
}

func (q *quicIn) next(d *wire.Data) (int64, bool, error) {
	b, err := q.fr.next()
	if errors.Is(err, io.EOF) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	if _, err := wire.ParseData(b, q.lim, d); err != nil {
		return 0, false, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return int64(len(d.Payload)), false, nil
}

// take checks the payload, which arrived in memory with its header, and writes it.
func (q *quicIn) take(_ context.Context, in *Incoming, job *installJob, s int, d *wire.Data, n int64) error {
	return takeInMemory(in, job, s, d)
}

// takeInMemory counts d's payload, in memory, in slot s of in, puts Data.db bytes through
// in's checks and writes it into job.
func takeInMemory(in *Incoming, job *installJob, s int, d *wire.Data) error {
	in.got[s] += uint64(len(d.Payload))
	if in.isData(d) {
		if err := in.check(d.Payload); err != nil {
			return err
		}
	}
	return job.write(d)
}

func (q *quicIn) abandon(_ string, code wire.Code) error {
	q.us.CancelRead(quic.StreamErrorCode(code))
	return nil
}

func (q *quicIn) broken() bool { return false }

// tcpIn is the session's TCP data connection, positioned at one sstable's frames.
type tcpIn struct {
	data     *tcpReader
	id       string // the sstable whose frames come next
	mem      []byte // a payload bound for memory (index, rows slices)
	readBack []byte // Data.db bytes read back from the file for checking
	sealed   bool   // TLS: payloads arrive in memory, never spliced
	cut      bool   // the connection was left mid-frame or out of step
}

func (t *tcpIn) next(d *wire.Data) (int64, bool, error) {
	n, err := t.data.header(d)
	if err == nil && n == 0 && d.SSTableID != t.id {
		err = fmt.Errorf("%w: end of sstable %q's data in that of %q", ErrProtocol, d.SSTableID, t.id)
	}
	if err != nil {
		t.cut = true
		return 0, false, err
	}
	return n, n == 0, nil
}

// take places the payload (place); a payload cut short leaves the connection mid-frame.
func (t *tcpIn) take(ctx context.Context, in *Incoming, job *installJob, s int, d *wire.Data, n int64) error {
	err := t.place(ctx, in, job, s, d, n)
	if err != nil && t.data.left != 0 {
		t.cut = true
	}
	return err
}

// abandon skips the rest of the sstable's data to reach the next one's (the sender stops
// early once it reads our Failure), unless the connection is already out of step.
func (t *tcpIn) abandon(id string, _ wire.Code) error {
	if t.cut {
		return nil
	}
	if err := t.drain(id); err != nil {
		t.cut = true
		return err
	}
	return nil
}

func (t *tcpIn) broken() bool { return t.cut }

// openInbound waits for the data of sstable id on the session's data plane.
func (rs *recvSession) openInbound(ctx context.Context, id string) (inbound, error) {
	if rs.tcp != nil {
		rs.tcp.id = id
		return rs.tcp, nil
	}
	us, err := rs.conn.AcceptUniStream(ctx)
	if err != nil {
		return nil, err
	}
	if rs.dataFR == nil {
		rs.dataFR = newFrameReader(us, rs.cfg.Limits)
	} else {
		rs.dataFR.r, rs.dataFR.n, rs.dataFR.off = us, 0, 0
	}
	return &quicIn{us: us, fr: rs.dataFR, lim: rs.cfg.Limits}, nil
}
