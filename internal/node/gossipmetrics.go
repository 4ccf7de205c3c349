package node

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicedb/sluice/membership/gossip"
)

// gossipRejections exports the gossip claims this node dropped (a forged token set, an
// unsigned leave intent, a version beyond the clock...) as
// sluice_gossip_rejected_total{reason}. Gossip counts them; the collector reads the counts at
// scrape time from the node's current Gossip, which exists only once membership started.
type gossipRejections struct {
	desc *prometheus.Desc
	src  atomic.Pointer[gossip.Gossip]
}

func newGossipRejections() *gossipRejections {
	return &gossipRejections{desc: prometheus.NewDesc("sluice_gossip_rejected_total",
		"Gossip claims dropped without being applied, by reason (unsigned, bad_signature, unproven, version_ahead, stale, malformed).",
		[]string{"reason"}, nil)}
}

func (c *gossipRejections) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *gossipRejections) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]uint64{}
	if g := c.src.Load(); g != nil {
		counts = g.Rejected()
	}
	for _, r := range []string{gossip.RejectUnsigned, gossip.RejectBadSignature, gossip.RejectUnproven,
		gossip.RejectVersionAhead, gossip.RejectStale, gossip.RejectMalformed} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(counts[r]), r)
	}
}
