package ops

import "errors"

// The operations' refusals and failures. Their text is the node's (the daemon reports them
// as such); internal/node names them under the same names.
var (
	// ErrNoMembership reports an operation that needs the ring on a node without gossip_addr,
	// or before it has joined.
	ErrNoMembership = errors.New("node: membership is not running")
	// ErrOpRunning reports an operation started while another one runs; they are serialised.
	ErrOpRunning = errors.New("node: another operation is running")
	// ErrBadState reports an operation the node's ring state does not allow (decommission of
	// a node that is not NORMAL, cleanup while JOINING, ...).
	ErrBadState = errors.New("node: operation not allowed in this state")
	// ErrImportRefused reports an import whose sstables did not all verify.
	ErrImportRefused = errors.New("node: import refused")
	// ErrRingUnsettled reports a cleanup refused because the ring changed too recently.
	ErrRingUnsettled = errors.New("node: the ring has not settled")
	// ErrUnprovenMembers reports a cleanup refused because members that have not proven
	// their identity are about.
	ErrUnprovenMembers = errors.New("node: members have not proven their identity")
	// ErrUnconfirmed reports a cleanup that kept ranges whose owners did not confirm holding
	// this node's partitions of them.
	ErrUnconfirmed = errors.New("node: owners did not confirm holding the partitions")
)

// BadRequest marks an error of the request rather than of the node (the admin API's 400).
type BadRequest struct{ Err error }

func (b BadRequest) Error() string { return b.Err.Error() }

// IsBadRequest reports whether err is, or wraps, a BadRequest.
func IsBadRequest(err error) bool {
	var br BadRequest
	return errors.As(err, &br)
}
