package ops

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
)

// maxOps bounds the operations a Tracker remembers.
const maxOps = 32

// Tracker runs operations one at a time and remembers the last maxOps of them (GET /v1/ops).
// Operations run under the context Begin hands it, so ending that context ends them.
type Tracker struct {
	log     zerolog.Logger
	mu      sync.Mutex
	ctx     context.Context // nil until Begin
	next    int
	running bool
	list    []*OpStatus
	wg      sync.WaitGroup
	// ended is closed, and replaced, each time an operation finishes (WaitEnded).
	ended chan struct{}
}

// NewTracker returns a tracker that logs with log; it starts nothing before Begin.
func NewTracker(log zerolog.Logger) *Tracker { return &Tracker{log: log} }

// Begin lets operations start, under ctx.
func (t *Tracker) Begin(ctx context.Context) {
	t.mu.Lock()
	t.ctx = ctx
	t.mu.Unlock()
}

// Op is a handle on a running operation's status.
type Op struct {
	t *Tracker
	s *OpStatus
}

// NewOp is an operation's handle outside any tracker, on status s (tests).
func NewOp(s *OpStatus) *Op { return &Op{t: &Tracker{}, s: s} }

// Update changes the operation's status under the tracker's lock.
func (o *Op) Update(f func(s *OpStatus)) {
	o.t.mu.Lock()
	f(o.s)
	o.t.mu.Unlock()
}

// Kind is the operation's kind.
func (o *Op) Kind() string { return o.s.Kind }

// Status is a copy of the operation's status.
func (o *Op) Status() OpStatus {
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	return clone(o.s)
}

// Start starts fn as an operation, unless one is running (ErrOpRunning) or Begin has not been
// called (ErrNoMembership).
func (t *Tracker) Start(kind, detail string, fn func(ctx context.Context, o *Op) error) (OpStatus, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx == nil {
		return OpStatus{}, ErrNoMembership
	}
	if t.running {
		return OpStatus{}, ErrOpRunning
	}
	t.running = true
	t.next++
	s := &OpStatus{ID: t.next, Kind: kind, Detail: detail, State: adminapi.OpRunning, Started: time.Now()}
	t.list = append(t.list, s)
	if len(t.list) > maxOps {
		t.list = slices.Delete(t.list, 0, len(t.list)-maxOps)
	}
	o := &Op{t: t, s: s}
	ctx := t.ctx
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		log := t.log.With().Str("op", kind).Int("op_id", s.ID).Logger()
		log.Info().Str("detail", detail).Msg("operation started")
		err := fn(ctx, o)
		t.mu.Lock()
		s.Finished = time.Now()
		s.State = adminapi.OpComplete
		if err != nil {
			s.State, s.Error = adminapi.OpFailed, err.Error()
		}
		t.running = false
		if t.ended != nil {
			close(t.ended)
			t.ended = nil
		}
		t.mu.Unlock()
		if err != nil {
			log.Error().Err(err).Msg("operation failed")
		} else {
			log.Info().Msg("operation complete")
		}
	}()
	return *s, nil
}

// WaitEnded returns once operation id is no longer running (or is not known), or when ctx
// ends: what lets a client follow an operation without polling behind it.
func (t *Tracker) WaitEnded(ctx context.Context, id int) {
	for {
		t.mu.Lock()
		running := false
		for _, s := range t.list {
			if s.ID == id {
				running = s.State == adminapi.OpRunning
			}
		}
		if !running {
			t.mu.Unlock()
			return
		}
		if t.ended == nil {
			t.ended = make(chan struct{})
		}
		ch := t.ended
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// List returns a snapshot of the operations, oldest first.
func (t *Tracker) List() []OpStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]OpStatus, 0, len(t.list))
	for _, s := range t.list {
		out = append(out, clone(s))
	}
	return out
}

func clone(s *OpStatus) OpStatus {
	c := *s
	c.Transfers = slices.Clone(s.Transfers)
	c.Cleanup = slices.Clone(s.Cleanup)
	c.CleanupChecks = slices.Clone(s.CleanupChecks)
	c.Imported = slices.Clone(s.Imported)
	c.Repair = slices.Clone(s.Repair)
	return c
}

// Hold counts work outside an operation that Wait must wait for (an import); the returned
// function ends it.
func (t *Tracker) Hold() func() {
	t.wg.Add(1)
	return t.wg.Done
}

// Wait waits until the operations and held work have returned, or ctx ends (its error).
func (t *Tracker) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
