package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// stateFile, in the first data directory, records the node's tokens and ring state across
// restarts: a bootstrap resumes with the same tokens (so its Fetches resume), and a
// decommissioned node does not rejoin. The leading dot keeps it out of the catalog.
const stateFile = ".sluice-membership.json"

// localState is what stateFile holds.
type localState struct {
	State  string  `json:"state"` // JOINING, NORMAL or LEFT
	Tokens []int64 `json:"tokens"`
}

func (n *Node) stateFilePath() string { return filepath.Join(n.cfg.DataDirs[0], stateFile) }

// loadState reads stateFile; ok is false when there is none (a new node).
func (n *Node) loadState() (st localState, ok bool, err error) {
	b, err := os.ReadFile(n.stateFilePath())
	if errors.Is(err, fs.ErrNotExist) {
		return localState{}, false, nil
	}
	if err != nil {
		return localState{}, false, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return localState{}, false, fmt.Errorf("%s: %w", n.stateFilePath(), err)
	}
	return st, true, nil
}

// saveState replaces stateFile durably: write a temporary, fsync, rename, fsync the directory.
func (n *Node) saveState(st localState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(n.stateFilePath(), append(b, '\n'), 0o644)
}

// cluster is a running node's membership: its gossip instance and its own ring state. It
// exists from the moment gossip has joined until the node stops.
type cluster struct {
	n   *Node
	g   *gossip.Gossip
	log zerolog.Logger

	mu   sync.Mutex // orders meta changes
	meta gossip.NodeMeta

	peers ops.Peers // the other members, for the operations (netPeers)

	replacing atomic.Bool // streaming a dead member's ranges before taking its tokens (ops.Cluster.Replace)

	// Ring-change tracking: cleanup acts only on a ring that has not changed for a settle
	// period (trustRing, ownring.go). noteRing updates it, from watch and from the checks themselves.
	ringMu        sync.Mutex
	ringSum       uint64        // ringFingerprint of the ring last seen
	ringChangedAt time.Time     // when the ring last changed (or membership started)
	settle        time.Duration // one gossip round: the push/pull interval (settlePeriod)
	settleWait    time.Duration // how long a cleanup waits for a young ring to settle
}

// startCluster starts gossip, joins the seeds (retrying until ctx ends), settles the node's
// tokens and announces them. A new node with bootstrap set, and a node whose bootstrap was
// interrupted, is left JOINING with the bootstrap operation started.
func (n *Node) startCluster(ctx context.Context) (*cluster, error) {
	st, found, err := n.loadState()
	if err != nil {
		return nil, err
	}
	if found && st.State == ring.Left.String() {
		return nil, fmt.Errorf("%w (remove %s and the data to join again)", ErrDecommissioned, n.stateFilePath())
	}
	key, err := LoadClusterKey(n.cfg.ClusterKeyFile)
	if err != nil {
		return nil, err
	}
	meta := gossip.NodeMeta{AdminAddr: n.adminAddr.String(), DC: n.cfg.DC, Rack: n.cfg.Rack}
	if n.stream != nil {
		meta.StreamAddr = n.stream.Addr().String()
	}
	gcfg := gossip.Config{Name: n.cfg.Name, BindAddr: n.cfg.GossipAddr, Seeds: n.cfg.Seeds, ClusterKey: key,
		Label: n.cfg.ClusterLabel, Meta: meta, Log: n.log}
	if n.peerClient != nil {
		// The gossip key only lets a node talk; its state and tokens count once it proved
		// its name with the cluster CA at its stream address, and only as claims signed by
		// the key of the certificate it proved.
		gcfg.Verify, gcfg.Signer = n.proveMember, n.id.Signer()
	}
	if n.tuneGossip != nil {
		gcfg = n.tuneGossip(gcfg)
	}
	g, err := gossip.New(gcfg)
	if err != nil {
		return nil, err
	}
	n.metrics.gossipRejected.src.Store(g)
	if err := g.Start(ctx); err != nil {
		return nil, err
	}
	c := &cluster{n: n, g: g, log: n.log.With().Str("component", "membership").Logger(), meta: meta}
	c.peers = netPeers{c}
	c.settle = settlePeriod(gcfg)
	c.settleWait = c.settle
	c.ringChangedAt = time.Now()
	c.noteRing()
	n.log.Info().Str("gossip_addr", g.Addr()).Msg("joined gossip")
	if n.sidecar != nil {
		// The sidecar of a Cassandra node: the ring is Cassandra's (cassandra.go), so this
		// node announces no tokens and no ring state, only the host id it sits beside, for
		// the other sidecars to find it.
		n.sidecar.onHostID(c.setCassandraHostID)
		return c, nil
	}
	if replacing, err := c.prepareReplace(st, found); replacing || err != nil {
		if err != nil {
			g.Shutdown()
			return nil, err
		}
		return c, nil
	}

	bootstrap := false
	var tokens []int64
	switch {
	case found:
		tokens = st.Tokens
		bootstrap = st.State == ring.Joining.String()
	case n.cfg.Bootstrap:
		if err := n.checkEmpty(); err != nil {
			g.Shutdown()
			return nil, err
		}
		if tokens, err = c.allocate(ctx); err != nil {
			g.Shutdown()
			return nil, err
		}
		bootstrap = true
	default:
		tokens = n.initialTokens()
	}
	state := ring.Normal
	if bootstrap {
		state = ring.Joining
	}
	if err := n.saveState(localState{State: state.String(), Tokens: tokens}); err != nil {
		g.Shutdown()
		return nil, err
	}
	if err := g.SetTokens(tokens); err != nil {
		g.Shutdown()
		return nil, err
	}
	if err := c.setState(state); err != nil {
		g.Shutdown()
		return nil, err
	}
	n.log.Info().Str("state", state.String()).Int("tokens", len(tokens)).Msg("announced tokens")
	return c, nil
}

// initialTokens are the configured tokens or, for the first nodes of a cluster, random ones
// seeded by the name, so a restart without a state file picks the same ones.
func (n *Node) initialTokens() []int64 {
	if len(n.cfg.InitialTokens) > 0 {
		return slices.Clone(n.cfg.InitialTokens)
	}
	h := fnv.New64a()
	h.Write([]byte(n.cfg.Name))
	ts := ring.RandomTokens(rand.New(rand.NewPCG(h.Sum64(), 0)), n.cfg.NumTokens)
	return longsOf(ts)
}

func longsOf(ts []token.Token) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.Long
	}
	return out
}

// checkEmpty refuses to bootstrap a new node that already holds sstables: they would stay
// outside the ranges it is given, or duplicate what it fetches.
func (n *Node) checkEmpty() error {
	tables, err := n.tables()
	if err != nil {
		return err
	}
	for _, t := range tables {
		if t.SSTables > 0 {
			return fmt.Errorf("%w: %s.%s has %d sstables", ErrNotEmpty, t.Keyspace, t.Table, t.SSTables)
		}
	}
	return nil
}

// ringSettleInterval is how often a bootstrapping node looks at the ring while waiting for it
// to be complete.
const ringSettleInterval = 100 * time.Millisecond

// settledRing waits until every member this node has heard of has announced a state and the
// token sets of the ring's members have all arrived, then returns the ring.
func (c *cluster) settledRing(ctx context.Context) (ring.Ring, error) {
	t := time.NewTicker(ringSettleInterval)
	defer t.Stop()
	for {
		r, err := c.g.Ring()
		if err == nil && c.allAnnounced() {
			return r, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("members have not announced a state")
			}
			return ring.Ring{}, fmt.Errorf("waiting for the ring: %w (%w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

func (c *cluster) allAnnounced() bool {
	for _, m := range c.g.Members() {
		// A member whose identity was refused is not waited for: holding the gossip key alone
		// must not stall every bootstrap.
		if m.Name != c.n.cfg.Name && m.Liveness == gossip.StateAlive && m.Meta.State == 0 && m.Identity != gossip.IdentityRefused {
			return false
		}
	}
	return true
}

// allocate picks balanced tokens against the ring, under the first configured keyspace's
// strategy (the one ownership is reported for).
func (c *cluster) allocate(ctx context.Context) ([]int64, error) {
	r, err := c.settledRing(ctx)
	if err != nil {
		return nil, err
	}
	_, s := c.n.defaultStrategy()
	ts, err := ring.AllocateTokens(r, c.self(), c.n.cfg.NumTokens, s)
	if err != nil {
		return nil, err
	}
	return longsOf(ts), nil
}

// defaultStrategy is the first keyspace (by name) and its strategy, or SimpleStrategy RF 1
// when no keyspace is configured.
func (n *Node) defaultStrategy() (string, ring.Strategy) {
	for _, ks := range sortedKeys(n.cfg.Keyspaces) {
		s, _ := n.cfg.Keyspaces[ks].Strategy() // validated by New
		return ks, s
	}
	return "", ring.SimpleStrategy{RF: 1}
}

func (c *cluster) self() ring.Node {
	return ring.Node{Name: c.n.cfg.Name, DC: c.n.cfg.DC, Rack: c.n.cfg.Rack}
}

func (c *cluster) state() ring.NodeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.meta.State
}

func (c *cluster) setState(s ring.NodeState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.meta
	m.State = s
	if err := c.g.SetMeta(m); err != nil {
		return err
	}
	c.meta = m
	return nil
}

// setCassandraHostID announces the host id of the Cassandra node this sidecar sits beside.
func (c *cluster) setCassandraHostID(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.meta
	m.CassandraHostID = id
	if err := c.g.SetMeta(m); err != nil {
		c.log.Error().Err(err).Str("host_id", id).Msg("cannot announce the Cassandra host id")
		return
	}
	c.meta = m
}

// members returns the gossip members by name.
func (c *cluster) members() map[string]gossip.Member {
	out := map[string]gossip.Member{}
	for _, m := range c.g.Members() {
		out[m.Name] = m
	}
	return out
}

// watch reacts to membership events until the events channel closes: a peer declared dead or
// gone fails this node's sessions with it at once instead of after the idle timeout.
func (c *cluster) watch() {
	for ev := range c.g.Events() {
		c.noteRing()
		switch ev.Kind {
		case gossip.Dead, gossip.Leave:
			// Only a proven member speaks for its address: an impostor announcing another
			// node's address and leaving must not fail the sessions with that node.
			if a, err := streamAddr(ev.Member); err == nil && ev.Member.Identity == gossip.IdentityProven {
				if k := c.n.peers.cancel(a); k > 0 {
					c.log.Warn().Str("peer", ev.Member.Name).Str("stream_addr", a).Int("sessions", k).
						Msg("peer down: failing its sessions")
				}
			}
			c.log.Info().Str("peer", ev.Member.Name).Str("event", ev.Kind.String()).Msg("membership change")
		case gossip.Join:
			c.log.Info().Str("peer", ev.Member.Name).Msg("membership change: join")
		}
	}
}

// defaultPushPull is gossip.Config's documented default PushPullInterval.
const defaultPushPull = 30 * time.Second

// settlePeriod is how long the ring must stay unchanged before cleanup acts on it: one
// push/pull interval, the round in which every member exchanges its full state with another,
// so that a change one member saw has had a chance to reach (or be contradicted by) the rest.
func settlePeriod(gcfg gossip.Config) time.Duration {
	if gcfg.PushPullInterval > 0 {
		return gcfg.PushPullInterval
	}
	return defaultPushPull
}

// noteRing compares the ring gossip builds now with the one last seen and records the time
// when it differs. It returns the ring's fingerprint and when it last changed.
func (c *cluster) noteRing() (uint64, time.Time) {
	sum := ringFingerprint(c.g.Ring())
	c.ringMu.Lock()
	defer c.ringMu.Unlock()
	if sum != c.ringSum {
		c.ringSum, c.ringChangedAt = sum, time.Now()
	}
	return c.ringSum, c.ringChangedAt
}

// settleTimes returns the settle period and how long cleanup waits for it.
func (c *cluster) settleTimes() (settle, wait time.Duration) {
	c.ringMu.Lock()
	defer c.ringMu.Unlock()
	return c.settle, c.settleWait
}

// ringFingerprint hashes what a ring is made of: every member's name, place, state and
// tokens, or the error that kept gossip from building it.
func ringFingerprint(r ring.Ring, err error) uint64 {
	h := fnv.New64a()
	if err != nil {
		h.Write([]byte("error\x00" + err.Error()))
		return h.Sum64()
	}
	var b []byte
	for _, m := range r.Members() { // sorted by name, tokens sorted
		b = append(b[:0], m.Node.Name...)
		b = append(b, 0)
		b = append(b, m.Node.DC...)
		b = append(b, 0)
		b = append(b, m.Node.Rack...)
		b = append(b, 0, byte(m.State))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Tokens)))
		for _, t := range m.Tokens {
			b = binary.LittleEndian.AppendUint64(b, uint64(t.Long))
		}
		h.Write(b)
	}
	return h.Sum64()
}

// peerRegistry maps a peer's stream address to the cancel functions of the sessions this node
// runs against it, so that a failure verdict can end them promptly.
type peerRegistry struct {
	mu   sync.Mutex
	next uint64
	m    map[string]map[uint64]context.CancelFunc
}

// register derives a context from ctx that cancel(peer) ends; the returned function releases
// the registration and the context.
func (p *peerRegistry) register(ctx context.Context, peer string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]map[uint64]context.CancelFunc{}
	}
	p.next++
	id := p.next
	if p.m[peer] == nil {
		p.m[peer] = map[uint64]context.CancelFunc{}
	}
	p.m[peer][id] = func() { cancel(fmt.Errorf("%w: %s", ErrPeerDown, peer)) }
	p.mu.Unlock()
	return ctx, func() {
		p.mu.Lock()
		delete(p.m[peer], id)
		if len(p.m[peer]) == 0 {
			delete(p.m, peer)
		}
		p.mu.Unlock()
		cancel(nil)
	}
}

// cancel ends every registered session with peer and returns how many there were.
func (p *peerRegistry) cancel(peer string) int {
	p.mu.Lock()
	fs := p.m[peer]
	delete(p.m, peer)
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return len(fs)
}

// view builds the ring view; load is asked of each member (this node answers for itself).
func (c *cluster) view(load func(m gossip.Member) int64) RingView {
	ks, s := c.n.defaultStrategy()
	v := RingView{Self: c.n.cfg.Name, State: stateName(c.state()), OwnershipKeyspace: ks,
		Members: []RingMember{}, Tokens: []RingToken{}}
	own := map[string]float64{}
	if r, err := c.g.Ring(); err != nil {
		v.Error = err.Error()
	} else {
		own = ring.Ownership(r, s)
	}
	ms := c.g.Members()
	replaced := gossip.Replaced(ms)
	loads := make([]int64, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loads[i] = load(m)
		}()
	}
	wg.Wait()
	for i, m := range ms {
		up := m.Liveness == gossip.StateAlive
		v.Members = append(v.Members, RingMember{Name: m.Name, State: stateName(m.Meta.State), Up: up,
			Liveness: m.Liveness.String(), LoadBytes: loads[i], Ownership: own[m.Name], Tokens: len(m.Tokens),
			Identity: m.Identity.String(), IdentityError: m.IdentityError,
			DC: m.Meta.DC, Rack: m.Meta.Rack, StreamAddr: m.Meta.StreamAddr, AdminAddr: m.Meta.AdminAddr,
			ReplacedBy: replaced[m.Name]})
		if m.Meta.State == ring.Left || m.Meta.State == 0 || m.Identity != gossip.IdentityProven || replaced[m.Name] != "" {
			continue
		}
		for _, t := range m.Tokens {
			v.Tokens = append(v.Tokens, RingToken{Token: t, Node: m.Name, State: stateName(m.Meta.State), Up: up,
				DC: m.Meta.DC, Rack: m.Meta.Rack})
		}
	}
	sort.Slice(v.Tokens, func(i, j int) bool { return v.Tokens[i].Token < v.Tokens[j].Token })
	return v
}

func stateName(s ring.NodeState) string {
	if s == 0 {
		return ""
	}
	return s.String()
}
