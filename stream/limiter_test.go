package stream

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock whose time moves only when told. With auto set, every timer fires at
// once and moves the time to its deadline, so a single waiter runs through a whole transfer
// in fake time without sleeping. Otherwise timers never fire and armed reports each one.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	auto  bool
	armed chan time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.auto {
		c.now = c.now.Add(d)
		ch <- c.now
	} else if c.armed != nil {
		c.armed <- d
	}
	return ch, func() {}
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// The limiter passes a long transfer at its rate: after the initial burst (a quarter
// second of tokens), bytes over fake time are within 1% of the rate, and no window of the
// transfer ran faster than the rate plus the burst and one request.
func TestLimiterHonoursRate(t *testing.T) {
	for _, tc := range []struct {
		rate int64
		req  int
	}{
		{1 << 20, 64 << 10},
		{10 << 20, 1 << 20},
		{100 << 10, 4 << 10},
		{1 << 20, 3 << 20}, // requests larger than the burst
	} {
		clk := &fakeClock{now: time.Unix(1000, 0), auto: true}
		l := newLimiter(tc.rate, clk)
		start := clk.Now()
		type pass struct {
			at    time.Duration
			bytes int64
		}
		var passes []pass
		var total int64
		for total < 20*tc.rate {
			if err := l.Wait(context.Background(), tc.req); err != nil {
				t.Fatal(err)
			}
			total += int64(tc.req)
			passes = append(passes, pass{clk.Now().Sub(start), total})
		}
		elapsed := clk.Now().Sub(start).Seconds()
		burst := max(float64(tc.rate)/4, 64<<10)
		// The last request is taken on credit: the bucket ends at most one request negative.
		want := (float64(total) - burst - float64(tc.req)) / float64(tc.rate)
		if math.Abs(elapsed-want) > 0.01*want+0.002 {
			t.Errorf("rate %d, requests of %d: %d bytes in %.3fs, want %.3fs", tc.rate, tc.req, total, elapsed, want)
		}
		for i := range passes {
			for j := i + 1; j < len(passes); j++ {
				window := (passes[j].at - passes[i].at).Seconds()
				bytes := float64(passes[j].bytes - passes[i].bytes)
				if bytes > float64(tc.rate)*window+burst+float64(tc.req) {
					t.Fatalf("rate %d: %.0f bytes passed in %.3fs", tc.rate, bytes, window)
				}
			}
		}
	}
}

// After an idle spell only the burst passes at once, however long the spell.
func TestLimiterBurstAfterIdle(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0), auto: true}
	l := newLimiter(4<<20, clk)
	l.Wait(context.Background(), 1) // start the bucket
	clk.advance(time.Hour)
	before := clk.Now()
	var n int64
	for clk.Now() == before {
		if err := l.Wait(context.Background(), 64<<10); err != nil {
			t.Fatal(err)
		}
		n += 64 << 10
	}
	// The waits started once the quarter-second burst (1 MiB) was spent: the request that
	// found the bucket empty is the one that had to wait.
	if want := int64(1<<20) + 64<<10; n != want {
		t.Errorf("passed %d bytes before waiting after an idle hour, want %d", n, want)
	}
}

// A waiter wakes at once on SetRate (here to unlimited) and on its context ending, however
// far away its timer is.
func TestLimiterWakesWaiters(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0), armed: make(chan time.Duration, 1)}
	l := newLimiter(1<<10, clk)
	if err := l.Wait(context.Background(), 128<<10); err != nil { // the burst, and 64 KiB on credit
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(context.Background(), 1<<10) }()
	if d := <-clk.armed; d != 64*time.Second {
		t.Fatalf("waiting %v at 1 KiB/s with the bucket 64 KiB short, want 64s", d)
	}
	l.SetRate(0)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if l.Rate() != 0 {
		t.Errorf("rate %d", l.Rate())
	}

	l = newLimiter(1<<10, clk)
	l.Wait(context.Background(), 128<<10)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- l.Wait(ctx, 1<<10) }()
	<-clk.armed
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}

	var nilLimiter *Limiter
	if err := nilLimiter.Wait(ctx, 1<<30); err != nil {
		t.Errorf("nil limiter: %v", err)
	}
}
