package gossip

import (
	"bytes"
	"strings"
	"sync"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"
)

// delegate and eventDelegate are Gossip seen through memberlist's callback interfaces; they
// are separate types so that Gossip's own method set stays the public API.
//
// memberlist calls them from its packet, stream and timer goroutines, concurrently. Every
// method takes g.mu only briefly, never blocks (events go to the unbounded eventQueue,
// re-announcements to the announcer goroutine), never calls back into memberlist except
// TransmitLimitedQueue.QueueBroadcast, and copies any slice it keeps: memberlist may reuse
// its buffers after a callback returns.
type (
	delegate      Gossip
	eventDelegate Gossip
	aliveDelegate Gossip
)

var (
	_ memberlist.Delegate      = (*delegate)(nil)
	_ memberlist.EventDelegate = (*eventDelegate)(nil)
	_ memberlist.AliveDelegate = (*aliveDelegate)(nil)
	_ memberlist.Broadcast     = (*chunkBroadcast)(nil)
	_ memberlist.Broadcast     = (*leaveBroadcast)(nil)
)

// NodeMeta returns the encoded local metadata; encodeLocalMeta keeps it within limit.
func (d *delegate) NodeMeta(limit int) []byte {
	g := (*Gossip)(d)
	g.mu.Lock()
	defer g.mu.Unlock()
	return bytes.Clone(g.metaEnc)
}

// NotifyMsg receives claims broadcast by peers (token chunks, leave intents); claims.go
// decides what they may do.
func (d *delegate) NotifyMsg(b []byte) {
	g := (*Gossip)(d)
	if len(b) == 0 {
		return
	}
	switch b[0] {
	case msgTokenChunk, msgLeave:
		g.mu.Lock()
		defer g.mu.Unlock()
		g.receiveLocked(bytes.Clone(b), false)
	default:
		g.log.Debug().Uint8("type", b[0]).Msg("ignoring unknown message type")
	}
}

// refuteLocked re-announces the local set above a version this node itself signed in an
// earlier life (claims in its name it did not sign never get here).
func (g *Gossip) refuteLocked(seen uint64) {
	s, ok := g.tokens.bumped(seen)
	if !ok {
		g.log.Error().Uint64("seen", seen).Msg("a claim of this node's tokens is at the top of the version range; not outbidding it")
		return
	}
	g.log.Warn().Uint64("seen", seen).Uint64("version", s.version).Msg("peer holds a newer token version for this node; re-announcing")
	g.localTokensChangedLocked(s)
	g.kick()
}

// GetBroadcasts hands queued token chunks to memberlist's gossip rounds.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.bcast.GetBroadcasts(overhead, limit)
}

// LocalState returns the signed chunks of every token set this node knows, for a push/pull
// exchange.
func (d *delegate) LocalState(join bool) []byte {
	g := (*Gossip)(d)
	g.mu.Lock()
	defer g.mu.Unlock()
	return appendState(nil, g.tokens.messages())
}

// MergeRemoteState takes every chunk of a peer's push/pull state as if it had been broadcast,
// and broadcasts the sets it adopted: a seed that learns a joiner's set this way passes it on.
// A joiner adopting the seed's sets does not, since every other member already has them.
func (d *delegate) MergeRemoteState(buf []byte, join bool) {
	g := (*Gossip)(d)
	msgs, err := decodeState(buf) // copies
	if err != nil {
		g.log.Warn().Err(err).Msg("dropping token state from push/pull")
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	fromJoin := join && g.joining.Load()
	for _, m := range msgs {
		g.receiveLocked(m, fromJoin)
	}
}

// NotifyAlive lets memberlist apply an alive message only when its metadata is a claim the
// member signed (claims.go, checkMeta): a forged alive message changes nothing, not even the
// member's gossip address.
func (d *aliveDelegate) NotifyAlive(n *memberlist.Node) error {
	return (*Gossip)(d).checkMeta(n.Name, n.Meta)
}

// NotifyJoin records a node that became alive. memberlist calls the event methods one at a
// time; n must not be modified or retained.
func (d *eventDelegate) NotifyJoin(n *memberlist.Node) {
	d.record(n, StateAlive, Join)
}

// NotifyLeave records a node that left or died. n.State cannot tell which (memberlist never
// updates it), so a leave intent received earlier decides.
func (d *eventDelegate) NotifyLeave(n *memberlist.Node) {
	g := (*Gossip)(d)
	g.mu.Lock()
	e := g.members[n.Name]
	leaving := e != nil && e.leaving
	g.mu.Unlock()
	if leaving {
		d.record(n, StateLeft, Leave)
	} else {
		d.record(n, StateDead, Dead)
	}
}

// NotifyUpdate records a node whose metadata changed.
func (d *eventDelegate) NotifyUpdate(n *memberlist.Node) {
	d.record(n, StateAlive, Update)
}

func (d *eventDelegate) record(n *memberlist.Node, l Liveness, kind EventKind) {
	g := (*Gossip)(d)
	c, meta, err := decodeMetaClaim(n.Meta) // copies
	if err != nil {
		g.log.Warn().Err(err).Str("member", n.Name).Msg("undecodable metadata; treating it as empty")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.members[n.Name]
	if !ok {
		e = &memberEntry{}
		g.members[n.Name] = e
	}
	if (e.liveness == StateAlive) != (l == StateAlive) {
		if l == StateAlive {
			g.numAlive.Add(1)
		} else if ok {
			g.numAlive.Add(-1)
		}
	}
	newLife := kind == Join || (ok && e.liveness != StateAlive && l == StateAlive)
	e.addr, e.meta, e.liveness = n.Address(), meta, l
	e.metaRaw, e.metaVersion = bytes.Clone(n.Meta), c.Version
	if newLife {
		// Whoever holds the gossip key may take a name its owner left: a new life proves
		// itself again, whatever address it announces.
		delete(g.proofs, n.Name)
	}
	if l == StateAlive {
		g.proveLocked(n.Name, n.Address(), meta)
	}
	if kind != Update {
		e.leaving = false // a new life, or the intent has been used
	}
	g.notifyLocked(kind, n.Name)
}

// chunkBroadcast is one queued token chunk. A chunk of a newer version of a node's set
// invalidates the queued chunks of older versions of the same node's set.
type chunkBroadcast struct {
	name    string
	version uint64
	msg     []byte
}

func (b *chunkBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(*chunkBroadcast)
	return ok && o.name == b.name && o.version < b.version
}

func (b *chunkBroadcast) Message() []byte { return b.msg }
func (b *chunkBroadcast) Finished()       {}

// leaveBroadcast is a queued leave intent. sent, when not nil, is closed once the intent has
// been transmitted its full number of times (or replaced by another intent for the node).
type leaveBroadcast struct {
	name string
	msg  []byte
	sent chan struct{}
	once sync.Once
}

func (b *leaveBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(*leaveBroadcast)
	return ok && o.name == b.name
}

func (b *leaveBroadcast) Message() []byte { return b.msg }

func (b *leaveBroadcast) Finished() {
	if b.sent != nil {
		b.once.Do(func() { close(b.sent) })
	}
}

// logWriter feeds memberlist's standard-library log lines ("[LEVEL] memberlist: ...") to
// zerolog at the matching level.
type logWriter struct{ l zerolog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	msg := strings.TrimRight(string(p), "\n")
	lvl := zerolog.InfoLevel
	for _, x := range []struct {
		prefix string
		level  zerolog.Level
	}{
		{"[DEBUG] ", zerolog.DebugLevel}, {"[INFO] ", zerolog.InfoLevel},
		{"[WARN] ", zerolog.WarnLevel}, {"[ERR] ", zerolog.ErrorLevel}, {"[ERROR] ", zerolog.ErrorLevel},
	} {
		if rest, ok := strings.CutPrefix(msg, x.prefix); ok {
			msg, lvl = rest, x.level
			break
		}
	}
	w.l.WithLevel(lvl).Msg(msg)
	return len(p), nil
}
