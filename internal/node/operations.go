package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/stream"
)

// The cluster operations are internal/ops'; this file starts them for the admin API: it
// checks the request against the configuration and this node's state, and runs the
// operation under the node's tracker, over sluice's own ring (ownRing) or, for the sidecar's
// rebuild, Cassandra's (cassandra_rebuild.go).

// op is a running operation's handle as the node's own operations (the sidecar's load) use it.
type op struct{ *ops.Op }

func (o *op) update(f func(s *OpStatus)) { o.Update(f) }

// startOp starts fn as an operation, unless one is running. The operation runs under the
// node's run context, so stopping the node ends it.
func (n *Node) startOp(kind, detail string, fn func(ctx context.Context, o *op) error) (OpStatus, error) {
	return n.tracker.Start(kind, detail, func(ctx context.Context, o *ops.Op) error { return fn(ctx, &op{o}) })
}

// eachTransfer is ops.EachTransfer: fn(i) for i in [0, n), a few at a time.
func eachTransfer(ctx context.Context, n int, fn func(i int, waited error) error) []error {
	return ops.EachTransfer(ctx, n, fn)
}

// maxParallelTransfers bounds the (source, target) pairs a plan streams at once.
const maxParallelTransfers = ops.MaxParallelTransfers

// Ops returns a snapshot of the operations, oldest first.
func (n *Node) Ops() []OpStatus { return n.tracker.List() }

// WaitOp returns once operation id has ended, or when ctx ends (GET /v1/ops?wait=).
func (n *Node) WaitOp(ctx context.Context, id int) { n.tracker.WaitEnded(ctx, id) }

func (n *Node) requireCluster() (*cluster, error) {
	c := n.cluster.Load()
	if c == nil {
		return nil, ErrNoMembership
	}
	return c, nil
}

// StartBootstrap streams the ranges of a JOINING node's tokens from their current replicas and
// makes it NORMAL. A node started with bootstrap runs it by itself; this retries a failed one.
func (n *Node) StartBootstrap() (OpStatus, error) {
	if err := n.refuseOwnRing("bootstrap"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if s := c.state(); s != ring.Joining {
		return OpStatus{}, fmt.Errorf("%w: bootstrap needs JOINING, node is %v", ErrBadState, s)
	}
	return n.tracker.Start(OpBootstrap, "", c.operations().Bootstrap)
}

// StartDecommission hands this node's ranges to the nodes that take them over and leaves.
func (n *Node) StartDecommission() (OpStatus, error) {
	if err := n.refuseOwnRing("decommission"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if s := c.state(); s != ring.Normal && s != ring.Leaving {
		return OpStatus{}, fmt.Errorf("%w: decommission needs NORMAL, node is %v", ErrBadState, s)
	}
	return n.tracker.Start(OpDecommission, "", c.operations().Decommission)
}

// StartMove gives this single-token node the token t (ops.Cluster.Move).
func (n *Node) StartMove(t int64) (OpStatus, error) {
	if err := n.refuseOwnRing("move"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if s := c.state(); s != ring.Normal {
		return OpStatus{}, fmt.Errorf("%w: move needs NORMAL, node is %v", ErrBadState, s)
	}
	if ts, _ := c.g.Tokens(); len(ts) != 1 {
		return OpStatus{}, fmt.Errorf("%w: move needs a single-token node, this one has %d tokens", ErrBadState, len(ts))
	}
	oc := c.operations()
	return n.tracker.Start(OpMove, fmt.Sprint(t), func(ctx context.Context, o *ops.Op) error { return oc.Move(ctx, o, t) })
}

// StartRebuild fills this NORMAL node with the data of the ranges it replicates
// (ops.Cluster.Rebuild over sluice's own ring). A retry after a failure resumes: transfers an
// earlier attempt completed are skipped (the operation journal).
func (n *Node) StartRebuild(req RebuildRequest) (OpStatus, error) {
	if err := n.refuseOwnRing("rebuild"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if req.Keyspace != "" {
		if _, ok := n.cfg.Keyspaces[req.Keyspace]; !ok {
			return OpStatus{}, badRequest{fmt.Errorf("rebuild: keyspace %q has no replication in the configuration", req.Keyspace)}
		}
	}
	if s := c.state(); s != ring.Normal {
		return OpStatus{}, fmt.Errorf("%w: rebuild needs NORMAL, node is %v", ErrBadState, s)
	}
	detail := req.SourceDC
	if req.Keyspace != "" {
		detail += " " + req.Keyspace
	}
	oc := c.operations()
	return n.tracker.Start(OpRebuild, detail, func(ctx context.Context, o *ops.Op) error { return oc.Rebuild(ctx, o, req) })
}

// StartReplace retries the replacement of replace_address after a failure.
func (n *Node) StartReplace() (OpStatus, error) {
	if err := n.refuseOwnRing("replace"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if !c.replacing.Load() {
		return OpStatus{}, fmt.Errorf("%w: this node is not replacing a member (replace_address)", ErrBadState)
	}
	oc, dead := c.operations(), n.cfg.ReplaceAddress
	return n.tracker.Start(OpReplace, dead, func(ctx context.Context, o *ops.Op) error { return oc.Replace(ctx, o, dead) })
}

// StartCleanup removes from this node's tables every partition outside the ranges it must keep,
// but only what the nodes that own it confirm they hold (ops.Cluster.Cleanup).
func (n *Node) StartCleanup(req CleanupRequest) (OpStatus, error) {
	if err := n.refuseOwnRing("cleanup"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if req.Table != "" && req.Keyspace == "" {
		return OpStatus{}, badRequest{errors.New("cleanup: a table needs its keyspace")}
	}
	if req.Keyspace != "" {
		if err := cqlname.Check("keyspace", req.Keyspace); err != nil {
			return OpStatus{}, badRequest{fmt.Errorf("cleanup: %w", err)}
		}
	}
	if req.Table != "" {
		if err := cqlname.Check("table", req.Table); err != nil {
			return OpStatus{}, badRequest{fmt.Errorf("cleanup: %w", err)}
		}
	}
	if req.Keyspace != "" {
		if _, ok := n.cfg.Keyspaces[req.Keyspace]; !ok {
			return OpStatus{}, fmt.Errorf("cleanup: keyspace %q has no replication in the configuration", req.Keyspace)
		}
	}
	if s := c.state(); s != ring.Normal {
		return OpStatus{}, fmt.Errorf("%w: cleanup needs NORMAL, node is %v", ErrBadState, s)
	}
	detail := strings.TrimSuffix(req.Keyspace+"."+req.Table, ".")
	oc := c.operations()
	return n.tracker.Start(OpCleanup, detail, func(ctx context.Context, o *ops.Op) error { return oc.Cleanup(ctx, o, req) })
}

// StartRepair starts a repair of one table with every other replica of the requested ranges
// (ops.Cluster.Repair).
func (n *Node) StartRepair(req RepairRequest) (OpStatus, error) {
	if err := n.refuseOwnRing("repair"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if err := cqlname.CheckTable(req.Keyspace, req.Table); err != nil {
		return OpStatus{}, badRequest{fmt.Errorf("repair: %w", err)}
	}
	if _, ok := n.cfg.Keyspaces[req.Keyspace]; !ok {
		return OpStatus{}, badRequest{fmt.Errorf("repair: keyspace %q has no replication in the configuration", req.Keyspace)}
	}
	var want token.RangeSet
	if req.Ranges != "" {
		if want, err = token.ParseRanges(token.Murmur3, req.Ranges); err != nil {
			return OpStatus{}, badRequest{fmt.Errorf("repair: %w", err)}
		}
	}
	if s := c.state(); s != ring.Normal {
		return OpStatus{}, fmt.Errorf("%w: repair needs NORMAL, node is %v", ErrBadState, s)
	}
	detail := req.Keyspace + "." + req.Table
	if req.Ranges != "" {
		detail += " " + req.Ranges
	}
	oc := c.operations()
	return n.tracker.Start(OpRepair, detail, func(ctx context.Context, o *ops.Op) error { return oc.Repair(ctx, o, req, want) })
}

// StartImport verifies every sstable in the directory and, only when all are clean, installs
// copies into the table's directory (ops.Local.Import). It needs no membership.
func (n *Node) StartImport(req ImportRequest) (OpStatus, error) {
	if err := n.refuseOwnRing("import (use sluice cassandra import)"); err != nil {
		return OpStatus{}, err
	}
	if req.Keyspace == "" || req.Table == "" || req.Dir == "" {
		return OpStatus{}, badRequest{errors.New("import: keyspace, table and dir are required")}
	}
	if err := cqlname.CheckTable(req.Keyspace, req.Table); err != nil {
		return OpStatus{}, badRequest{fmt.Errorf("import: %w", err)}
	}
	fi, err := os.Stat(req.Dir)
	if err != nil {
		return OpStatus{}, fmt.Errorf("import: %w", err)
	}
	if !fi.IsDir() {
		return OpStatus{}, fmt.Errorf("import: %s is not a directory", req.Dir)
	}
	return n.tracker.Start(OpImport, req.Keyspace+"."+req.Table+" "+req.Dir, func(ctx context.Context, o *ops.Op) error {
		return n.local.Import(ctx, o, req)
	})
}

// Fetch pulls ranges of a table from a peer's stream server into this node, resuming what an
// interrupted fetch of the same request installed. It is registered under the peer, so a
// failure verdict from membership cancels it.
func (n *Node) Fetch(ctx context.Context, req FetchOpRequest) (FetchOpResponse, error) {
	if err := n.refuseOwnRing("a fetch into the data directories"); err != nil {
		return FetchOpResponse{}, err
	}
	if !n.isReady() {
		return FetchOpResponse{}, errors.New("node: not running")
	}
	rs, err := token.ParseRanges(token.Murmur3, req.Ranges)
	if err != nil || len(rs) == 0 {
		return FetchOpResponse{}, badRequest{fmt.Errorf("ranges %q: %v", req.Ranges, cmp.Or(err, errors.New("empty")))}
	}
	if req.Peer == "" || req.Source == "" {
		return FetchOpResponse{}, badRequest{errors.New("fetch: the source node and its address are required")}
	}
	if err := cqlname.CheckTable(req.Keyspace, req.Table); err != nil {
		return FetchOpResponse{}, badRequest{err}
	}
	dir, err := n.local.TableDirFor(req.Keyspace, req.Table, req.TableID)
	if err != nil {
		return FetchOpResponse{}, err
	}
	l := n.local.Lock(dir)
	l.RLock()
	defer l.RUnlock()
	res, err := n.streamFetch(ctx, req.Source,
		stream.FetchRequest{Peer: req.Peer, Keyspace: req.Keyspace, Table: req.Table, Ranges: rs, Dir: dir, Resume: true})
	if res == nil && isBadRequest(err) {
		return FetchOpResponse{}, err
	}
	out := FetchOpResponse{Dir: dir, SSTables: []string{}}
	if res != nil {
		for _, f := range res.SSTables {
			out.SSTables = append(out.SSTables, f.Path)
		}
		out.Skipped, out.BytesReceived = len(res.Skipped), res.BytesReceived
	}
	return out, err
}

// streamFetch runs one stream.Fetch of req from member source (at req.Peer), which proves it
// is that member: its certificate, for the node role. The session is registered under the
// peer, so a failure verdict from membership cancels it. A configuration it cannot make is a
// badRequest.
func (n *Node) streamFetch(ctx context.Context, source string, req stream.FetchRequest) (*stream.FetchResult, error) {
	if n.id == nil {
		return nil, errors.New("node: fetching needs the stream server's identity")
	}
	tc, err := peerrpc.TLSConfig(n.id, req.Peer, source)
	if err != nil {
		return nil, badRequest{err}
	}
	tc.NextProtos = nil // the stream protocol (stream.Fetch sets its ALPN)
	cfg := StreamSettings(n.streamConfig())
	// A sidecar's fetches land in staging for Cassandra's importer, which needs Cassandra's
	// sequential rules: the receiver checks them once, and the import does not again.
	cfg.VerifyStrict = n.sidecar != nil
	if q, ok := n.stream.(*quicServer); ok {
		cfg.Inbound = q.Inbound()
	}
	fctx, release := n.peers.register(ctx, req.Peer)
	defer release()
	res, err := stream.Fetch(fctx, cfg, tc, req, n.sessions.record)
	if cause := context.Cause(fctx); err != nil && errors.Is(cause, ErrPeerDown) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	return res, err
}

// maxOwnSessions bounds the finished fetch sessions kept for netstats.
const maxOwnSessions = 64

// sessionLog keeps the latest progress of the fetch sessions this node ran, for netstats.
type sessionLog struct {
	mu       sync.Mutex
	sessions map[string]stream.SessionStatus // by ID
	order    []string                        // session IDs, oldest first
}

func (l *sessionLog) record(s stream.SessionStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions == nil {
		l.sessions = map[string]stream.SessionStatus{}
	}
	if _, ok := l.sessions[s.ID]; !ok {
		l.order = append(l.order, s.ID)
		if len(l.order) > maxOwnSessions {
			delete(l.sessions, l.order[0])
			l.order = l.order[1:]
		}
	}
	l.sessions[s.ID] = s
}

func (l *sessionLog) list() []stream.SessionStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]stream.SessionStatus, 0, len(l.order))
	for _, id := range l.order {
		out = append(out, l.sessions[id])
	}
	return out
}
