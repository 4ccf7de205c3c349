package gossip

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// Gossip is a node's membership layer: a memberlist instance, the node's metadata and token
// set, and everything it has heard about the other nodes.
//
// Life cycle: New, then Start once; Leave (optional, announces a graceful departure) and
// Shutdown end it. Shutdown stops the memberlist and the two goroutines Start launches (the
// event drainer and the metadata announcer) and closes the Events channel; Gossip owns all
// of them and the caller closes nothing else. A failed Start shuts the Gossip down.
//
// All methods are safe for concurrent use. None retains a caller's slice: tokens and keys
// are copied. Slices returned (Members, Tokens in events) belong to the caller.
type Gossip struct {
	cfg     Config
	log     zerolog.Logger
	keyring *memberlist.Keyring
	bcast   *memberlist.TransmitLimitedQueue
	events  *eventQueue
	out     chan Event
	// announce (capacity 1) asks the announcer goroutine to re-advertise the local metadata.
	announce chan struct{}
	numAlive atomic.Int32 // alive members, for the broadcast queue's retransmit count
	left     atomic.Bool  // Leave was called: memberlist ignores our alive messages from now on
	joining  atomic.Bool  // Start is inside memberlist.Join: push/pull merges come from seeds
	ml       atomic.Pointer[memberlist.Memberlist]
	addr     atomic.Pointer[string] // this node's gossip address, set by Start
	// updateNode announces the local metadata (memberlist's UpdateNode, set by Start unless a
	// test set it before).
	updateNode func(timeout time.Duration) error

	ctx    context.Context // cancelled by Shutdown; ends the goroutines
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// lifeMu serialises Start, Leave and Shutdown; memberlist panics on Leave after Shutdown.
	lifeMu  sync.Mutex
	started bool
	closed  bool

	// mu guards the fields below. It is held only briefly and never while calling into
	// memberlist, except TransmitLimitedQueue.QueueBroadcast, which takes only its own lock
	// and calls chunkBroadcast.Invalidates, which takes none.
	mu          sync.Mutex
	meta        NodeMeta // local; TokensVersion mirrors tokens.local().version
	metaVersion uint64   // the version of the local metadata claim
	metaEnc     []byte   // the signed claim of meta, handed to memberlist by NodeMeta
	tokens      *tokenTable
	members     map[string]*memberEntry
	proofs      map[string]*proof   // identity verdicts by member name (Config.Verify)
	held        map[string][][]byte // claims waiting for their member's proof (claims.go)
	rejected    map[string]uint64   // claims rejected, by reason
	stopping    bool                // Shutdown is waiting for the goroutines: start no more

	proofSem chan struct{} // bounds the proofs running at once

	refusedMu sync.Mutex
	refused   map[string]string // what Ring last logged, by kind, for logRefused
}

// New validates cfg and prepares a Gossip; nothing touches the network until Start.
func New(cfg Config) (*Gossip, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Seeds = slices.Clone(cfg.Seeds)
	extra := make([][]byte, len(cfg.ExtraKeys))
	for i, k := range cfg.ExtraKeys {
		extra[i] = slices.Clone(k)
	}
	kr, err := memberlist.NewKeyring(extra, slices.Clone(cfg.ClusterKey))
	if err != nil {
		return nil, fmt.Errorf("%w: ClusterKey: %v", ErrInvalidConfig, err)
	}
	cfg.ClusterKey, cfg.ExtraKeys = nil, nil // the keyring holds them from now on
	meta := cfg.Meta
	meta.TokensVersion = 0
	g := &Gossip{
		cfg:      cfg,
		log:      cfg.Log.With().Str("component", "gossip").Str("node", cfg.Name).Logger(),
		keyring:  kr,
		events:   newEventQueue(),
		out:      make(chan Event, cfg.EventBuffer),
		announce: make(chan struct{}, 1),
		meta:     meta,
		tokens:   newTokenTable(cfg.Name),
		members:  make(map[string]*memberEntry),
		proofs:   make(map[string]*proof),
		proofSem: make(chan struct{}, maxProofs),
	}
	// Token chunks get twice memberlist's retransmissions: a set is usable only once all its
	// chunks have arrived, so each chunk must miss fewer nodes than a single message may.
	retransmit := 2 * memberlist.DefaultLANConfig().RetransmitMult
	if cfg.loopback {
		retransmit = 2 * memberlist.DefaultLocalConfig().RetransmitMult
	}
	g.bcast = &memberlist.TransmitLimitedQueue{
		// An atomic, not memberlist.NumMembers: GetBroadcasts runs inside memberlist's
		// gossip and probe paths, and must not take locks that those paths may hold.
		NumNodes:       func() int { return max(int(g.numAlive.Load()), 1) },
		RetransmitMult: retransmit,
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.sealMetaLocked()
	return g, nil
}

// sealMetaLocked signs the local metadata under a new version, above the last one and this
// node's clock. g.mu must be held (or g not yet shared).
func (g *Gossip) sealMetaLocked() {
	g.metaVersion = max(g.metaVersion+1, uint64(time.Now().UnixNano()))
	g.metaEnc = g.signLocked(metaClaim(g.cfg.Name, g.meta, g.metaVersion))
}

// Start creates the memberlist, listening on BindAddr, and joins the seeds. It retries, with
// a doubling wait from JoinRetry, until one seed answers or ctx ends; ctx bounds only the
// start-up, not the life of the Gossip. With no seeds besides itself the node forms a
// cluster alone. On failure (ErrJoin when no seed answered) the Gossip is shut down.
func (g *Gossip) Start(ctx context.Context) error {
	g.lifeMu.Lock()
	switch {
	case g.closed:
		g.lifeMu.Unlock()
		return ErrClosed
	case g.started:
		g.lifeMu.Unlock()
		return ErrStarted
	}
	g.started = true
	mc := g.cfg.memberlistConfig(g.keyring)
	mc.Delegate = (*delegate)(g)
	mc.Events = (*eventDelegate)(g)
	mc.Alive = (*aliveDelegate)(g)
	mc.Logger = log.New(logWriter{g.log}, "", 0)
	ml, err := memberlist.Create(mc)
	if err != nil {
		g.lifeMu.Unlock()
		g.Shutdown()
		return fmt.Errorf("gossip: create memberlist: %w", err)
	}
	// memberlist's LocalNode hands out a pointer that its own goroutines write under a lock
	// the caller cannot take; read it once, before anything can re-advertise this node.
	self := ml.LocalNode().Address()
	g.addr.Store(&self)
	g.ml.Store(ml)
	if g.updateNode == nil {
		g.updateNode = ml.UpdateNode
	}
	g.wg.Add(2)
	go g.drain()
	go g.announcer()
	g.lifeMu.Unlock()

	var seeds []string
	for _, s := range g.cfg.Seeds {
		if s != self && s != g.cfg.BindAddr && s != g.cfg.AdvertiseAddr {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		g.log.Info().Str("addr", self).Msg("formed a new cluster")
		return nil
	}
	wait := g.cfg.JoinRetry
	for {
		g.joining.Store(true)
		n, err := ml.Join(seeds)
		g.joining.Store(false)
		if n > 0 {
			g.log.Info().Str("addr", self).Int("seeds", n).Msg("joined cluster")
			return nil
		}
		g.log.Warn().Err(err).Dur("retry_in", wait).Msg("join failed")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			g.Shutdown()
			return fmt.Errorf("%w %v: %w (last attempt: %v)", ErrJoin, seeds, ctx.Err(), err)
		case <-g.ctx.Done():
			t.Stop()
			return ErrClosed
		case <-t.C:
		}
		wait = min(2*wait, maxJoinRetry)
	}
}

// Addr returns the gossip address peers reach this node at (host:port, with the actual port
// when BindAddr had port 0), or "" before Start.
func (g *Gossip) Addr() string {
	if a := g.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// Leave announces that this node leaves the cluster and waits up to timeout (0: no limit)
// for the announcement to go out. Peers report it as Leave instead of Dead. The node keeps
// answering gossip until Shutdown, which the caller still must call.
//
// memberlist tells peers about a departure exactly as about a failure, so Leave first
// broadcasts a leave intent (as Serf does) and waits until it has been sent its full number
// of times, then has memberlist announce the departure.
func (g *Gossip) Leave(timeout time.Duration) error {
	g.lifeMu.Lock()
	defer g.lifeMu.Unlock()
	ml := g.ml.Load()
	switch {
	case g.closed:
		return ErrClosed
	case ml == nil:
		return ErrNotStarted
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	start := time.Now()
	g.left.Store(true)
	if ml.NumMembers() > 1 {
		g.mu.Lock()
		msg := g.signLocked(leaveClaim(g.cfg.Name, g.metaVersion))
		g.mu.Unlock()
		b := &leaveBroadcast{name: g.cfg.Name, msg: msg, sent: make(chan struct{})}
		g.bcast.QueueBroadcast(b)
		select {
		case <-b.sent:
		case <-deadline:
			return fmt.Errorf("gossip: leave: timeout waiting for the leave intent to be sent")
		}
	}
	if timeout > 0 {
		timeout = max(timeout-time.Since(start), time.Millisecond)
	}
	if err := ml.Leave(timeout); err != nil {
		return fmt.Errorf("gossip: leave: %w", err)
	}
	return nil
}

// Shutdown stops gossip without announcing a departure (peers will detect the node as Dead
// unless Leave came first), stops Gossip's goroutines and closes the Events channel; events
// still queued are discarded. It is idempotent.
func (g *Gossip) Shutdown() error {
	g.lifeMu.Lock()
	defer g.lifeMu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	// No proof may start once Wait has begun: they start under g.mu and check stopping.
	g.mu.Lock()
	g.stopping = true
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
	var err error
	if ml := g.ml.Load(); ml != nil {
		err = ml.Shutdown()
	}
	close(g.out)
	return err
}

// Events returns the channel of membership events. It is never closed before Shutdown and
// always closed by it. Memberlist never waits for the reader: see eventQueue for how a slow
// reader is handled (Join, Leave and Dead are never lost; Updates are coalesced).
func (g *Gossip) Events() <-chan Event { return g.out }

// CoalescedUpdates returns how many Update events were merged into a newer Update for the
// same member because the reader had not taken them yet.
func (g *Gossip) CoalescedUpdates() uint64 {
	_, n := g.events.stats()
	return n
}

// drain moves events from the queue to the Events channel until Shutdown.
func (g *Gossip) drain() {
	defer g.wg.Done()
	for {
		ev, ok := g.events.pop()
		if !ok {
			select {
			case <-g.events.wake:
				continue
			case <-g.ctx.Done():
				return
			}
		}
		select {
		case g.out <- ev:
		case <-g.ctx.Done():
			return
		}
	}
}

// announcer re-advertises the local metadata when asked. memberlist's UpdateNode blocks until
// the update has been broadcast, so it cannot run in a delegate callback or under g.mu.
//
// An update that is not confirmed is announced again until one is. memberlist (v0.7.0) takes
// the update's incarnation before it locks its node map; a refutation of a suspicion of this
// node that runs in between takes the next incarnation and re-announces the metadata memberlist
// held, and memberlist then drops the update as older than its own state, for good: peers
// would keep the old metadata (a stale TokensVersion: a ring pending forever) until the next
// change. The dropped update is never broadcast, so UpdateNode times out and says so.
func (g *Gossip) announcer() {
	defer g.wg.Done()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.announce:
		}
		if g.ctx.Err() != nil {
			return
		}
		if g.left.Load() {
			// memberlist drops our alive messages after Leave, so UpdateNode would
			// only wait out its timeout.
			continue
		}
		if err := g.updateNode(updateTimeout); err != nil {
			g.log.Warn().Err(err).Msg("metadata update not confirmed; announcing it again")
			g.kick()
		}
	}
}

// kick asks the announcer to re-advertise; requests made while one is pending merge.
func (g *Gossip) kick() {
	select {
	case g.announce <- struct{}{}:
	default:
	}
}

// SetMeta replaces the local metadata and announces it. m.TokensVersion is ignored (Gossip
// owns it). It fails with ErrMetaTooLarge or ErrInvalidMeta and then changes nothing. Before
// Start it only sets what Start will announce.
func (g *Gossip) SetMeta(m NodeMeta) error {
	g.mu.Lock()
	m.TokensVersion = g.meta.TokensVersion
	if _, err := encodeLocalMeta(g.cfg.Name, m); err != nil {
		g.mu.Unlock()
		return err
	}
	g.meta = m
	g.sealMetaLocked()
	g.mu.Unlock()
	g.kick()
	return nil
}

// SetTokens replaces the local token set (copied; order does not matter) and announces it
// under a new, higher TokensVersion: in the metadata, in token broadcasts, and in every later
// push/pull exchange. It fails with ErrInvalidTokens on duplicates or more than 65536 tokens.
// Before Start it only sets what Start will announce.
func (g *Gossip) SetTokens(tokens []int64) error {
	if len(tokens) > MaxTokensPerNode {
		return fmt.Errorf("%w: %d tokens exceed the plausibility cap of %d", ErrInvalidTokens, len(tokens), MaxTokensPerNode)
	}
	ts, err := normalizeTokens(tokens)
	if err != nil {
		return err
	}
	g.mu.Lock()
	s := g.tokens.nextLocal(ts, uint64(time.Now().UnixNano()))
	g.localTokensChangedLocked(s)
	g.mu.Unlock()
	g.kick()
	return nil
}

// localTokensChangedLocked signs and installs a new local set and announces it: metadata
// version, chunk broadcasts and an Update event. g.mu must be held; the caller kicks the
// announcer afterwards.
func (g *Gossip) localTokensChangedLocked(s tokenSet) {
	s.msgs = nil
	for _, c := range chunkClaims(g.cfg.Name, s) {
		s.msgs = append(s.msgs, g.signLocked(c))
	}
	g.tokens.setLocal(s)
	g.meta.TokensVersion = s.version
	// encodeLocalMeta checked the worst-case TokensVersion when the metadata was accepted.
	g.sealMetaLocked()
	g.queueMsgsLocked(g.cfg.Name, s)
	g.notifyLocked(Update, g.cfg.Name)
}

// queueMsgsLocked queues the signed chunks of a node's set for broadcast. g.mu must be held.
func (g *Gossip) queueMsgsLocked(name string, s tokenSet) {
	for _, msg := range s.msgs {
		g.bcast.QueueBroadcast(&chunkBroadcast{name: name, version: s.version, msg: msg})
	}
}

// Tokens returns the local token set, sorted, and its version.
func (g *Gossip) Tokens() ([]int64, uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.tokens.local()
	return slices.Clone(s.tokens), s.version
}

// Members returns every node this node has heard of, itself included, sorted by name. Dead
// and departed nodes stay listed (StateDead, StateLeft) until they come back under the same
// name.
func (g *Gossip) Members() []Member {
	g.mu.Lock()
	out := make([]Member, 0, len(g.members))
	for name := range g.members {
		m, _ := g.snapshotLocked(name)
		out = append(out, m)
	}
	g.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// snapshotLocked returns a caller-owned copy of a member. g.mu must be held.
func (g *Gossip) snapshotLocked(name string) (Member, bool) {
	e, ok := g.members[name]
	if !ok {
		return Member{}, false
	}
	m := Member{Name: name, Addr: e.addr, Meta: e.meta, Liveness: e.liveness}
	if name == g.cfg.Name {
		m.Meta = g.meta // authoritative, even before memberlist has re-advertised it
	}
	if s, ok := g.tokens.get(name); ok {
		m.Tokens, m.TokensVersion = slices.Clone(s.tokens), s.version
	}
	m.Identity, m.IdentityError = g.identityLocked(name)
	return m, true
}

// notifyLocked queues an event for a known member. g.mu must be held.
func (g *Gossip) notifyLocked(kind EventKind, name string) {
	if m, ok := g.snapshotLocked(name); ok {
		g.events.push(Event{Kind: kind, Member: m})
	}
}

// Ring builds the token ring from every member whose announced state is Joining, Normal,
// Leaving or Moving, whatever its liveness (a dead node keeps its ranges, as in Cassandra).
// It fails with ErrTokensPending, naming the members, when such a member's current token set
// (Meta.TokensVersion) has not arrived yet, and with ring's errors when the announced sets
// conflict.
func (g *Gossip) Ring() (ring.Ring, error) {
	var ms []ring.Member
	var pending, unproven, refused []string
	members := g.Members()
	replaced := Replaced(members)
	for _, m := range members {
		if replaced[m.Name] != "" {
			continue
		}
		switch m.Meta.State {
		case ring.Joining, ring.Normal, ring.Leaving, ring.Moving:
		default:
			continue
		}
		if ok, wait, reason := admit(m); !ok {
			if wait {
				unproven = append(unproven, m.Name)
			} else {
				refused = append(refused, reason)
			}
			continue
		}
		if m.Tokens == nil || m.TokensVersion < m.Meta.TokensVersion {
			pending = append(pending, m.Name)
			continue
		}
		ts := make([]token.Token, len(m.Tokens))
		for i, v := range m.Tokens {
			ts[i] = token.Token{Kind: token.KindMurmur3, Long: v}
		}
		ms = append(ms, ring.Member{Node: ring.Node{Name: m.Name, DC: m.Meta.DC, Rack: m.Meta.Rack}, State: m.Meta.State, Tokens: ts})
	}
	g.logRefused("members left out of the ring", refused)
	if len(unproven) > 0 {
		return ring.Ring{}, fmt.Errorf("%w: %s", ErrIdentityPending, strings.Join(unproven, ", "))
	}
	if len(pending) > 0 {
		return ring.Ring{}, fmt.Errorf("%w: %s", ErrTokensPending, strings.Join(pending, ", "))
	}
	r, err := ring.NewRing(ms...)
	if errors.Is(err, ring.ErrTokenConflict) {
		// Two proven members claim a token: no plan is made until an operator resolves it.
		g.logRefused("token conflict: no stream plan until it is resolved", []string{err.Error()})
	}
	return r, err
}

// Replaced maps each member another member has replaced to its replacement: a proven member
// that announces Replaces and owns tokens (NORMAL, LEAVING or MOVING) has taken them over, so
// the replaced one is no longer part of the ring, even if it comes back.
func Replaced(members []Member) map[string]string {
	out := map[string]string{}
	for _, m := range members {
		if ok, _, _ := admit(m); !ok {
			continue
		}
		switch m.Meta.State {
		case ring.Normal, ring.Leaving, ring.Moving:
			if m.Meta.Replaces != "" && m.Meta.Replaces != m.Name {
				out[m.Meta.Replaces] = m.Name
			}
		}
	}
	return out
}

// AddKey installs a further decryption key (16, 24 or 32 bytes) for rotation.
func (g *Gossip) AddKey(key []byte) error {
	if err := g.keyring.AddKey(slices.Clone(key)); err != nil {
		return fmt.Errorf("gossip: add key: %w", err)
	}
	return nil
}

// UseKey makes an installed key the primary one, which encrypts everything this node sends.
// Every peer must have installed it first.
func (g *Gossip) UseKey(key []byte) error {
	if err := g.keyring.UseKey(slices.Clone(key)); err != nil {
		return fmt.Errorf("gossip: use key: %w", err)
	}
	return nil
}

// RemoveKey uninstalls a key that is not the primary one.
func (g *Gossip) RemoveKey(key []byte) error {
	if err := g.keyring.RemoveKey(key); err != nil {
		return fmt.Errorf("gossip: remove key: %w", err)
	}
	return nil
}
