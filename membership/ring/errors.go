package ring

import "errors"

var (
	// ErrInvalidNode reports a node without a name.
	ErrInvalidNode = errors.New("ring: invalid node")
	// ErrDuplicateNode reports two members with one name.
	ErrDuplicateNode = errors.New("ring: duplicate node")
	// ErrTokenConflict reports a token claimed twice, by two nodes or twice by one node.
	ErrTokenConflict = errors.New("ring: token conflict")
	// ErrNoTokens reports a member that must hold tokens in its state but has none.
	ErrNoTokens = errors.New("ring: node has no tokens")
	// ErrUnsupportedToken reports a token that is not a Murmur3 token.
	ErrUnsupportedToken = errors.New("ring: unsupported token kind (only Murmur3)")
	// ErrUnknownState reports an unparseable or out-of-range NodeState.
	ErrUnknownState = errors.New("ring: unknown node state")
	// ErrUnknownNode reports a change naming a node the ring does not hold.
	ErrUnknownNode = errors.New("ring: unknown node")
	// ErrInvalidChange reports a change whose preconditions the ring does not meet.
	ErrInvalidChange = errors.New("ring: invalid change")
	// ErrNoSource reports a range a node must fetch that no available replica holds.
	ErrNoSource = errors.New("ring: no source for range")
)
