package node

import (
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/internal/ops"
)

// ErrAlreadyRun reports a second call to Node.Run.
var ErrAlreadyRun = errors.New("node: Run called twice")

// ConfigError names the configuration field that failed validation, with its YAML path
// (e.g. "throughput.inbound_bytes_per_second").
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config: %s: %s", e.Field, e.Reason) }

func configErrorf(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ErrDecommissioned reports a start of a node whose saved membership state says it left the
// ring.
var ErrDecommissioned = errors.New("node: this node was decommissioned")

// ErrNotEmpty reports a bootstrap of a new node whose data directories already hold sstables.
var ErrNotEmpty = errors.New("node: bootstrap needs empty data directories")

// ErrPeerDown is the cause of a session cancelled because membership declared its peer dead
// or gone.
var ErrPeerDown = errors.New("node: peer down")

// ErrNoMembership reports an operation that needs the ring on a node without gossip_addr, or
// before it has joined.
var ErrNoMembership = ops.ErrNoMembership

// ErrOpRunning reports an operation started while another one runs; they are serialised.
var ErrOpRunning = ops.ErrOpRunning

// ErrBadState reports an operation the node's ring state does not allow (decommission of a
// node that is not NORMAL, cleanup while JOINING, ...).
var ErrBadState = ops.ErrBadState

// ErrImportRefused reports an import whose sstables did not all verify.
var ErrImportRefused = ops.ErrImportRefused

// ErrRingUnsettled reports a cleanup refused because the ring changed too recently.
var ErrRingUnsettled = ops.ErrRingUnsettled

// ErrUnprovenMembers reports a cleanup refused because members that have not proven their
// identity are about.
var ErrUnprovenMembers = ops.ErrUnprovenMembers

// ErrUnconfirmed reports a cleanup that kept ranges whose owners did not confirm holding this
// node's partitions of them.
var ErrUnconfirmed = ops.ErrUnconfirmed
