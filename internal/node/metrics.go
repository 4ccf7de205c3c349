package node

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sluicedb/sluice/internal/peerrpc"
)

// Label values of the streaming metrics.
const (
	DirIn  = "in"  // received by this node
	DirOut = "out" // sent by this node

	KindEntire  = "entire"  // a whole sstable, every component sent as is
	KindPartial = "partial" // chunk runs of a partial sstable, other components rebuilt
	KindRows    = "rows"    // rows re-serialised because the chunks could not be cut

	OutcomeComplete = "complete"
	OutcomeFailed   = "failed"
)

// Metrics are the node's Prometheus collectors, registered on a registry of their own (never
// the global one, so several nodes in one process, as in tests, do not collide). The stream
// layer feeds them; every collector is safe for concurrent use.
type Metrics struct {
	// Registry holds the collectors below plus the Go runtime and process collectors;
	// GET /metrics serves it.
	Registry *prometheus.Registry

	// BytesStreamed counts payload bytes by direction (DirIn, DirOut) and kind (KindEntire,
	// KindPartial, KindRows): sluice_stream_bytes_total.
	BytesStreamed *prometheus.CounterVec
	// FilesStreamed counts completed sstables by direction and kind: sluice_stream_files_total.
	FilesStreamed *prometheus.CounterVec
	// SlicesRefused counts slices a sender refused to serve, by a short reason chosen by the
	// stream layer (e.g. "unknown_table", "overloaded"): sluice_stream_refused_slices_total.
	SlicesRefused *prometheus.CounterVec
	// CRCFailures counts received chunks whose CRC did not match: sluice_stream_crc_failures_total.
	CRCFailures prometheus.Counter
	// DigestFailures counts received sstables whose whole-file digest did not match:
	// sluice_stream_digest_failures_total.
	DigestFailures prometheus.Counter
	// Sessions counts finished sessions by direction and outcome (OutcomeComplete,
	// OutcomeFailed): sluice_stream_sessions_total.
	Sessions *prometheus.CounterVec
	// ThroughputLimit is the current rate limit in bytes per second by direction, 0 =
	// unlimited: sluice_stream_throughput_limit_bytes_per_second. The node sets it.
	ThroughputLimit *prometheus.GaugeVec
	// PeerCallsRefused counts the peer calls this node's limits refused before running them
	// (or whose answer exceeded its bound), by method ("other" for a method not in the table)
	// and peerrpc.Reason: sluice_peer_calls_refused_total.
	PeerCallsRefused *prometheus.CounterVec
	// gossipRejected reads Gossip.Rejected at scrape time: sluice_gossip_rejected_total.
	gossipRejected *gossipRejections
}

// NewMetrics creates the collectors on a fresh registry. Every label combination the node
// knows is initialised, so a scrape shows zeros rather than missing series.
func NewMetrics() *Metrics {
	dirKind := []string{"direction", "kind"}
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		BytesStreamed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "stream", Name: "bytes_total",
			Help: "Payload bytes streamed, by direction (in, out) and kind (entire, partial, rows).",
		}, dirKind),
		FilesStreamed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "stream", Name: "files_total",
			Help: "Sstables streamed, by direction (in, out) and kind (entire, partial, rows).",
		}, dirKind),
		SlicesRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "stream", Name: "refused_slices_total",
			Help: "Slices a sender refused to serve, by reason.",
		}, []string{"reason"}),
		CRCFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "stream", Name: "crc_failures_total",
			Help: "Received chunks whose CRC did not match.",
		}),
		DigestFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "stream", Name: "digest_failures_total",
			Help: "Received sstables whose digest did not match.",
		}),
		Sessions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "stream", Name: "sessions_total",
			Help: "Finished stream sessions, by direction (in, out) and outcome (complete, failed).",
		}, []string{"direction", "outcome"}),
		ThroughputLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "sluice", Subsystem: "stream", Name: "throughput_limit_bytes_per_second",
			Help: "Current streaming rate limit by direction (in, out); 0 means unlimited.",
		}, []string{"direction"}),
		PeerCallsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "peer", Name: "calls_refused_total",
			Help: "Peer calls refused by their bounds or budgets, by method and reason.",
		}, []string{"method", "reason"}),
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.BytesStreamed, m.FilesStreamed, m.SlicesRefused, m.CRCFailures, m.DigestFailures,
		m.Sessions, m.ThroughputLimit, m.PeerCallsRefused,
	)
	m.gossipRejected = newGossipRejections()
	m.Registry.MustRegister(m.gossipRejected)
	for _, meth := range peerrpc.DefaultMethods() {
		for _, r := range peerrpc.Reasons() {
			if r != peerrpc.ReasonUnknown {
				m.PeerCallsRefused.WithLabelValues(meth.Name, string(r))
			}
		}
	}
	m.PeerCallsRefused.WithLabelValues("other", string(peerrpc.ReasonUnknown))
	for _, dir := range []string{DirIn, DirOut} {
		for _, kind := range []string{KindEntire, KindPartial, KindRows} {
			m.BytesStreamed.WithLabelValues(dir, kind)
			m.FilesStreamed.WithLabelValues(dir, kind)
		}
		for _, outcome := range []string{OutcomeComplete, OutcomeFailed} {
			m.Sessions.WithLabelValues(dir, outcome)
		}
		m.ThroughputLimit.WithLabelValues(dir)
	}
	return m
}

// setThroughput records the current limits in the gauges.
func (m *Metrics) setThroughput(t Throughput) {
	m.ThroughputLimit.WithLabelValues(DirOut).Set(float64(t.OutboundBytesPerSecond))
	m.ThroughputLimit.WithLabelValues(DirIn).Set(float64(t.InboundBytesPerSecond))
}
