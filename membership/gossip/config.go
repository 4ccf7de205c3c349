package gossip

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/membership/gossip/claim"
)

// Config configures a Gossip. The zero value of every optional field means its default, given
// in the field's comment; Name, ClusterKey and Label are required. A Config is copied by New
// and never retained by reference (key slices are copied too).
type Config struct {
	// Name identifies the node in the cluster; it must be unique and at most 128 bytes.
	// Required: there is deliberately no hostname default, since two nodes on one host
	// would otherwise collide.
	Name string
	// BindAddr is the host:port that gossip listens on, UDP and TCP. Port 0 picks a free
	// port (for tests); Gossip.Addr reports it. Default "0.0.0.0:7946".
	BindAddr string
	// AdvertiseAddr is the host:port peers should use to reach this node, when it differs
	// from BindAddr (NAT, or a wildcard BindAddr). Default: derived from BindAddr.
	AdvertiseAddr string
	// Seeds are host:port addresses of existing members. Start joins at least one of them;
	// the node's own address is skipped, and a node without other seeds forms a cluster alone.
	Seeds []string
	// ClusterKey is the primary AES key (16, 24 or 32 bytes) that encrypts and authenticates
	// all gossip; a node without it cannot join or read the cluster. Required.
	ClusterKey []byte
	// ExtraKeys are further keys accepted for decryption, for key rotation: install the new
	// key everywhere (here or with AddKey), then switch with UseKey, then RemoveKey the old.
	ExtraKeys [][]byte
	// Label is the cluster label prefixed to every packet and stream; nodes with another
	// label never merge even if they share a key and a network. Required, at most 255 bytes.
	Label string
	// Meta is the node's initial metadata. Meta.TokensVersion is ignored: Gossip owns it.
	Meta NodeMeta

	// GossipInterval is the period of gossip rounds that spread broadcasts. Default 200ms.
	GossipInterval time.Duration
	// ProbeInterval is the period of failure-detection probes. Default 1s.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe waits for an ack; at most ProbeInterval. Default 500ms.
	ProbeTimeout time.Duration
	// SuspicionMult scales how long a suspect node may refute before it is declared dead:
	// SuspicionMult × max(1, log10(N)) × ProbeInterval, stretched while unconfirmed.
	// Default 4.
	SuspicionMult int
	// PushPullInterval is the period of full state exchanges (membership and all token sets)
	// with one random peer; it repairs lost broadcasts. Default 30s.
	PushPullInterval time.Duration
	// JoinRetry is the first wait between rounds of join attempts in Start; it doubles up to
	// 30s. Default 1s.
	JoinRetry time.Duration
	// EventBuffer is the capacity of the Events channel. Default 64.
	EventBuffer int
	// Log receives Gossip's and memberlist's logs. The zero Logger discards them.
	Log zerolog.Logger
	// Verify, when set, proves each member's identity before its state and tokens count in
	// Ring (see Verifier), and every claim in a member's name (tokens, metadata, leave intent)
	// must then be signed by the key it proved. Nil trusts every holder of the cluster key:
	// claims are neither signed nor checked.
	Verify Verifier
	// Signer is the private key of this node's certificate; it signs every claim this node
	// makes. Required with Verify. ECDSA or Ed25519.
	Signer crypto.Signer

	// loopback selects memberlist.DefaultLocalConfig as the base for the settings this Config
	// does not expose (TCP timeout, indirect checks, retransmits); set by ForTests.
	loopback bool
}

const (
	defaultBindAddr = "0.0.0.0:7946"
	maxJoinRetry    = 30 * time.Second
	// updateTimeout bounds how long the announcer waits for a metadata update to be sent.
	updateTimeout = 5 * time.Second
)

// ForTests returns c with the tunables set for fast failure detection on loopback: a node
// that stops answering is declared dead within about 1-3 seconds, and lost broadcasts are
// repaired by a push/pull exchange every second. It also bases the unexposed memberlist
// settings on memberlist.DefaultLocalConfig.
func (c Config) ForTests() Config {
	c.GossipInterval = 50 * time.Millisecond
	c.ProbeInterval = 200 * time.Millisecond
	c.ProbeTimeout = 100 * time.Millisecond
	c.SuspicionMult = 3
	c.PushPullInterval = time.Second
	c.JoinRetry = 100 * time.Millisecond
	c.loopback = true
	return c
}

// withDefaults returns c with its zero optional fields replaced by their defaults.
func (c Config) withDefaults() Config {
	base := memberlist.DefaultLANConfig()
	if c.loopback {
		base = memberlist.DefaultLocalConfig()
	}
	if c.BindAddr == "" {
		c.BindAddr = defaultBindAddr
	}
	setDur := func(p *time.Duration, d time.Duration) {
		if *p == 0 {
			*p = d
		}
	}
	setDur(&c.GossipInterval, base.GossipInterval)
	setDur(&c.ProbeInterval, base.ProbeInterval)
	setDur(&c.ProbeTimeout, base.ProbeTimeout)
	setDur(&c.PushPullInterval, base.PushPullInterval)
	setDur(&c.JoinRetry, time.Second)
	if c.SuspicionMult == 0 {
		c.SuspicionMult = base.SuspicionMult
	}
	if c.EventBuffer == 0 {
		c.EventBuffer = 64
	}
	return c
}

// validate checks a Config after withDefaults; the error wraps ErrInvalidConfig and names the
// offending field.
func (c Config) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Name == "":
		return bad("Name", "required (no hostname default)")
	case len(c.Name) > maxNameLen:
		return bad("Name", "%d bytes, at most %d", len(c.Name), maxNameLen)
	}
	if _, _, err := splitHostPort(c.BindAddr); err != nil {
		return bad("BindAddr", "%v", err)
	}
	if c.AdvertiseAddr != "" {
		if _, port, err := splitHostPort(c.AdvertiseAddr); err != nil {
			return bad("AdvertiseAddr", "%v", err)
		} else if port == 0 {
			return bad("AdvertiseAddr", "port 0")
		}
	}
	for i, s := range c.Seeds {
		if s == "" {
			return bad(fmt.Sprintf("Seeds[%d]", i), "empty")
		}
	}
	if len(c.ClusterKey) == 0 {
		return bad("ClusterKey", "required")
	}
	if err := memberlist.ValidateKey(c.ClusterKey); err != nil {
		return bad("ClusterKey", "%v", err)
	}
	for i, k := range c.ExtraKeys {
		if err := memberlist.ValidateKey(k); err != nil {
			return bad(fmt.Sprintf("ExtraKeys[%d]", i), "%v", err)
		}
	}
	switch {
	case c.Label == "":
		return bad("Label", "required")
	case len(c.Label) > memberlist.LabelMaxSize:
		return bad("Label", "%d bytes, at most %d", len(c.Label), memberlist.LabelMaxSize)
	}
	if _, err := encodeLocalMeta(c.Name, c.Meta); err != nil {
		return bad("Meta", "%v", err)
	}
	if c.Verify != nil {
		switch k := c.Signer; {
		case k == nil:
			return bad("Signer", "required with Verify: claims must be signed")
		default:
			switch k.Public().(type) {
			case *ecdsa.PublicKey, ed25519.PublicKey:
			default:
				return bad("Signer", "%T keys cannot sign gossip claims (ECDSA or Ed25519)", k.Public())
			}
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"GossipInterval", c.GossipInterval}, {"ProbeInterval", c.ProbeInterval},
		{"ProbeTimeout", c.ProbeTimeout}, {"PushPullInterval", c.PushPullInterval},
		{"JoinRetry", c.JoinRetry},
	} {
		if d.v < 0 {
			return bad(d.field, "negative (%v)", d.v)
		}
	}
	switch {
	case c.ProbeTimeout > c.ProbeInterval:
		return bad("ProbeTimeout", "%v exceeds ProbeInterval %v", c.ProbeTimeout, c.ProbeInterval)
	case c.SuspicionMult < 0:
		return bad("SuspicionMult", "negative (%d)", c.SuspicionMult)
	case c.EventBuffer < 0:
		return bad("EventBuffer", "negative (%d)", c.EventBuffer)
	}
	return nil
}

// encodeLocalMeta encodes m for the local node name, checking that its signed claim still fits
// MetaMaxSize with the largest TokensVersion, claim version and signature, so that a later
// version bump can never make it too large.
func encodeLocalMeta(name string, m NodeMeta) ([]byte, error) {
	worst := m
	worst.TokensVersion = math.MaxUint64
	p, err := appendMeta(nil, worst)
	if err != nil {
		return nil, err
	}
	envelope := 1 + binary.MaxVarintLen64 + len(name) + binary.MaxVarintLen64 +
		binary.MaxVarintLen64 + len(p) + binary.MaxVarintLen64 + claim.MaxSigLen
	if envelope > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("%w: %d bytes signed, limit %d", ErrMetaTooLarge, envelope, memberlist.MetaMaxSize)
	}
	return appendMeta(nil, m)
}

func splitHostPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", ps, err)
	}
	return host, int(port), nil
}

// memberlistConfig translates a validated Config. The caller fills in the delegates.
func (c Config) memberlistConfig(keyring *memberlist.Keyring) *memberlist.Config {
	mc := memberlist.DefaultLANConfig()
	if c.loopback {
		mc = memberlist.DefaultLocalConfig()
	}
	mc.Name = c.Name
	host, port, _ := splitHostPort(c.BindAddr)
	if host == "" {
		host = "0.0.0.0"
	}
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertiseAddr, mc.AdvertisePort = "", port
	if c.AdvertiseAddr != "" {
		mc.AdvertiseAddr, mc.AdvertisePort, _ = splitHostPort(c.AdvertiseAddr)
	}
	mc.Label = c.Label
	mc.Keyring = keyring
	mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	mc.GossipInterval = c.GossipInterval
	mc.ProbeInterval = c.ProbeInterval
	mc.ProbeTimeout = c.ProbeTimeout
	mc.SuspicionMult = c.SuspicionMult
	mc.PushPullInterval = c.PushPullInterval
	mc.DelegateProtocolVersion, mc.DelegateProtocolMin, mc.DelegateProtocolMax = 1, 1, 1
	return mc
}
