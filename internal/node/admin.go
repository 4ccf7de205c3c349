package node

import (
	"context"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/ops"
)

// The admin API (routes, types, guard and client) is internal/adminapi; the node is its
// Backend. The node's code names the API's types by these aliases.
type (
	Status          = adminapi.Status
	TableStatus     = adminapi.TableStatus
	Throughput      = adminapi.Throughput
	LoadResponse    = adminapi.LoadResponse
	OpStatus        = adminapi.OpStatus
	TransferStatus  = adminapi.TransferStatus
	CleanupRequest  = adminapi.CleanupRequest
	CleanupResult   = adminapi.CleanupResult
	ImportRequest   = adminapi.ImportRequest
	ImportedSSTable = adminapi.ImportedSSTable
	RepairRequest   = adminapi.RepairRequest
	RepairResult    = adminapi.RepairResult
	RingView        = adminapi.RingView
	RingMember      = adminapi.RingMember
	RingToken       = adminapi.RingToken
	RebuildRequest  = adminapi.RebuildRequest
	StreamsResponse = adminapi.StreamsResponse
	ErrorResponse   = adminapi.ErrorResponse
)

// The cluster operations' requests (internal/ops), as the peer API names them.
type (
	FetchOpRequest  = ops.FetchOpRequest
	FetchOpResponse = ops.FetchOpResponse
	TreeRequest     = ops.TreeRequest
	TreeResponse    = ops.TreeResponse
	DigestRequest   = ops.DigestRequest
	DigestResponse  = ops.DigestResponse
)

// Operation kinds and states, and cleanup actions (adminapi's).
const (
	OpBootstrap    = adminapi.OpBootstrap
	OpDecommission = adminapi.OpDecommission
	OpMove         = adminapi.OpMove
	OpCleanup      = adminapi.OpCleanup
	OpImport       = adminapi.OpImport
	OpRepair       = adminapi.OpRepair
	OpRebuild      = adminapi.OpRebuild
	OpReplace      = adminapi.OpReplace
	OpRunning      = adminapi.OpRunning
	OpComplete     = adminapi.OpComplete
	OpFailed       = adminapi.OpFailed
	CleanupKept    = adminapi.CleanupKept
	CleanupDropped = adminapi.CleanupDropped
	CleanupSplit   = adminapi.CleanupSplit
)

// The admin client, as the node's own code and tests name it.
var (
	NewAdminClient        = adminapi.NewClient
	AdminToken            = adminapi.Token
	DefaultAdminTokenFile = adminapi.DefaultTokenFile
)

// adminBackend is the node as the admin API's Backend: the node's errors mapped to statuses.
type adminBackend struct{ *Node }

var _ adminapi.Backend = adminBackend{}

func (b adminBackend) Metrics() http.Handler {
	return promhttp.HandlerFor(b.metrics.Registry, promhttp.HandlerOpts{})
}

func (b adminBackend) SetThroughput(t Throughput) error { return adminErr(b.Node.SetThroughput(t)) }

func (b adminBackend) RingView(ctx context.Context, withLoad bool) (RingView, error) {
	v, err := b.Node.RingView(ctx, withLoad)
	return v, adminErr(err)
}

func (b adminBackend) StartBootstrap() (OpStatus, error) { return opErr(b.Node.StartBootstrap()) }
func (b adminBackend) StartDecommission() (OpStatus, error) {
	return opErr(b.Node.StartDecommission())
}
func (b adminBackend) StartMove(t int64) (OpStatus, error) { return opErr(b.Node.StartMove(t)) }
func (b adminBackend) StartCleanup(r CleanupRequest) (OpStatus, error) {
	return opErr(b.Node.StartCleanup(r))
}
func (b adminBackend) StartImport(r ImportRequest) (OpStatus, error) {
	return opErr(b.Node.StartImport(r))
}
func (b adminBackend) StartRepair(r RepairRequest) (OpStatus, error) {
	return opErr(b.Node.StartRepair(r))
}
func (b adminBackend) StartRebuild(r RebuildRequest) (OpStatus, error) {
	return opErr(b.Node.StartRebuild(r))
}
func (b adminBackend) StartReplace() (OpStatus, error) { return opErr(b.Node.StartReplace()) }

func opErr(s OpStatus, err error) (OpStatus, error) {
	if err != nil && !errors.As(err, new(*adminapi.Error)) {
		// An operation that did not start was refused: the request or the node's state.
		if !isConflict(err) {
			return s, adminapi.BadRequest(err)
		}
	}
	return s, adminErr(err)
}

// adminErr gives the node's refusals their HTTP status; anything else stays a 500.
func adminErr(err error) error {
	var ce *ConfigError
	switch {
	case err == nil:
		return nil
	case isBadRequest(err):
		return adminapi.BadRequest(err)
	case errors.As(err, &ce):
		return adminapi.BadRequest(errors.New(ce.Field + ": " + ce.Reason))
	case isConflict(err):
		return adminapi.Conflict(err)
	}
	return err
}

func isConflict(err error) bool {
	return errors.Is(err, ErrOpRunning) || errors.Is(err, ErrNoMembership) || errors.Is(err, ErrBadState)
}

// badRequest marks a request error (400), as ops.BadRequest does the operations'.
type badRequest struct{ err error }

func (b badRequest) Error() string { return b.err.Error() }

// isBadRequest reports an error of the request: the node's or the operations'.
func isBadRequest(err error) bool {
	var br badRequest
	return errors.As(err, &br) || ops.IsBadRequest(err)
}

// tables is the catalog's table summaries in the admin API's (and the peer API's) form.
func (n *Node) tables() ([]TableStatus, error) { return n.local.Tables() }
