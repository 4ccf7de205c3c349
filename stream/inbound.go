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
	// in's checks into the installer.
	take(ctx context.Context, in *Incoming, inst installer, s int, d *wire.Data, n int64) error
	// abandon gives up the rest of sstable id's data after it failed here or was refused.
	abandon(id string, code wire.Code) error
	// broken reports that the plane stopped where it cannot carry the session on (a TCP
	// connection left mid-frame): the session ends, as when a QUIC connection breaks.
	broken() bool
}

// quicIn is one sstable's unidirectional QUIC stream. A frame's header is read on its own, its
// payload in pieces of at most quicPiece bytes through the session's one buffer, each checked
// and written before the next is read: quic-go's received frames go back to its pool as they
// are read, not a megabyte at a time, and a receiver holds a piece, not a frame.
type quicIn struct {
	us    *quic.ReceiveStream
	rd    *tcpReader
	piece []byte
}

// payloadCut is a payload whose stream failed part way: every piece before was checked and
// written, so what was accepted stands (the prefix a resume keeps), as when a frame's header
// cannot be read.
type payloadCut struct{ error }

func (e payloadCut) Unwrap() error { return e.error }

// quicPiece is how much of a payload quicIn takes at a time.
const quicPiece = 128 << 10

func (q *quicIn) next(d *wire.Data) (int64, bool, error) {
	n, err := q.rd.header(d)
	if errors.Is(err, io.EOF) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	return n, false, nil
}

// take reads the payload piece by piece, checking and writing each (takeInMemory).
func (q *quicIn) take(_ context.Context, in *Incoming, inst installer, s int, d *wire.Data, n int64) error {
	off := d.Offset
	for first := true; first || n > 0; first = false {
		k := min(n, int64(len(q.piece)))
		if err := q.rd.read(q.piece[:k]); err != nil {
			return payloadCut{fmt.Errorf("%v data of sstable %s at %d: %w", d.Stream, d.SSTableID, off, err)}
		}
		d.Payload, d.Offset = q.piece[:k], off
		if err := takeInMemory(in, inst, s, d); err != nil {
			return err
		}
		off, n = off+uint64(k), n-k
	}
	return nil
}

// takeInMemory counts d's payload, in memory, in slot s of in, puts Data.db bytes through
// in's checks and writes it through the installer.
func takeInMemory(in *Incoming, inst installer, s int, d *wire.Data) error {
	in.got[s] += uint64(len(d.Payload))
	if in.isData(d) {
		if err := in.check(d.Payload); err != nil {
			return err
		}
	}
	return inst.write(d)
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
func (t *tcpIn) take(ctx context.Context, in *Incoming, inst installer, s int, d *wire.Data, n int64) error {
	err := t.place(ctx, in, inst, s, d, n)
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
	if rs.dataIn == nil {
		rs.dataIn = &tcpReader{endsData: true, lim: rs.cfg.Limits, buf: make([]byte, wire.MaxDataHeader), scratch: make([]byte, wire.DataHeaderScratch)}
		rs.dataPiece = make([]byte, quicPiece)
	}
	rs.dataIn.r, rs.dataIn.n, rs.dataIn.off, rs.dataIn.left = us, 0, 0, 0
	return &quicIn{us: us, rd: rs.dataIn, piece: rs.dataPiece}, nil
}
