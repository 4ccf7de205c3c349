package gossip

import (
	"encoding/binary"
	"fmt"

	"github.com/hashicorp/memberlist"

	"github.com/sluicedb/sluice/membership/gossip/claim"
	"github.com/sluicedb/sluice/membership/ring"
)

// NodeMeta is what a node announces about itself in memberlist's node metadata, which rides on
// every alive message and is limited to memberlist.MetaMaxSize (512) bytes. Token sets are too
// large for it and travel separately (see Gossip.SetTokens); TokensVersion names the set the
// node currently holds so that peers can tell whether their copy is current.
type NodeMeta struct {
	StreamAddr string         // host:port of the sstable streaming listener
	AdminAddr  string         // host:port of the admin/HTTP listener
	DC         string         // data centre, for NetworkTopologyStrategy
	Rack       string         // rack within DC
	State      ring.NodeState // life-cycle state; zero means "not announced yet"
	// TokensVersion is the version of the node's token set. Gossip owns it for the local node:
	// SetTokens bumps it, and SetMeta ignores the value passed in.
	TokensVersion uint64
	// Replaces names the dead member whose tokens this node took over (Cassandra's
	// replace_address); once this node owns them, Ring leaves the replaced member out.
	Replaces string
	// CassandraHostID is the host id of the Cassandra node this node is the sidecar of
	// (the cassandra section); "" for a node with its own ring.
	CassandraHostID string
}

// metaFormat is the first byte of an encoded NodeMeta. Fields are only ever appended to the
// encoding, and a decoder ignores bytes after the fields it knows, so an older node reads a
// newer node's metadata; a different first byte means an incompatible layout.
const metaFormat = 1

// appendMeta appends the encoding of m to b:
//
//	format:u8 state:u8 tokensVersion:uvarint
//	streamAddr adminAddr dc rack replaces cassandraHostID, each uvarint length + bytes
//
// replaces and cassandraHostID came later and are written only when needed (replaces when
// either is set, cassandraHostID when set): metadata ending early has them "", and older
// decoders ignore them.
//
// It fails when a field is invalid or the result would exceed memberlist.MetaMaxSize; the
// metadata is never truncated.
func appendMeta(b []byte, m NodeMeta) ([]byte, error) {
	if m.State > ring.Left {
		return b, fmt.Errorf("%w: state %v", ErrInvalidMeta, m.State)
	}
	start := len(b)
	b = append(b, metaFormat, byte(m.State))
	b = binary.AppendUvarint(b, m.TokensVersion)
	fields := []string{m.StreamAddr, m.AdminAddr, m.DC, m.Rack}
	if m.Replaces != "" || m.CassandraHostID != "" {
		fields = append(fields, m.Replaces)
	}
	if m.CassandraHostID != "" {
		fields = append(fields, m.CassandraHostID)
	}
	for _, s := range fields {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if n := len(b) - start; n > memberlist.MetaMaxSize {
		return b[:start], fmt.Errorf("%w: %d bytes, limit %d", ErrMetaTooLarge, n, memberlist.MetaMaxSize)
	}
	return b, nil
}

// metaClaim is node name's metadata m as an unsigned claim at version v; encodeLocalMeta
// has checked that its signed envelope fits memberlist.MetaMaxSize.
func metaClaim(name string, m NodeMeta, v uint64) claim.Claim {
	p, _ := appendMeta(nil, m)
	return claim.Claim{Kind: claim.KindMeta, Name: name, Version: v, Payload: p}
}

// decodeMetaClaim parses memberlist node metadata: a claim of kind KindMeta whose payload is
// a NodeMeta. The signature is not checked here.
func decodeMetaClaim(b []byte) (claim.Claim, NodeMeta, error) {
	c, err := claim.Decode(b)
	if err != nil {
		return claim.Claim{}, NodeMeta{}, fmt.Errorf("node metadata: %w", err)
	}
	if c.Kind != claim.KindMeta {
		return claim.Claim{}, NodeMeta{}, fmt.Errorf("%w: node metadata of claim kind %d", ErrMalformed, c.Kind)
	}
	m, err := decodeMeta(c.Payload)
	if err != nil {
		return claim.Claim{}, NodeMeta{}, err
	}
	return c, m, nil
}

// decodeMeta parses an encoded NodeMeta. Errors wrap ErrMalformed and carry the byte offset.
func decodeMeta(b []byte) (NodeMeta, error) {
	d := decoder{b: b}
	if f := d.u8(); d.err == nil && f != metaFormat {
		return NodeMeta{}, fmt.Errorf("%w: node metadata format %d at offset 0", ErrMalformed, f)
	}
	var m NodeMeta
	st := d.u8()
	if d.err == nil && st > uint8(ring.Left) {
		d.failf("node state %d", st)
	}
	m.State = ring.NodeState(st)
	m.TokensVersion = d.uvarint()
	m.StreamAddr = d.str()
	m.AdminAddr = d.str()
	m.DC = d.str()
	m.Rack = d.str()
	if d.err == nil && d.remaining() > 0 {
		// Read on a copy: bytes a newer node appends in another layout stay ignored.
		rd := d
		if r := rd.str(); rd.err == nil {
			m.Replaces = r
			if rd.remaining() > 0 {
				if h := rd.str(); rd.err == nil {
					m.CassandraHostID = h
				}
			}
		}
	}
	if d.err != nil {
		return NodeMeta{}, fmt.Errorf("node metadata: %w", d.err)
	}
	return m, nil
}
