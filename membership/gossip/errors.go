package gossip

import "errors"

var (
	// ErrInvalidConfig reports a Config field that fails validation; the message names the field.
	ErrInvalidConfig = errors.New("gossip: invalid config")
	// ErrMetaTooLarge reports node metadata whose encoding exceeds memberlist.MetaMaxSize.
	// Metadata is never truncated.
	ErrMetaTooLarge = errors.New("gossip: node metadata too large")
	// ErrInvalidMeta reports a NodeMeta field that cannot be announced (an unknown state).
	ErrInvalidMeta = errors.New("gossip: invalid node metadata")
	// ErrInvalidTokens reports a token set that cannot be announced: duplicates or too many.
	ErrInvalidTokens = errors.New("gossip: invalid token set")
	// ErrMalformed reports gossip bytes (metadata, push/pull state or a broadcast) that do not
	// decode. The offending peer's data is ignored; the error is logged, never fatal.
	ErrMalformed = errors.New("gossip: malformed message")
	// ErrJoin reports that no seed could be joined before the start context ended.
	ErrJoin = errors.New("gossip: could not join any seed")
	// ErrStarted reports a second call to Start.
	ErrStarted = errors.New("gossip: already started")
	// ErrNotStarted reports a call that needs a running memberlist before Start.
	ErrNotStarted = errors.New("gossip: not started")
	// ErrClosed reports a call after Shutdown.
	ErrClosed = errors.New("gossip: shut down")
	// ErrTokensPending reports members whose state places them on the ring but whose current
	// token set has not reached this node yet; the ring would be wrong, so none is built.
	ErrTokensPending = errors.New("gossip: token sets not yet known")
)
