package testcluster

import "errors"

// ErrTimeout reports a wait whose predicate did not hold before its deadline.
var ErrTimeout = errors.New("testcluster: timed out")

// ErrUnknownNode reports a node name the cluster does not have.
var ErrUnknownNode = errors.New("testcluster: unknown node")

// ErrUnknownDrill reports a drill or fault name the harness does not know.
var ErrUnknownDrill = errors.New("testcluster: unknown drill")

// ErrFaultUnavailable reports a fault this machine cannot inject (the full-disk fault needs
// root and mkfs.ext4); drills skip on it.
var ErrFaultUnavailable = errors.New("testcluster: fault unavailable here")

// ErrOpFailed reports a topology operation that ended in the failed state.
var ErrOpFailed = errors.New("testcluster: operation failed")

// ErrNeedsRoot reports an option that needs root (network namespaces, a bridge).
var ErrNeedsRoot = errors.New("testcluster: needs root")
