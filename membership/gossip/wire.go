package gossip

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicedb/sluice/membership/gossip/claim"
)

// Everything a node says about itself over gossip is a claim (package claim): an envelope
// naming the member, its version of the statement and a signature by that member's node
// certificate. Three kinds ride on it, distinguished by the envelope's first byte:
//
// A token chunk (a user broadcast via TransmitLimitedQueue / NotifyMsg, over UDP), payload
//
//	total:uvarint offset:uvarint n:uvarint n × int64 (big-endian, ascending)
//
// A set of total tokens is cut into chunks that each fit a gossip packet; chunk k carries
// tokens [offset, offset+n) of the sorted set, and each chunk is signed on its own, so a
// receiver never assembles a byte its owner did not sign. The claim's version is the set's.
//
// A leave intent (also a user broadcast), empty payload, version the leaving node's
// metadata version: the named node is leaving gracefully.
//
// Node metadata (memberlist's per-node meta, see meta.go), payload the NodeMeta encoding.
//
// The push/pull state (Delegate.LocalState / MergeRemoteState, over TCP) is every token
// chunk this node holds, verbatim as its owner signed it:
//
//	format:u8=2 count:uvarint count × { len:uvarint chunk envelope }
//
// Message kinds are append-only; a receiver ignores kinds it does not know.

const (
	stateFormat = 2

	msgTokenChunk = claim.KindTokenChunk
	msgLeave      = claim.KindLeave

	// maxTokens bounds a token set so that a malformed total cannot make a receiver allocate
	// without limit. Cassandra's num_tokens is at most a few hundred in practice.
	maxTokens = 1 << 16

	// maxNameLen bounds a node name so that a chunk header has a known maximum size.
	maxNameLen = claim.MaxNameLen

	// maxChunkBytes bounds an encoded chunk. memberlist packets are UDPBufferSize (1400)
	// bytes; after its compound, label (at most 2+255), encryption and user-message overheads
	// at least ~1050 remain, so an 800-byte chunk always fits in one packet.
	maxChunkBytes = 800
	// chunkHeaderMax is the largest chunk without tokens: the signed envelope and the
	// payload's three uvarints.
	chunkHeaderMax = claim.Overhead + 3*binary.MaxVarintLen64
	// tokensPerChunk is how many tokens one chunk carries.
	tokensPerChunk = (maxChunkBytes - chunkHeaderMax) / 8
)

// tokenSet is a versioned token set. tokens is sorted ascending and never modified once the
// set is stored: readers share it and copy before handing it out. msgs are its signed chunks
// in offset order, passed on verbatim in push/pull exchanges and re-broadcasts.
type tokenSet struct {
	version uint64
	tokens  []int64
	msgs    [][]byte
}

func appendInt64s(b []byte, vs []int64) []byte {
	for _, v := range vs {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// appendState appends the push/pull encoding of the signed chunks msgs to b.
func appendState(b []byte, msgs [][]byte) []byte {
	b = append(b, stateFormat)
	b = binary.AppendUvarint(b, uint64(len(msgs)))
	for _, m := range msgs {
		b = binary.AppendUvarint(b, uint64(len(m)))
		b = append(b, m...)
	}
	return b
}

// decodeState parses a push/pull state into its chunk envelopes, each at most maxChunkBytes.
// The returned messages do not alias b.
func decodeState(b []byte) ([][]byte, error) {
	d := decoder{b: b}
	if f := d.u8(); d.err == nil && f != stateFormat {
		return nil, fmt.Errorf("%w: token state format %d at offset 0", ErrMalformed, f)
	}
	// A message takes at least two bytes: its length and a kind.
	n := d.count(2)
	out := make([][]byte, 0, n)
	for range n {
		l := d.uvarint()
		if d.err == nil && (l == 0 || l > maxChunkBytes) {
			d.failf("message of %d bytes (1 to %d)", l, maxChunkBytes)
		}
		m := d.bytes(int(l))
		if d.err != nil {
			break
		}
		out = append(out, append([]byte(nil), m...))
	}
	if d.err != nil {
		return nil, fmt.Errorf("token state: %w", d.err)
	}
	return out, nil
}

// tokens reads n tokens and checks that they are strictly ascending and at most maxTokens.
func (d *decoder) tokens(n int) []int64 {
	if d.err == nil && n > maxTokens {
		d.failf("%d tokens exceed the limit of %d", n, maxTokens)
	}
	start := d.off
	ts := d.int64s(n)
	for i := 1; i < len(ts); i++ {
		if ts[i] <= ts[i-1] {
			d.off = start + 8*i
			d.failf("tokens not strictly ascending")
			return nil
		}
	}
	return ts
}

// leaveClaim is the (unsigned) leave intent of node name at metadata version v.
func leaveClaim(name string, v uint64) claim.Claim {
	return claim.Claim{Kind: msgLeave, Name: name, Version: v}
}

// chunk is one decoded token chunk.
type chunk struct {
	name    string
	version uint64
	total   int
	offset  int
	tokens  []int64
}

// chunkClaims cuts a token set into unsigned chunk claims whose signed envelopes fit
// maxChunkBytes; an empty set is one chunk with no tokens.
func chunkClaims(name string, s tokenSet) []claim.Claim {
	var out []claim.Claim
	for off := 0; off == 0 || off < len(s.tokens); off += tokensPerChunk {
		part := s.tokens[off:min(off+tokensPerChunk, len(s.tokens))]
		b := make([]byte, 0, 3*binary.MaxVarintLen64+8*len(part))
		b = binary.AppendUvarint(b, uint64(len(s.tokens)))
		b = binary.AppendUvarint(b, uint64(off))
		b = binary.AppendUvarint(b, uint64(len(part)))
		out = append(out, claim.Claim{Kind: msgTokenChunk, Name: name, Version: s.version, Payload: appendInt64s(b, part)})
	}
	return out
}

// decodeChunk parses the payload of a token chunk claim. The result does not alias c.
func decodeChunk(c claim.Claim) (chunk, error) {
	if c.Kind != msgTokenChunk {
		return chunk{}, fmt.Errorf("%w: message type %d is not a token chunk", ErrMalformed, c.Kind)
	}
	d := decoder{b: c.Payload}
	out := chunk{name: c.Name, version: c.Version}
	total, off := d.uvarint(), d.uvarint()
	if d.err == nil && (total > maxTokens || off > total) {
		d.failf("chunk at %d of %d tokens", off, total)
	}
	out.total, out.offset = int(total), int(off)
	n := d.count(8)
	if d.err == nil && n > out.total-out.offset {
		d.failf("chunk of %d tokens at %d overruns a set of %d", n, out.offset, out.total)
	}
	out.tokens = d.tokens(n)
	if d.err == nil && d.remaining() > 0 {
		d.failf("trailing bytes")
	}
	if d.err != nil {
		return chunk{}, fmt.Errorf("token chunk of %s: %w", c.Name, d.err)
	}
	return out, nil
}
