package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// service is one of the daemon's long-running parts (the admin server, the stream server,
// membership, ...). run serves until ctx ends, then stops and returns nil (a context error
// counts as nil); returning earlier, whatever it returns, stops the node.
type service struct {
	name string
	run  func(ctx context.Context) error
}

// runGroup runs services side by side under ctx, in the manner of oklog/run: the first to
// return ends the group with its failure; so does ctx ending, without one. Then stop cancels
// ctx for every service, and each gets until timeout to return. The first failure and those
// of the shutdown are returned joined; nil when every service stopped cleanly after ctx ended.
func runGroup(ctx context.Context, stop context.CancelFunc, timeout time.Duration, log zerolog.Logger, services ...service) error {
	type result struct {
		i   int
		err error
	}
	done := make(chan result, len(services)) // buffered: a late service never blocks
	for i, s := range services {
		go func() { done <- result{i, s.run(ctx)} }()
	}
	var errs []error
	stopped := make([]bool, len(services))
	select {
	case <-ctx.Done():
		log.Info().Msg("node stopping")
	case r := <-done:
		stopped[r.i] = true
		err := r.err
		if err == nil || isContextErr(err) {
			err = errors.New("stopped before the node did")
		}
		errs = append(errs, fmt.Errorf("%s: %w", services[r.i].name, err))
		log.Error().Err(errs[0]).Msg("node failing")
	}
	stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for left := len(services) - len(errs); left > 0; left-- {
		select {
		case r := <-done:
			stopped[r.i] = true
			if r.err != nil && !isContextErr(r.err) {
				errs = append(errs, fmt.Errorf("%s: %w", services[r.i].name, r.err))
			}
		case <-deadline.C:
			for i, s := range services {
				if !stopped[i] {
					errs = append(errs, fmt.Errorf("%s did not stop within %v", s.name, timeout))
				}
			}
			return errors.Join(errs...)
		}
	}
	return errors.Join(errs...)
}

// isContextErr reports a service's stop because its context ended: a clean stop.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
