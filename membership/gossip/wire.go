package gossip

import (
	"encoding/binary"
	"fmt"
)

// Two encodings carry token sets, both big-endian int64 tokens in ascending order:
//
// The push/pull state (Delegate.LocalState / MergeRemoteState, over TCP, any size):
//
//	format:u8=1 count:uvarint
//	count × { name:uvarint len + bytes, version:uvarint, n:uvarint, n × int64 }
//
// A token chunk (a user broadcast via TransmitLimitedQueue / NotifyMsg, over UDP):
//
//	type:u8=msgTokenChunk name:uvarint len + bytes version:uvarint
//	total:uvarint offset:uvarint n:uvarint n × int64
//
// A set of total tokens is cut into chunks that each fit a gossip packet; chunk k carries
// tokens [offset, offset+n) of the sorted set. A receiver assembles the chunks of one version
// and installs the set once every token has arrived. Message types are append-only; a receiver
// ignores types it does not know.
//
// A leave intent (also a user broadcast) announces that the named node is leaving gracefully:
//
//	type:u8=msgLeave name:uvarint len + bytes

const (
	stateFormat = 1

	msgTokenChunk = 1
	msgLeave      = 2

	// maxTokens bounds a token set so that a malformed total cannot make a receiver allocate
	// without limit. Cassandra's num_tokens is at most a few hundred in practice.
	maxTokens = 1 << 16

	// maxNameLen bounds a node name so that a chunk header has a known maximum size.
	maxNameLen = 128

	// maxChunkBytes bounds an encoded chunk. memberlist packets are UDPBufferSize (1400)
	// bytes; after its compound, label (at most 2+255), encryption and user-message overheads
	// at least ~1050 remain, so an 800-byte chunk always fits in one packet.
	maxChunkBytes = 800
	// chunkHeaderMax is the largest chunk header: type, a maxNameLen name, four uvarints.
	chunkHeaderMax = 1 + binary.MaxVarintLen64 + maxNameLen + 4*binary.MaxVarintLen64
	// tokensPerChunk is how many tokens one chunk carries.
	tokensPerChunk = (maxChunkBytes - chunkHeaderMax) / 8
)

// tokenSet is a versioned token set. tokens is sorted ascending and never modified once the
// set is stored: readers share it and copy before handing it out.
type tokenSet struct {
	version uint64
	tokens  []int64
}

// stateEntry is one node's token set in the push/pull state.
type stateEntry struct {
	name string
	set  tokenSet
}

func appendInt64s(b []byte, vs []int64) []byte {
	for _, v := range vs {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendState appends the push/pull encoding of entries to b.
func appendState(b []byte, entries []stateEntry) []byte {
	b = append(b, stateFormat)
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for _, e := range entries {
		b = appendString(b, e.name)
		b = binary.AppendUvarint(b, e.set.version)
		b = binary.AppendUvarint(b, uint64(len(e.set.tokens)))
		b = appendInt64s(b, e.set.tokens)
	}
	return b
}

// decodeState parses a push/pull state. The returned entries do not alias b. Token lists are
// checked to be strictly ascending and at most maxTokens long.
func decodeState(b []byte) ([]stateEntry, error) {
	d := decoder{b: b}
	if f := d.u8(); d.err == nil && f != stateFormat {
		return nil, fmt.Errorf("%w: token state format %d at offset 0", ErrMalformed, f)
	}
	// An entry takes at least three bytes: empty name, version and count.
	n := d.count(3)
	out := make([]stateEntry, 0, n)
	for range n {
		var e stateEntry
		e.name = d.str()
		e.set.version = d.uvarint()
		e.set.tokens = d.tokens(d.count(8))
		if d.err != nil {
			break
		}
		out = append(out, e)
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

// appendLeave appends a leave intent: type:u8=msgLeave name:uvarint len + bytes.
func appendLeave(b []byte, name string) []byte {
	return appendString(append(b, msgLeave), name)
}

// decodeLeave parses a leave intent, type byte included, and returns the leaving node's name.
func decodeLeave(b []byte) (string, error) {
	d := decoder{b: b}
	if t := d.u8(); d.err == nil && t != msgLeave {
		return "", fmt.Errorf("%w: message type %d at offset 0", ErrMalformed, t)
	}
	name := d.str()
	if d.err != nil {
		return "", fmt.Errorf("leave intent: %w", d.err)
	}
	return name, nil
}

// chunk is one decoded token chunk.
type chunk struct {
	name    string
	version uint64
	total   int
	offset  int
	tokens  []int64
}

// appendChunks encodes a token set as chunks of at most maxChunkBytes; an empty set is one
// chunk with no tokens. name must be at most maxNameLen bytes.
func appendChunks(name string, s tokenSet) [][]byte {
	var out [][]byte
	for off := 0; off == 0 || off < len(s.tokens); off += tokensPerChunk {
		part := s.tokens[off:min(off+tokensPerChunk, len(s.tokens))]
		b := make([]byte, 0, chunkHeaderMax+8*len(part))
		b = append(b, msgTokenChunk)
		b = appendString(b, name)
		b = binary.AppendUvarint(b, s.version)
		b = binary.AppendUvarint(b, uint64(len(s.tokens)))
		b = binary.AppendUvarint(b, uint64(off))
		b = binary.AppendUvarint(b, uint64(len(part)))
		out = append(out, appendInt64s(b, part))
	}
	return out
}

// decodeChunk parses a token chunk message, type byte included. The result does not alias b.
func decodeChunk(b []byte) (chunk, error) {
	d := decoder{b: b}
	if t := d.u8(); d.err == nil && t != msgTokenChunk {
		return chunk{}, fmt.Errorf("%w: message type %d at offset 0", ErrMalformed, t)
	}
	var c chunk
	c.name = d.str()
	c.version = d.uvarint()
	total, off := d.uvarint(), d.uvarint()
	if d.err == nil && (total > maxTokens || off > total) {
		d.failf("chunk at %d of %d tokens", off, total)
	}
	c.total, c.offset = int(total), int(off)
	n := d.count(8)
	if d.err == nil && n > c.total-c.offset {
		d.failf("chunk of %d tokens at %d overruns a set of %d", n, c.offset, c.total)
	}
	c.tokens = d.tokens(n)
	if d.err != nil {
		return chunk{}, fmt.Errorf("token chunk: %w", d.err)
	}
	return c, nil
}
