package gossip

import (
	"context"
	"crypto"
	"errors"
	"maps"
	"time"

	"github.com/sluicedb/sluice/membership/gossip/claim"
)

// What a node says about itself (its tokens, its metadata, its leave intent) is a claim in its
// name, signed with its certificate's key (package claim). This file decides what a received
// claim may do; the delegate only routes.
//
// With Config.Verify set, a claim counts only when it verifies under the key its member
// proved (Verifier). Until a member has proven itself, its claims wait (bounded) and are
// checked once the proof lands; a claim that fails is dropped and counted by reason
// (Gossip.Rejected), never applied. A claim in the local node's own name that it did not sign
// is dropped like any other, so a forgery can never push this node to outbid itself.
//
// Versions are wall-clock nanoseconds of the signer: a claim more than maxClockSkew ahead of
// this node's clock is refused, so no version can reach the top of its range and make the
// owner's next version wrap.

// maxClockSkew is how far ahead of this node's clock a claim's version may be.
const maxClockSkew = 10 * time.Minute

// maxHeld bounds the claims kept for one member while its proof runs: a full token set's
// chunks twice over, plus its leave intent.
const maxHeld = 2*((MaxTokensPerNode+tokensPerChunk-1)/tokensPerChunk) + 2

// maxHeldMembers bounds the members claims are held for at once, so that claims in invented
// names cannot grow the holding area without end.
const maxHeldMembers = 256

// Reasons a claim is rejected, the label of sluice_gossip_rejected_total.
const (
	RejectUnsigned     = "unsigned"      // no signature in a cluster that requires them
	RejectBadSignature = "bad_signature" // does not verify under the member's proven key
	RejectUnproven     = "unproven"      // its member is unknown or refused its proof
	RejectVersionAhead = "version_ahead" // version beyond this node's clock + maxClockSkew
	RejectStale        = "stale"         // older than what the member already said
	RejectMalformed    = "malformed"     // does not decode
)

// verdict is what checkClaimLocked decided.
type verdict uint8

const (
	verified verdict = iota // apply it
	held                    // its member has not proven a key yet: kept until it has
	rejected                // dropped; the reason is counted
)

// signLocked returns c's envelope, signed when this node signs its claims.
func (g *Gossip) signLocked(c claim.Claim) []byte {
	if g.cfg.Signer == nil {
		return c.Encode()
	}
	b, err := claim.Sign(g.cfg.Signer, g.cfg.Label, c)
	if err != nil {
		// validate checked the key type; an in-memory key does not fail to sign.
		g.log.Error().Err(err).Msg("cannot sign a gossip claim")
		return c.Encode()
	}
	return b
}

// keyLocked is the key claims in name's name must verify under: this node's own, or the one
// the member proved; nil when it has proven none.
func (g *Gossip) keyLocked(name string) crypto.PublicKey {
	if name == g.cfg.Name {
		return g.cfg.Signer.Public()
	}
	if p := g.proofs[name]; p != nil && p.state == IdentityProven {
		return p.key
	}
	return nil
}

// checkClaimLocked decides what claim c may do here.
func (g *Gossip) checkClaimLocked(c claim.Claim) (verdict, string) {
	if c.Version > uint64(time.Now().Add(maxClockSkew).UnixNano()) {
		return rejected, RejectVersionAhead
	}
	if g.cfg.Verify == nil {
		return verified, ""
	}
	key := g.keyLocked(c.Name)
	if key == nil {
		// A member not proven yet, or not even known yet (a broadcast can overtake the
		// alive message that introduces its member): its claims wait for the proof.
		if p := g.proofs[c.Name]; p != nil && p.state == IdentityRefused {
			return rejected, RejectUnproven
		}
		if _, ok := g.held[c.Name]; !ok && len(g.held) >= maxHeldMembers && !g.evictHeldLocked() {
			return rejected, RejectUnproven
		}
		return held, ""
	}
	switch err := claim.Verify(key, g.cfg.Label, c); {
	case errors.Is(err, claim.ErrUnsigned):
		return rejected, RejectUnsigned
	case err != nil:
		return rejected, RejectBadSignature
	}
	return verified, ""
}

// rejectLocked counts a rejected claim and logs it at most once per member and reason.
func (g *Gossip) rejectLocked(c claim.Claim, reason string) {
	if g.rejected == nil {
		g.rejected = map[string]uint64{}
	}
	g.rejected[reason]++
	g.log.Warn().Str("member", c.Name).Uint8("kind", c.Kind).Uint64("version", c.Version).Str("reason", reason).
		Uint64("rejected_total", g.rejected[reason]).Msg("gossip claim rejected")
}

// Rejected returns how many claims were rejected, by reason (the Reject* constants).
func (g *Gossip) Rejected() map[string]uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.rejected)
}

// holdLocked keeps a claim of a member whose proof is still running, dropping the oldest
// beyond maxHeld.
func (g *Gossip) holdLocked(name string, msg []byte) {
	if g.held == nil {
		g.held = map[string][][]byte{}
	}
	h := g.held[name]
	if len(h) >= maxHeld {
		h = h[1:]
	}
	g.held[name] = append(h, msg)
}

// evictHeldLocked makes room in a full holding area by dropping the claims held for a name
// that is not a member (invented names go first; a real member's claims come back with the
// next push/pull). It reports whether it freed a slot.
func (g *Gossip) evictHeldLocked() bool {
	for name := range g.held {
		if _, ok := g.members[name]; !ok {
			delete(g.held, name)
			return true
		}
	}
	return false
}

// releaseLocked processes the claims held for name once its proof has a verdict: verified
// ones are applied, the rest rejected.
func (g *Gossip) releaseLocked(name string) {
	msgs := g.held[name]
	delete(g.held, name)
	for _, m := range msgs {
		g.receiveLocked(m, false)
	}
}

// receiveLocked routes one claim message (a token chunk or a leave intent) from a broadcast
// or a push/pull state. fromState marks a push/pull merge made while this node joins, whose
// sets every other member already has and which are therefore not broadcast again.
func (g *Gossip) receiveLocked(msg []byte, fromState bool) {
	c, err := claim.Decode(msg)
	if err != nil {
		g.rejectLocked(claim.Claim{}, RejectMalformed)
		return
	}
	if c.Kind == msgTokenChunk && c.Name != g.cfg.Name {
		if cur, ok := g.tokens.get(c.Name); ok && c.Version <= cur.version {
			// Nothing an old chunk says can change a set: skip verifying it (every push/pull
			// brings every set again).
			return
		}
	}
	switch v, reason := g.checkClaimLocked(c); v {
	case held:
		g.holdLocked(c.Name, msg)
		return
	case rejected:
		g.rejectLocked(c, reason)
		return
	}
	switch c.Kind {
	case msgTokenChunk:
		g.chunkLocked(c, msg, fromState)
	case msgLeave:
		g.leaveLocked(c, msg)
	default:
		g.log.Debug().Uint8("type", c.Kind).Msg("ignoring unknown claim kind")
	}
}

// chunkLocked applies a verified token chunk. A chunk that brings new tokens is queued again
// for this node's own gossip rounds, so chunks spread epidemically like memberlist's own
// messages rather than only from their origin.
func (g *Gossip) chunkLocked(c claim.Claim, msg []byte, fromState bool) {
	ch, err := decodeChunk(c)
	if err != nil {
		g.rejectLocked(c, RejectMalformed)
		return
	}
	switch g.tokens.addChunk(ch, msg) {
	case installed:
		g.notifyLocked(Update, ch.name)
		if fromState {
			return
		}
		s, _ := g.tokens.get(ch.name)
		g.queueMsgsLocked(ch.name, s)
	case accepted:
		if !fromState {
			g.bcast.QueueBroadcast(&chunkBroadcast{name: ch.name, version: ch.version, msg: msg})
		}
	case refute:
		g.refuteLocked(ch.version)
	}
}

// leaveLocked applies a verified leave intent and relays it the first time it changes
// something. An intent older than the member's current metadata is from an earlier life.
func (g *Gossip) leaveLocked(c claim.Claim, msg []byte) {
	e, ok := g.members[c.Name]
	if !ok || c.Name == g.cfg.Name {
		return
	}
	if c.Version < e.metaVersion {
		g.rejectLocked(c, RejectStale)
		return
	}
	switch {
	case e.liveness == StateAlive && !e.leaving:
		e.leaving = true
	case e.liveness == StateDead:
		// The departure was noticed (or relayed) before the intent: it was a Leave after all.
		e.liveness = StateLeft
		g.notifyLocked(Leave, c.Name)
	default:
		return
	}
	g.bcast.QueueBroadcast(&leaveBroadcast{name: c.Name, msg: msg})
}

// checkMeta decides whether memberlist may apply an alive message for name carrying metadata
// b (the AliveDelegate): the metadata must be a claim in name's name, and once name has a
// proven key it must verify under it and be no older than what name said before. Metadata of
// a member not proven yet is provisional: its stream address is where the proof goes, and
// the proof is refused unless the proven key signed it.
//
// Alive messages about this node itself always pass: memberlist refutes any that differs from
// what this node announces, which is what ends a forged or stale one everywhere. Holding
// them back would leave the cluster with the stale state unrefuted (a restarted node hears
// its previous life's alive messages this way).
func (g *Gossip) checkMeta(name string, b []byte) error {
	if name == g.cfg.Name {
		return nil
	}
	c, _, err := decodeMetaClaim(b)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.rejectLocked(claim.Claim{Kind: claim.KindMeta, Name: name}, RejectMalformed)
		return err
	}
	if c.Name != name {
		g.rejectLocked(c, RejectBadSignature)
		return errors.New("metadata claims another member's name")
	}
	v, reason := g.checkClaimLocked(c)
	if v == rejected && reason == RejectUnproven {
		// A member seen for the first time, or one whose proof failed: its metadata is
		// provisional (it only says where to prove it), never a claim that counts.
		v = held
	}
	if v == rejected && reason == RejectBadSignature {
		// Maybe a new certificate (a renewed key after a restart): prove the member again
		// at the address this claim gives; its key replaces the old one only if it signed
		// this claim, and memberlist's next exchange brings the claim back.
		g.reproveLocked(name, c, b)
	}
	if v == rejected {
		g.rejectLocked(c, reason)
		return errors.New("metadata claim " + reason)
	}
	if e := g.members[name]; v == verified && g.cfg.Verify != nil && e != nil && c.Version < e.metaVersion {
		g.rejectLocked(c, RejectStale)
		return errors.New("metadata claim " + RejectStale)
	}
	return nil
}

// reproveLocked proves name again at the stream address its metadata claim c (encoded b)
// gives, leaving its current proof in force meanwhile: the new key replaces the old one only
// if that proof succeeds and the key verifies c. At most one runs per member, at most one per
// proofRetryMin, so forged metadata cannot keep this node busy proving.
func (g *Gossip) reproveLocked(name string, c claim.Claim, b []byte) {
	p := g.proofs[name]
	if p == nil || p.state != IdentityProven || p.reproving || g.stopping || time.Since(p.reprovedAt) < proofRetryMin {
		return
	}
	_, meta, err := decodeMetaClaim(b)
	if err != nil || meta.StreamAddr == "" {
		return
	}
	addr := ""
	if e := g.members[name]; e != nil {
		addr = e.addr
	}
	p.reproving, p.reprovedAt = true, time.Now()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		select {
		case g.proofSem <- struct{}{}:
		case <-g.ctx.Done():
			return
		}
		ctx, cancel := context.WithTimeout(g.ctx, proofTimeout)
		key, err := g.cfg.Verify(ctx, Member{Name: name, Addr: addr, Meta: meta})
		cancel()
		<-g.proofSem
		if err == nil {
			err = claim.Verify(key, g.cfg.Label, c)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		p.reproving = false
		if err != nil || g.proofs[name] != p {
			g.log.Warn().Str("member", name).Str("stream_addr", meta.StreamAddr).AnErr("error", err).
				Msg(proofLogPrefix + ": metadata under another key not proven; the proven key stays")
			return
		}
		p.key, p.addr = key, meta.StreamAddr
		g.log.Info().Str("member", name).Str("stream_addr", meta.StreamAddr).Msg(proofLogPrefix + " proven again with a new key")
	}()
}
