package stream

import (
	"sync"
	"time"
)

// tracker holds one session's SessionStatus for concurrent snapshots.
type tracker struct {
	mu sync.Mutex
	st SessionStatus
}

func newTracker(id, peer string, dir Direction, keyspace, table string) *tracker {
	now := time.Now()
	return &tracker{st: SessionStatus{ID: id, Peer: peer, Direction: dir, Keyspace: keyspace, Table: table,
		Operation: "fetch", State: "preparing", Started: now, Updated: now}}
}

func (t *tracker) update(f func(st *SessionStatus)) SessionStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(&t.st)
	t.st.Updated = time.Now()
	if el := t.st.Updated.Sub(t.st.Started).Seconds(); el > 0 {
		t.st.RateBytes = float64(t.st.BytesDone) / el
	}
	return t.st
}

func (t *tracker) snapshot() SessionStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.st
}
