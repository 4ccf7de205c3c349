package stream

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/wire"
)

// SpaceError refuses a session up front: its Prepare announced more bytes than the receiving
// directory's file system has free, less what other sessions receiving into the same directory
// have announced and not yet received. Nothing is streamed. It matches fsx.ErrNoSpace and
// closes the session with wire.CodeNoSpace, as Cassandra checks disk space before streaming.
type SpaceError struct {
	Peer, Keyspace, Table, Dir string
	SSTables                   int
	Need, Free, Reserved       int64
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("stream: not enough disk space to receive %s.%s from %s: %d sstables need %d bytes in %s, %d free (%d more held for other sessions); refused before streaming",
		e.Keyspace, e.Table, e.Peer, e.SSTables, e.Need, e.Dir, e.Free-e.Reserved, e.Reserved)
}

func (e *SpaceError) Unwrap() []error {
	return []error{fsx.ErrNoSpace, &wire.Failure{Code: wire.CodeNoSpace, Reason: "not enough disk space"}}
}

// sessionSpace is what a session's Prepare announces it will write: every planned sstable's
// bytes, plus for rows sstables (rewritten after arrival) room for the largest one's rewrite
// and published copy, plus a margin for the rebuilt small components.
func sessionSpace(planned []wire.PlannedSSTable) int64 {
	var need, rows int64
	for _, p := range planned {
		need += int64(p.Bytes)
		if p.Kind == wire.KindRows {
			rows = max(rows, 2*int64(p.Bytes))
		}
	}
	return need + rows + 1<<20
}

// spaceLedger holds, per receiving directory, what the sessions receiving into it have
// announced and not yet received, so that concurrent sessions (a bootstrap fetching from
// several peers at once) are not each admitted against the same free bytes.
type spaceLedger struct {
	mu   sync.Mutex
	held map[string]map[*spaceHold]struct{}
}

// spaceHold is one session's announced bytes; received reports how many have arrived (and are
// thus already counted by the file system).
type spaceHold struct {
	need     int64
	received func() int64
}

func (h *spaceHold) outstanding() int64 { return max(h.need-h.received(), 0) }

var receiving = &spaceLedger{held: map[string]map[*spaceHold]struct{}{}}

// reserve admits a session that will write need bytes into dir, or refuses it with a
// *SpaceError. release ends the hold; it is safe to call more than once. A file system whose
// free space cannot be read admits everything (each install still checks, and ENOSPC is
// handled).
func (l *spaceLedger) reserve(dir string, need int64, received func() int64, e SpaceError) (release func(), err error) {
	free, err := fsx.FreeBytes(dir)
	if errors.Is(err, errors.ErrUnsupported) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var reserved int64
	for h := range l.held[dir] {
		reserved += h.outstanding()
	}
	if need > free-reserved {
		e.Dir, e.Need, e.Free, e.Reserved = dir, need, free, reserved
		return nil, &e
	}
	h := &spaceHold{need: need, received: received}
	if l.held[dir] == nil {
		l.held[dir] = map[*spaceHold]struct{}{}
	}
	l.held[dir][h] = struct{}{}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			delete(l.held[dir], h)
			if len(l.held[dir]) == 0 {
				delete(l.held, dir)
			}
		})
	}, nil
}

// reserveSpace admits the session's announced sstables against its directory's free space
// before any of their bytes flow (called on Prepare). A Data.db prefix kept from an
// interrupted session is already on disk and not counted again.
func (rs *recvSession) reserveSpace(planned []wire.PlannedSSTable) error {
	if len(planned) == 0 {
		return nil
	}
	need := sessionSpace(planned)
	if p := rs.state.Partial; p != nil {
		need -= p.Bytes
	}
	release, err := receiving.reserve(rs.dir, need, func() int64 { return rs.tr.snapshot().BytesDone },
		SpaceError{Peer: rs.peer, Keyspace: rs.state.Keyspace, Table: rs.state.Table, SSTables: len(planned)})
	if err != nil {
		return err
	}
	rs.releaseSpace = release
	return nil
}
