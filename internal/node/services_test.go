package node

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// serveUntilDone is a service that stops cleanly when told, counting its stops.
func serveUntilDone(stops *atomic.Int32) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		<-ctx.Done()
		stops.Add(1)
		return ctx.Err() // a context error is a clean stop
	}
}

// The run group: cancelling it stops every service cleanly; a service that fails, or stops
// before the node does, stops the others and is named first; one that does not stop in time
// is named too, and the group does not wait for it.
func TestARunGroupStopsTogether(t *testing.T) {
	run := func(ctx context.Context, timeout time.Duration, ss ...service) error {
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		return runGroup(ctx, stop, timeout, zerolog.Nop(), ss...)
	}

	var stops atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if err := run(ctx, time.Second, service{"a", serveUntilDone(&stops)}, service{"b", serveUntilDone(&stops)}); err != nil || stops.Load() != 2 {
		t.Fatalf("a cancelled group: %v, %d stops", err, stops.Load())
	}

	stops.Store(0)
	boom := errors.New("boom")
	err := run(context.Background(), time.Second, service{"a", serveUntilDone(&stops)},
		service{"b", func(context.Context) error { return boom }}, service{"c", serveUntilDone(&stops)})
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "b: boom") || stops.Load() != 2 {
		t.Fatalf("a failing service: %v, %d stops", err, stops.Load())
	}

	stops.Store(0)
	err = run(context.Background(), time.Second, service{"a", serveUntilDone(&stops)},
		service{"quitter", func(context.Context) error { return nil }})
	if err == nil || err.Error() != "quitter: stopped before the node did" || stops.Load() != 1 {
		t.Fatalf("a service that returns early: %v, %d stops", err, stops.Load())
	}

	stuck := make(chan struct{})
	defer close(stuck)
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	start := time.Now()
	err = run(ctx, 50*time.Millisecond, service{"a", serveUntilDone(&stops)},
		service{"stuck", func(context.Context) error { <-stuck; return nil }},
		service{"dirty", func(ctx context.Context) error { <-ctx.Done(); return errors.New("lost a write") }})
	if err == nil || !strings.Contains(err.Error(), "stuck did not stop within 50ms") || !strings.Contains(err.Error(), "dirty: lost a write") ||
		strings.Contains(err.Error(), "a did not stop") {
		t.Fatalf("a stuck service: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the group waited %v for a stuck service", d)
	}
}
