package gossip

import (
	"fmt"
	"time"

	"github.com/sluicedb/sluice/membership/gossip/claim"
)

// appendChunks returns the unsigned chunk envelopes of a set, as a cluster without
// certificates sends them.
func appendChunks(name string, s tokenSet) [][]byte {
	var out [][]byte
	for _, c := range chunkClaims(name, s) {
		out = append(out, c.Encode())
	}
	return out
}

// decodeChunkMsg decodes a chunk envelope and its payload.
func decodeChunkMsg(b []byte) (chunk, error) {
	c, err := claim.Decode(b)
	if err != nil {
		return chunk{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return decodeChunk(c)
}

// feed adds every chunk of a set to a table and returns the last outcome.
func feed(tt *tokenTable, name string, s tokenSet) outcome {
	var o outcome
	for _, m := range appendChunks(name, s) {
		c, _ := decodeChunkMsg(m)
		o = tt.addChunk(c, m)
	}
	return o
}

// leaveMsg is an unsigned leave intent of name, newer than any metadata a test announced.
func leaveMsg(name string) []byte {
	return leaveClaim(name, uint64(time.Now().UnixNano())).Encode()
}
