package stream

import (
	"context"
	"sync"
	"time"
)

// Limiter is a token bucket in bytes per second, shared by every session of a node in one
// direction. Its rate changes at runtime (SetRate); 0 is unlimited. The bucket holds at
// most a quarter second of tokens, so a burst after an idle spell stays short. Safe for
// concurrent use.
type Limiter struct {
	mu     sync.Mutex
	rate   int64 // bytes per second; 0: unlimited
	tokens float64
	last   time.Time
	// changed is closed and replaced on every SetRate so that waiters recompute.
	changed chan struct{}
	clk     clock
}

// clock is the Limiter's time source: the wall clock, or a fake one in tests so that a rate
// can be measured without sleeping.
type clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed, and a stop function.
	After(d time.Duration) (<-chan time.Time, func())
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// NewLimiter returns a limiter of rate bytes per second (0: unlimited).
func NewLimiter(rate int64) *Limiter {
	return newLimiter(rate, wallClock{})
}

func newLimiter(rate int64, clk clock) *Limiter {
	l := &Limiter{changed: make(chan struct{}), clk: clk}
	l.SetRate(rate)
	return l
}

// SetRate changes the rate; waiters recompute their wait at once.
func (l *Limiter) SetRate(rate int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rate = max(rate, 0)
	l.tokens = min(l.tokens, l.burst())
	close(l.changed)
	l.changed = make(chan struct{})
}

// Rate returns the current rate (0: unlimited).
func (l *Limiter) Rate() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rate
}

func (l *Limiter) burst() float64 { return max(float64(l.rate)/4, 64<<10) }

// Wait takes n bytes from the bucket, waiting until they are there or ctx ends. A nil
// Limiter never waits. The bucket may go negative by one request, so n larger than the
// burst still passes (after a proportional wait).
func (l *Limiter) Wait(ctx context.Context, n int) error {
	if l == nil {
		return nil
	}
	for {
		l.mu.Lock()
		if l.rate == 0 {
			l.mu.Unlock()
			return nil
		}
		now := l.clk.Now()
		if !l.last.IsZero() {
			l.tokens = min(l.tokens+now.Sub(l.last).Seconds()*float64(l.rate), l.burst())
		} else {
			l.tokens = l.burst()
		}
		l.last = now
		if l.tokens > 0 {
			l.tokens -= float64(n)
			l.mu.Unlock()
			return nil
		}
		wait := time.Duration(-l.tokens / float64(l.rate) * float64(time.Second))
		changed := l.changed
		l.mu.Unlock()
		fired, stop := l.clk.After(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			stop()
			return ctx.Err()
		case <-changed:
			stop()
		case <-fired:
		}
	}
}
