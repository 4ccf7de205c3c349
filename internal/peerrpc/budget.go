package peerrpc

import (
	"fmt"
	"sync"
)

// Budget is a byte allowance that concurrent users reserve from before they allocate: heavy
// peer calls reserve the working size their request predicts, and a call that does not fit is
// refused rather than queued. Safe for concurrent use; the zero value holds nothing.
type Budget struct {
	mu          sync.Mutex
	limit, used int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// Reserve takes n bytes when they fit beside what is reserved and reports whether it did. A
// reservation of n <= 0 takes nothing and succeeds.
func (b *Budget) Reserve(n int64) bool {
	if n <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.limit-b.used {
		return false
	}
	b.used += n
	return true
}

// Release gives back n bytes of an earlier Reserve. Giving back more than is reserved is a
// bug of the caller, and panics.
func (b *Budget) Release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.used {
		panic(fmt.Sprintf("peerrpc: releasing %d bytes of a budget holding %d", n, b.used))
	}
	b.used -= n
}

// Used is the bytes reserved now.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Limit is the budget's size.
func (b *Budget) Limit() int64 { return b.limit }

// Slots counts what each holder (a caller, by certificate name) holds of a per-holder limit:
// a peer's connections, or its heavy calls in flight. Safe for concurrent use.
type Slots struct {
	mu   sync.Mutex
	max  int
	held map[string]int
}

// NewSlots returns slots allowing each holder max at once.
func NewSlots(max int) *Slots { return &Slots{max: max, held: map[string]int{}} }

// Take takes one of holder's slots and reports whether one was free.
func (s *Slots) Take(holder string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[holder] >= s.max {
		return false
	}
	s.held[holder]++
	return true
}

// Give gives back a slot Take took.
func (s *Slots) Give(holder string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[holder]--; s.held[holder] <= 0 {
		delete(s.held, holder)
	}
}

// Held is what holder holds now.
func (s *Slots) Held(holder string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[holder]
}
