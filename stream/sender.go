package stream

import (
	"fmt"
	"math"

	"github.com/sluicedb/sluice/wire"
)

// ResumeInstalled is the ResumePoint.VerifiedChunks value by which a receiver tells the
// sender that it already installed that sstable in an earlier session: the sender leaves it
// out of Prepare.
const ResumeInstalled = math.MaxUint64

type senderState uint8

const (
	sendAwaitHello senderState = iota
	sendAwaitRequest
	sendPlanning
	sendStreaming
	sendAwaitComplete
	sendDone
	sendFailed
)

var senderStateNames = [...]string{"await-hello", "await-request", "planning", "streaming", "await-complete", "done", "failed"}

func (s senderState) String() string { return senderStateNames[s] }

// Sender is the sending side of one session as a pure state machine (etcd raft RawNode
// style): it does no I/O, starts no goroutines and reads no clock. The driver feeds it the
// decoded control messages (Step) and its own events (Prepare, Finished) and sends what it
// returns. It is not safe for concurrent use.
//
// Sequence: Hello → HelloAck; StreamRequest → (driver plans) Prepare; (driver sends each
// planned sstable: Manifest on the control stream, data on its own stream; receiver answers
// Received/Installed or Failure per sstable) → Finished; Complete → done.
type Sender struct {
	local    wire.Hello
	state    senderState
	version  uint32
	req      *wire.StreamRequest
	planned  map[string]wire.Kind
	outcomes map[string]bool // true: installed
	resume   map[string]uint64
	complete *wire.Complete
	features []string // the receiver's Hello.Features
	peer     string   // the receiver's Hello.Node
}

// NewSender starts a session answering with local's versions.
func NewSender(local wire.Hello) *Sender {
	return &Sender{local: local}
}

// Request is the peer's request once received, else nil.
func (s *Sender) Request() *wire.StreamRequest { return s.req }

// Done reports the receiver's Complete.
func (s *Sender) Done() bool { return s.state == sendDone }

// Complete is the receiver's Complete once Done.
func (s *Sender) Complete() *wire.Complete { return s.complete }

// PeerNode is the node name the receiver's Hello gave, "" before it arrived.
func (s *Sender) PeerNode() string { return s.peer }

// PeerOffers reports whether the receiver's Hello listed feature.
func (s *Sender) PeerOffers(feature string) bool {
	for _, f := range s.features {
		if f == feature {
			return true
		}
	}
	return false
}

// Outcome says whether the receiver acknowledged id, and whether it installed it.
func (s *Sender) Outcome(id string) (acked, installed bool) {
	ok, seen := s.outcomes[id]
	return seen, ok
}

func (s *Sender) fail(code wire.Code, err error) ([]wire.Message, error) {
	s.state = sendFailed
	return []wire.Message{&wire.Failure{Code: code, Reason: err.Error()}}, err
}

// Step consumes one control message from the receiver and returns what to send back. An
// error ends the session; the messages returned with it (a Failure) should still be sent.
func (s *Sender) Step(m wire.Message) ([]wire.Message, error) {
	if s.state == sendFailed || s.state == sendDone {
		return nil, fmt.Errorf("%w: %v after the session ended", ErrProtocol, m.Type())
	}
	if _, ok := m.(*wire.Keepalive); ok {
		return nil, nil
	}
	if f, ok := m.(*wire.Failure); ok && f.SSTableID == "" {
		s.state = sendFailed
		return nil, &SessionError{Code: f.Code, Err: f}
	}
	switch s.state {
	case sendAwaitHello:
		h, ok := m.(*wire.Hello)
		if !ok {
			return s.fail(wire.CodeProtocol, fmt.Errorf("%w: %v before Hello", ErrProtocol, m.Type()))
		}
		v, err := wire.Negotiate(s.local, *h)
		if err != nil {
			return s.fail(wire.CodeVersion, err)
		}
		s.version, s.state, s.features, s.peer = v, sendAwaitRequest, h.Features, h.Node
		return []wire.Message{&wire.HelloAck{Version: v, Node: s.local.Node}}, nil
	case sendAwaitRequest:
		r, ok := m.(*wire.StreamRequest)
		if !ok {
			return s.fail(wire.CodeProtocol, fmt.Errorf("%w: %v where StreamRequest was expected", ErrProtocol, m.Type()))
		}
		switch {
		case r.Operation != wire.OpFetch:
			return s.fail(wire.CodeRefused, fmt.Errorf("%w: operation %v", ErrRefused, r.Operation))
		case r.Keyspace == "" || r.Table == "":
			return s.fail(wire.CodeProtocol, fmt.Errorf("%w: request without keyspace or table", ErrProtocol))
		case len(r.Ranges) == 0:
			return s.fail(wire.CodeProtocol, fmt.Errorf("%w: request without ranges", ErrProtocol))
		}
		s.req, s.state = r, sendPlanning
		return nil, nil
	case sendStreaming, sendAwaitComplete:
		switch m := m.(type) {
		case *wire.Received:
			if _, ok := s.planned[m.SSTableID]; !ok {
				return s.fail(wire.CodeProtocol, fmt.Errorf("%w: Received for unplanned sstable %q", ErrProtocol, m.SSTableID))
			}
			return nil, nil
		case *wire.Installed:
			return s.outcome(m.SSTableID, true)
		case *wire.Failure:
			return s.outcome(m.SSTableID, false)
		case *wire.Complete:
			if m.SessionID != s.req.SessionID {
				return s.fail(wire.CodeProtocol, fmt.Errorf("%w: Complete for session %v", ErrProtocol, m.SessionID))
			}
			s.complete, s.state = m, sendDone
			return nil, nil
		}
	}
	return s.fail(wire.CodeProtocol, fmt.Errorf("%w: %v in state %v", ErrProtocol, m.Type(), s.state))
}

func (s *Sender) outcome(id string, installed bool) ([]wire.Message, error) {
	if _, ok := s.planned[id]; !ok {
		return s.fail(wire.CodeProtocol, fmt.Errorf("%w: outcome for unplanned sstable %q", ErrProtocol, id))
	}
	if _, dup := s.outcomes[id]; dup {
		return s.fail(wire.CodeProtocol, fmt.Errorf("%w: second outcome for sstable %q", ErrProtocol, id))
	}
	s.outcomes[id] = installed
	return nil, nil
}

// Prepare turns the driver's plan into the Prepare message, leaving out the sstables the
// request says are already installed (ResumeInstalled). The driver then sends exactly the
// returned list, in order.
func (s *Sender) Prepare(planned []wire.PlannedSSTable) (*wire.Prepare, error) {
	if s.state != sendPlanning {
		return nil, fmt.Errorf("%w: Prepare in state %v", ErrProtocol, s.state)
	}
	skip := map[string]bool{}
	partly := map[string]uint64{}
	for _, r := range s.req.Resume {
		switch {
		case r.VerifiedChunks == ResumeInstalled:
			skip[r.SSTableID] = true
		case r.VerifiedChunks > 0:
			partly[r.SSTableID] = r.VerifiedChunks
		}
	}
	p := &wire.Prepare{SessionID: s.req.SessionID}
	s.planned = map[string]wire.Kind{}
	s.outcomes = map[string]bool{}
	s.resume = map[string]uint64{}
	for _, ps := range planned {
		if skip[ps.ID] {
			continue
		}
		if _, dup := s.planned[ps.ID]; dup {
			return nil, fmt.Errorf("stream: sstable %q planned twice", ps.ID)
		}
		s.planned[ps.ID] = ps.Kind
		if v, ok := partly[ps.ID]; ok {
			s.resume[ps.ID] = v
		}
		p.SSTables = append(p.SSTables, ps)
	}
	s.state = sendStreaming
	return p, nil
}

// Resumed returns the chunks of planned sstable id that the receiver already holds
// verified from an interrupted session (its ResumePoint), or 0. The driver restarts that
// sstable's Data.db bytes at the first chunk after them (dataResumeOffset), or at 0 when
// the count does not fit the sstable.
func (s *Sender) Resumed(id string) uint64 { return s.resume[id] }

// Finished records that every planned sstable has been sent (or refused); the session now
// waits for Complete.
func (s *Sender) Finished() {
	if s.state == sendStreaming {
		s.state = sendAwaitComplete
	}
}
