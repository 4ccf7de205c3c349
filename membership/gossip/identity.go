package gossip

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicedb/sluice/membership/gossip/claim"
)

// MaxTokensPerNode is the plausibility cap on one member's token set: Cassandra's largest
// usual num_tokens is 256, and a set beyond this is refused (the member stays out of the
// ring and the refusal is logged), so that one member cannot claim the ring by numbers.
const MaxTokensPerNode = 1536

// ErrIdentityPending reports members whose identity is still being proven; the ring is not
// settled until each has a verdict.
var ErrIdentityPending = errors.New("gossip: member identities not yet proven")

// Identity is what this node knows of a member's identity (Config.Verify).
type Identity uint8

const (
	// IdentityPending: no verdict yet. Without Config.Verify every member is IdentityProven.
	IdentityPending Identity = iota
	// IdentityProven: the member proved its name with the cluster CA at its stream address.
	IdentityProven
	// IdentityRefused: the proof failed; its state and tokens do not count. It is retried.
	IdentityRefused
)

func (i Identity) String() string {
	switch i {
	case IdentityProven:
		return "proven"
	case IdentityRefused:
		return "refused"
	}
	return "pending"
}

// Verifier proves that member m (its Name, gossip Addr and Meta are set) is who it says and
// returns the public key of the certificate it proved with: for sluice, a mutual-TLS
// handshake with its advertised stream address whose certificate chains to the cluster CA,
// names m.Name and carries the node role. Every claim in m's name must verify under that key.
// It is called without locks held, at most maxProofs at a time, and must respect ctx.
type Verifier func(ctx context.Context, m Member) (crypto.PublicKey, error)

const (
	maxProofs      = 4
	proofTimeout   = 10 * time.Second
	proofRetryMin  = 2 * time.Second
	proofRetryMax  = time.Minute
	proofLogPrefix = "member identity"
)

// proof is one member's identity verdict, for the stream address it was proven at.
type proof struct {
	addr    string
	state   Identity
	err     string
	running bool
	retry   time.Duration
	key     crypto.PublicKey // what the member proved with; its claims verify under it

	reproving  bool      // a proof under a new key is running (reproveLocked)
	reprovedAt time.Time // when the last one started
}

// identityLocked is name's verdict as Member.Identity reports it.
func (g *Gossip) identityLocked(name string) (Identity, string) {
	if g.cfg.Verify == nil || name == g.cfg.Name {
		return IdentityProven, ""
	}
	p := g.proofs[name]
	if p == nil {
		return IdentityPending, ""
	}
	return p.state, p.err
}

// proveLocked starts proving name's identity when there is no verdict for its current stream
// address (a member that moves its address proves itself again).
func (g *Gossip) proveLocked(name, addr string, meta NodeMeta) {
	if g.cfg.Verify == nil || name == g.cfg.Name {
		return
	}
	p := g.proofs[name]
	if p != nil && p.addr == meta.StreamAddr {
		return
	}
	p = &proof{addr: meta.StreamAddr}
	g.proofs[name] = p
	g.startProofLocked(name, p, addr, meta)
}

func (g *Gossip) startProofLocked(name string, p *proof, addr string, meta NodeMeta) {
	if p.running || g.stopping {
		return
	}
	p.running = true
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		select {
		case g.proofSem <- struct{}{}:
		case <-g.ctx.Done():
			return
		}
		var err error
		var key crypto.PublicKey
		if meta.StreamAddr == "" {
			err = errors.New("no stream address announced")
		} else {
			ctx, cancel := context.WithTimeout(g.ctx, proofTimeout)
			key, err = g.cfg.Verify(ctx, Member{Name: name, Addr: addr, Meta: meta})
			cancel()
		}
		<-g.proofSem
		if g.ctx.Err() != nil {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		p.running = false
		if g.proofs[name] != p {
			return // the member moved on to another address meanwhile
		}
		if err == nil {
			// The metadata that named this stream address must be the member's own claim.
			err = g.metaSignedLocked(name, key)
		}
		if err == nil {
			p.state, p.err, p.retry, p.key = IdentityProven, "", 0, key
			g.log.Info().Str("member", name).Str("stream_addr", meta.StreamAddr).Msg(proofLogPrefix + " proven")
			g.releaseLocked(name)
			g.notifyLocked(Update, name)
			return
		}
		p.state, p.err = IdentityRefused, err.Error()
		g.releaseLocked(name)
		p.retry = min(max(2*p.retry, proofRetryMin), proofRetryMax)
		g.log.Error().Str("member", name).Str("stream_addr", meta.StreamAddr).Err(err).Dur("retry_in", p.retry).
			Msg(proofLogPrefix + " not proven: its state and tokens do not count")
		time.AfterFunc(p.retry, func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			e := g.members[name]
			if g.ctx.Err() == nil && g.proofs[name] == p && e != nil && e.liveness == StateAlive {
				g.startProofLocked(name, p, e.addr, e.meta)
			}
		})
	}()
}

// metaSignedLocked checks that the metadata recorded for name is its claim under key.
func (g *Gossip) metaSignedLocked(name string, key crypto.PublicKey) error {
	e := g.members[name]
	if e == nil {
		return errors.New("not a member")
	}
	c, _, err := decodeMetaClaim(e.metaRaw)
	if err == nil {
		err = claim.Verify(key, g.cfg.Label, c)
	}
	if err != nil {
		return fmt.Errorf("its metadata is not signed by the certificate it proved: %w", err)
	}
	return nil
}

// admit says whether member m counts in the ring: its identity proven and its token set
// plausible. The reason is for the ring's error and the log.
func admit(m Member) (ok bool, pending bool, reason string) {
	switch {
	case m.Identity == IdentityPending && m.Liveness != StateAlive:
		return false, false, fmt.Sprintf("%s: %s before its identity was proven", m.Name, m.Liveness)
	case m.Identity == IdentityPending:
		return false, true, fmt.Sprintf("%s: identity not proven yet", m.Name)
	case m.Identity == IdentityRefused:
		return false, false, fmt.Sprintf("%s: identity refused (%s)", m.Name, m.IdentityError)
	}
	if len(m.Tokens) > MaxTokensPerNode {
		return false, false, fmt.Sprintf("%s: %d tokens exceed the plausibility cap of %d", m.Name, len(m.Tokens), MaxTokensPerNode)
	}
	return true, false, ""
}

// logRefused logs the members Ring leaves out (or the token conflict that fails it), each
// time that set changes (Ring is called often; the same refusal is not repeated every time).
func (g *Gossip) logRefused(what string, reasons []string) {
	key := strings.Join(reasons, "\n")
	g.refusedMu.Lock()
	if g.refused == nil {
		g.refused = map[string]string{}
	}
	changed := key != g.refused[what]
	g.refused[what] = key
	g.refusedMu.Unlock()
	if changed && len(reasons) > 0 {
		g.log.Error().Strs("reasons", reasons).Msg(what)
	}
}
