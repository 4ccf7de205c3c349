package stream

import (
	"math/rand/v2"
	"testing"

	"github.com/sluicedb/sluice/wire"
)

// Bit flips in a valid session script never make the receiver accept bytes beyond a manifest
// or panic (a deterministic complement to FuzzReceiver).
func TestReceiverSurvivesBitFlips(t *testing.T) {
	partial, entire := manifests(t, "lz4")
	sid := wire.SessionID{1}
	prep := &wire.Prepare{SessionID: sid, SSTables: []wire.PlannedSSTable{{ID: partial.SSTableID, Kind: partial.Kind}, {ID: entire.SSTableID, Kind: entire.Kind}}}
	seed := frames(&wire.HelloAck{Version: 1}, prep, partial, &wire.Data{SSTableID: partial.SSTableID, Payload: []byte{1, 2, 3}})
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 3000; i++ {
		b := append([]byte(nil), seed...)
		for k := 0; k < 1+r.IntN(4); k++ {
			b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
		}
		fuzzReceiver(t, b)
	}
}
