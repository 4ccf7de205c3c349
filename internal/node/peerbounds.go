package node

import (
	"context"
	"encoding/base64"
	"strconv"
	"time"

	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/gossip"
)

// The peer calls' bounds are peerrpc's table (peerrpc.DefaultMethods): the stream server's
// peerrpc.Server holds every call to it before peerCall routes it. This file is the node's
// side of that table: its answers encoded once into buffers sized from what they hold (a
// repair's requests are cut to fit the same bounds by ops.TreeBatches and ops.BatchRanges, so
// that sluice's own repair never meets them).

// countPeerRefusal counts a peer call the limits refused: sluice_peer_calls_refused_total.
func (n *Node) countPeerRefusal(method string, reason peerrpc.Reason) {
	if method == "" {
		method = "other"
	}
	n.metrics.PeerCallsRefused.WithLabelValues(method, string(reason)).Inc()
}

// treesAnswer encodes a repair_tree answer as TreeResponse's JSON in one buffer of the size
// peerrpc.TreeCost predicts, each tree's leaves written straight into it.
func treesAnswer(trees []*repair.Tree) peerrpc.Raw {
	size := len(`{"trees":[]}`)
	for _, t := range trees {
		size += repair.TreeWireSize(t.Depth) + 1
	}
	b := append(make([]byte, 0, size), `{"trees":[`...)
	for i, t := range trees {
		if i > 0 {
			b = append(b, ',')
		}
		b = t.AppendJSON(b)
	}
	return append(b, "]}"...)
}

// digestsAnswer encodes a repair_digests answer as DigestResponse's JSON in one buffer, the
// page's base64 written straight into it.
func digestsAnswer(ds []repair.Digest, more bool) peerrpc.Raw {
	page := repair.AppendDigests(make([]byte, 0, repair.DigestsSize(ds)), ds)
	b := make([]byte, 0, len(`{"digests":"","more":false}`)+base64.StdEncoding.EncodedLen(len(page)))
	b = append(b, `{"digests":"`...)
	b = base64.StdEncoding.AppendEncode(b, page)
	b = append(b, `","more":`...)
	b = strconv.AppendBool(b, more)
	return append(b, '}')
}

// Retrying a heavy peer call the peer refused as busy: after busyPause, doubling to
// busyPauseMax, for at most busyWait in all. A peer is busy while other repairs' trees and
// digests hold its budgets, which lasts as long as they walk their tables.
const (
	busyPause    = 100 * time.Millisecond
	busyPauseMax = 5 * time.Second
	busyWait     = 10 * time.Minute
)

// callHeavy is c.call for a heavy peer method (repair_tree, repair_digests): a peer at one of
// its budgets refuses at once with peerrpc.CodeBusy, and the call is asked again after a
// pause, until it passes, fails otherwise, busyWait has passed or ctx ends.
func (c *cluster) callHeavy(ctx context.Context, m gossip.Member, method string, req, out any) error {
	pause, deadline := busyPause, time.Now().Add(busyWait)
	for {
		err := c.call(ctx, m, method, req, out)
		if !peerrpc.IsBusy(err) || time.Now().Add(pause).After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		pause = min(2*pause, busyPauseMax)
	}
}
