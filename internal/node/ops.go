package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/stream"
)

// maxOps bounds the operations GET /v1/ops remembers.
const maxOps = 32

// maxParallelTransfers bounds the (source, target) pairs a plan streams at once.
const maxParallelTransfers = 4

// opsState tracks operations; they run one at a time.
type opsState struct {
	mu       sync.Mutex
	next     int
	running  bool
	list     []*OpStatus
	wg       sync.WaitGroup
	sessions map[string]stream.SessionStatus // fetch sessions this node ran, by ID
	order    []string                        // session IDs, oldest first
}

// maxOwnSessions bounds the finished fetch sessions kept for netstats.
const maxOwnSessions = 64

// op is a handle on a running operation's status.
type op struct {
	n *Node
	s *OpStatus
}

func (o *op) update(f func(s *OpStatus)) {
	o.n.ops.mu.Lock()
	f(o.s)
	o.n.ops.mu.Unlock()
}

// startOp starts fn as an operation, unless one is running. The operation runs under the
// node's run context, so stopping the node ends it.
func (n *Node) startOp(kind, detail string, fn func(ctx context.Context, o *op) error) (OpStatus, error) {
	if !n.isReady() {
		return OpStatus{}, ErrNoMembership
	}
	n.ops.mu.Lock()
	defer n.ops.mu.Unlock()
	if n.ops.running {
		return OpStatus{}, ErrOpRunning
	}
	n.ops.running = true
	n.ops.next++
	s := &OpStatus{ID: n.ops.next, Kind: kind, Detail: detail, State: OpRunning, Started: time.Now()}
	n.ops.list = append(n.ops.list, s)
	if len(n.ops.list) > maxOps {
		n.ops.list = slices.Delete(n.ops.list, 0, len(n.ops.list)-maxOps)
	}
	o := &op{n: n, s: s}
	n.ops.wg.Add(1)
	go func() {
		defer n.ops.wg.Done()
		log := n.log.With().Str("op", kind).Int("op_id", s.ID).Logger()
		log.Info().Str("detail", detail).Msg("operation started")
		err := fn(n.runCtx, o)
		n.ops.mu.Lock()
		s.Finished = time.Now()
		s.State = OpComplete
		if err != nil {
			s.State, s.Error = OpFailed, err.Error()
		}
		n.ops.running = false
		n.ops.mu.Unlock()
		if err != nil {
			log.Error().Err(err).Msg("operation failed")
		} else {
			log.Info().Msg("operation complete")
		}
	}()
	return *s, nil
}

// Ops returns a snapshot of the operations, oldest first.
func (n *Node) Ops() []OpStatus {
	n.ops.mu.Lock()
	defer n.ops.mu.Unlock()
	out := make([]OpStatus, 0, len(n.ops.list))
	for _, s := range n.ops.list {
		c := *s
		c.Transfers = slices.Clone(s.Transfers)
		c.Cleanup = slices.Clone(s.Cleanup)
		c.CleanupChecks = slices.Clone(s.CleanupChecks)
		c.Imported = slices.Clone(s.Imported)
		c.Repair = slices.Clone(s.Repair)
		out = append(out, c)
	}
	return out
}

// recordSession keeps a fetch session's latest progress for netstats.
func (n *Node) recordSession(s stream.SessionStatus) {
	n.ops.mu.Lock()
	defer n.ops.mu.Unlock()
	if n.ops.sessions == nil {
		n.ops.sessions = map[string]stream.SessionStatus{}
	}
	if _, ok := n.ops.sessions[s.ID]; !ok {
		n.ops.order = append(n.ops.order, s.ID)
		if len(n.ops.order) > maxOwnSessions {
			delete(n.ops.sessions, n.ops.order[0])
			n.ops.order = n.ops.order[1:]
		}
	}
	n.ops.sessions[s.ID] = s
}

func (n *Node) ownSessions() []stream.SessionStatus {
	n.ops.mu.Lock()
	defer n.ops.mu.Unlock()
	out := make([]stream.SessionStatus, 0, len(n.ops.order))
	for _, id := range n.ops.order {
		out = append(out, n.ops.sessions[id])
	}
	return out
}

// FetchOpRequest is the peer operation fetch: pull keyspace.table's ranges from member
// Source into this node's table directory (the existing one, or
// <first data dir>/<keyspace>/<table>-<table_id>). Between members the source is named and
// the fetching node looks its address up; Peer (its stream address) is set only by the node
// itself.
type FetchOpRequest struct {
	Source   string `json:"source"`
	Peer     string `json:"peer,omitempty"`
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	TableID  string `json:"table_id"`
	Ranges   string `json:"ranges"` // token.RangeSet text: (l,r],(l,r]
}

// FetchOpResponse is what POST /v1/ops/fetch installed.
type FetchOpResponse struct {
	Dir           string   `json:"dir"`
	SSTables      []string `json:"sstables"` // installed path prefixes
	Skipped       int      `json:"skipped"`
	BytesReceived int64    `json:"bytes_received"`
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
	dir, err := n.tableDirFor(req.Keyspace, req.Table, req.TableID)
	if err != nil {
		return FetchOpResponse{}, err
	}
	l := n.dirLocks.get(dir)
	l.RLock()
	defer l.RUnlock()
	res, err := n.streamFetch(ctx, req.Source,
		stream.FetchRequest{Peer: req.Peer, Keyspace: req.Keyspace, Table: req.Table, Ranges: rs, Dir: dir, Resume: true})
	var bad badRequest
	if res == nil && errors.As(err, &bad) {
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
	if q, ok := n.stream.(*quicServer); ok {
		cfg.Inbound = q.Inbound()
	}
	fctx, release := n.peers.register(ctx, req.Peer)
	defer release()
	res, err := stream.Fetch(fctx, cfg, tc, req, n.recordSession)
	if cause := context.Cause(fctx); err != nil && errors.Is(cause, ErrPeerDown) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	return res, err
}

// tableDirFor is the directory of keyspace.table on this node: the one that exists, or a new
// one named with id under the first data directory.
func (n *Node) tableDirFor(keyspace, table, id string) (string, error) {
	// Every caller checked the names; this is the last line before they become a path.
	if err := cqlname.CheckTable(keyspace, table); err != nil {
		return "", badRequest{err}
	}
	dirs, err := n.catalog.TableDirs()
	if err != nil {
		return "", err
	}
	for _, td := range dirs {
		if td.Keyspace == keyspace && td.Table == table && (id == "" || td.ID == id) {
			return td.Path, nil
		}
	}
	if id == "" {
		return "", fmt.Errorf("%w: %s.%s (and no table id to create it)", catalog.ErrUnknownTable, keyspace, table)
	}
	p := filepath.Join(n.cfg.DataDirs[0], keyspace, table+"-"+id)
	if _, _, _, ok := descriptor.TableDir(p); !ok {
		return "", fmt.Errorf("table %s.%s id %q: not a table directory name", keyspace, table, id)
	}
	return p, nil
}

// ksPlan is one keyspace's transfers.
type ksPlan struct {
	keyspace  string
	transfers []ring.Transfer
}

// pairJob is every range one source sends one target for one keyspace.
type pairJob struct {
	keyspace, from, to string
	ranges             token.RangeSet
}

// execute runs stream plans: every (keyspace, from, to) pair streams every table of the
// keyspace that the source holds, up to maxParallelTransfers pairs at once. A pair whose
// target is this node fetches directly; any other target is asked to fetch through its admin
// API (POST /v1/ops/fetch). It returns every failure joined.
func (c *cluster) execute(ctx context.Context, o *op, plans []ksPlan) error {
	var jobs []pairJob
	for _, p := range plans {
		idx := map[[2]string]int{}
		for _, t := range p.transfers {
			k := [2]string{t.From, t.To}
			i, ok := idx[k]
			if !ok {
				i = len(jobs)
				idx[k] = i
				jobs = append(jobs, pairJob{keyspace: p.keyspace, from: t.From, to: t.To})
			}
			jobs[i].ranges = append(jobs[i].ranges, t.Range)
		}
	}
	j, err := c.n.openJournal(planKey(o.s.Kind, plans))
	if err != nil {
		return fmt.Errorf("operation journal: %w", err)
	}
	errs := eachTransfer(ctx, len(jobs), func(i int, waited error) error {
		if waited != nil {
			return waited
		}
		return c.runPair(ctx, o, jobs[i], j)
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return j.clear()
}

// eachTransfer runs fn(i) for i in [0, n), at most maxParallelTransfers at a time, and returns
// their errors by index. fn is called for every i: with waited set to ctx's error when ctx
// ended before a slot came free (it then runs without one, to record the failure).
func eachTransfer(ctx context.Context, n int, fn func(i int, waited error) error) []error {
	sem := make(chan struct{}, maxParallelTransfers)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
				errs[i] = fn(i, nil)
			case <-ctx.Done():
				errs[i] = fn(i, ctx.Err())
			}
		}()
	}
	wg.Wait()
	return errs
}

func (c *cluster) runPair(ctx context.Context, o *op, j pairJob, journal *opJournal) error {
	tables, err := c.peers.tables(ctx, j.from, j.keyspace)
	if err != nil {
		return fmt.Errorf("listing %s's tables: %w", j.from, err)
	}
	var errs []error
	for _, t := range tables {
		req := FetchOpRequest{Source: j.from, Keyspace: t.Keyspace, Table: t.Table, TableID: t.ID, Ranges: j.ranges.String()}
		key := strings.Join([]string{t.Keyspace, t.Table, t.ID, j.from, j.to, req.Ranges}, "|")
		var idx int
		o.update(func(s *OpStatus) {
			idx = len(s.Transfers)
			s.Transfers = append(s.Transfers, TransferStatus{From: j.from, To: j.to, Keyspace: t.Keyspace, Table: t.Table,
				Ranges: req.Ranges, State: OpRunning})
		})
		if journal.has(key) {
			// An earlier attempt of this operation completed it: fetching again would install
			// the same partitions twice.
			o.update(func(s *OpStatus) { s.Transfers[idx].State = OpComplete })
			continue
		}
		var res FetchOpResponse
		res, err = c.peers.fetch(ctx, j.to, req)
		o.update(func(s *OpStatus) {
			ts := &s.Transfers[idx]
			ts.SSTables, ts.Skipped, ts.BytesReceived = len(res.SSTables), res.Skipped, res.BytesReceived
			ts.State = OpComplete
			if err != nil {
				ts.State, ts.Error = OpFailed, err.Error()
			}
		})
		if err == nil {
			err = journal.add(key)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%s %s->%s: %w", t.Keyspace, t.Table, j.from, j.to, err))
		}
	}
	return errors.Join(errs...)
}

// plans computes the change's stream plan for every configured keyspace.
func (c *cluster) plans(r ring.Ring, ch ring.Change) ([]ksPlan, error) {
	var out []ksPlan
	for _, ks := range sortedKeys(c.n.cfg.Keyspaces) {
		s, _ := c.n.cfg.Keyspaces[ks].Strategy()
		p, err := ring.Plan(r, s, ch, ring.PlanOptions{Down: c.down()})
		if err != nil {
			return nil, fmt.Errorf("keyspace %s: %w", ks, err)
		}
		out = append(out, ksPlan{keyspace: ks, transfers: p.Transfers})
	}
	return out, nil
}

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
	return n.startOp(OpBootstrap, "", c.bootstrap)
}

func (c *cluster) bootstrap(ctx context.Context, o *op) error {
	r, err := c.settledRing(ctx)
	if err != nil {
		return err
	}
	tokens, _ := c.g.Tokens()
	ts := make([]token.Token, len(tokens))
	for i, v := range tokens {
		ts[i] = token.Token{Kind: token.KindMurmur3, Long: v}
	}
	plans, err := c.plans(r, ring.Bootstrap(c.self(), ts))
	if err != nil {
		return err
	}
	if err := c.execute(ctx, o, plans); err != nil {
		return err
	}
	if err := c.n.saveState(localState{State: ring.Normal.String(), Tokens: tokens}); err != nil {
		return err
	}
	return c.setState(ring.Normal)
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
	return n.startOp(OpDecommission, "", c.decommission)
}

// leftConfirmTimeout bounds the wait for peers to see this node LEFT before it leaves gossip.
const leftConfirmTimeout = 15 * time.Second

func (c *cluster) decommission(ctx context.Context, o *op) error {
	r, err := c.settledRing(ctx)
	if err != nil {
		return err
	}
	plans, err := c.plans(r, ring.Decommission(c.n.cfg.Name))
	if err != nil {
		return err
	}
	if err := c.setState(ring.Leaving); err != nil {
		return err
	}
	if err := c.execute(ctx, o, plans); err != nil {
		// Stay LEAVING: the ranges are still ours and a retry resumes the fetches.
		return err
	}
	tokens, _ := c.g.Tokens()
	if err := c.n.saveState(localState{State: ring.Left.String(), Tokens: tokens}); err != nil {
		return err
	}
	if err := c.setState(ring.Left); err != nil {
		return err
	}
	// After Leave, gossip no longer re-announces metadata, so wait until the peers have seen
	// LEFT; a peer that never does would keep this node in its ring as LEAVING.
	c.awaitSeenLeft(ctx)
	if err := c.g.Leave(5 * time.Second); err != nil {
		c.log.Warn().Err(err).Msg("leave announcement")
	}
	return c.g.Shutdown()
}

func (c *cluster) awaitSeenLeft(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, leftConfirmTimeout)
	defer cancel()
	for _, m := range c.g.Members() {
		if m.Name == c.n.cfg.Name || m.Liveness != gossip.StateAlive || m.Identity != gossip.IdentityProven {
			continue
		}
		for {
			var v RingView
			if err := c.call(ctx, m, peerRing, nil, &v); err == nil && sawLeft(v, c.n.cfg.Name) {
				break
			}
			select {
			case <-ctx.Done():
				c.log.Warn().Str("peer", m.Name).Msg("peer has not seen this node LEFT")
				return
			case <-time.After(ringSettleInterval):
			}
		}
	}
}

func sawLeft(v RingView, name string) bool {
	for _, m := range v.Members {
		if m.Name == name {
			return m.State == ring.Left.String()
		}
	}
	return false
}

// StartMove gives this single-token node the token t: the ranges it gains are fetched from
// their current replicas (and others fetch what they gain), then the new token is published.
// The ranges it gives up stay on disk until cleanup.
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
	return n.startOp(OpMove, fmt.Sprint(t), func(ctx context.Context, o *op) error { return c.move(ctx, o, t) })
}

func (c *cluster) move(ctx context.Context, o *op, t int64) error {
	r, err := c.settledRing(ctx)
	if err != nil {
		return err
	}
	plans, err := c.plans(r, ring.Move(c.n.cfg.Name, token.Token{Kind: token.KindMurmur3, Long: t}))
	if err != nil {
		return err
	}
	if err := c.setState(ring.Moving); err != nil {
		return err
	}
	if err := c.execute(ctx, o, plans); err != nil {
		// Back to NORMAL at the old token: nothing was published, what was fetched is
		// duplicate data that cleanup removes.
		return errors.Join(err, c.setState(ring.Normal))
	}
	if err := c.n.saveState(localState{State: ring.Normal.String(), Tokens: []int64{t}}); err != nil {
		return err
	}
	if err := c.g.SetTokens([]int64{t}); err != nil {
		return err
	}
	return c.setState(ring.Normal)
}
