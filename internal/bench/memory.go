package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
)

// MemoryOptions configures `sluice bench memory`: peak RSS of both sides of a half-ring fetch
// against the parent's partition count.
type MemoryOptions struct {
	Dir string
	// Partitions are the parents' partition counts, one parent (and one fetch) each.
	Partitions []int64
	// PartitionSize is every parent's partition size (small, so that many partitions fit).
	PartitionSize int
	Version       string // the parents' sstable version (default oa)
	Transport     string // quic, tls or tcp
	Runs          int
	Exe           string   // the sluice binary that runs the node and the receiver
	Env           []string // their environment (nil: this process's)
	Timeout       time.Duration
	// ProfileDir, when set, gets CPU and allocation profiles of every sender and receiver.
	ProfileDir string
	Logf       func(format string, args ...any)
}

// MemoryRow is one parent's fetch, medians of the runs.
type MemoryRow struct {
	Partitions      int64   `json:"parent_partitions"`
	ParentData      int64   `json:"parent_data_length"`
	Bytes           int64   `json:"payload_bytes"`
	WallSeconds     float64 `json:"wall_seconds"`
	MBps            float64 `json:"mb_per_second"`
	SenderPeakRSS   int64   `json:"sender_peak_rss_bytes"`
	ReceiverPeakRSS int64   `json:"receiver_peak_rss_bytes"`
	// FilterBytes is the received child's Filter.db: the bloom filter the receiver holds
	// outside the Go heap while it rebuilds the child, sized from its partition count (1.2
	// bytes per partition at fp 0.01). It is the output's own component, which Cassandra
	// also holds in memory for every sstable it opens, so it grows with the partitions by
	// design; ReceiverPeakRSS less it is what the receiver's own machinery holds.
	FilterBytes int64 `json:"receiver_filter_bytes"`
}

// Memory generates (or reuses) one parent per partition count and fetches two
// non-adjacent quarters of its ring from a `sluice run` node with `sluice stream fetch`,
// separate processes on loopback, reading each side's peak RSS (VmHWM) from outside: the
// node's from /proc after the fetch, the receiver's from the `bench measure` wrapper at its
// exit. A node is started per fetch, so its peak is that fetch's.
func Memory(ctx context.Context, o MemoryOptions) ([]MemoryRow, error) {
	if o.Exe == "" {
		return nil, fmt.Errorf("bench memory: no sluice binary to run the sender and receiver")
	}
	if o.Transport == "" {
		o.Transport = "tls"
	}
	if o.Runs <= 0 {
		o.Runs = 1
	}
	if o.PartitionSize <= 0 {
		o.PartitionSize = 128
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	var rows []MemoryRow
	for _, n := range o.Partitions {
		row, err := memoryOnce(ctx, o, n)
		if err != nil {
			return rows, fmt.Errorf("%d partitions: %w", n, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func memoryOnce(ctx context.Context, o MemoryOptions, n int64) (MemoryRow, error) {
	size := n * int64(o.PartitionSize)
	so := StreamOptions{Dir: o.Dir, Size: size, PartitionSize: o.PartitionSize, Transport: o.Transport, Exe: o.Exe, Env: o.Env,
		Runs: o.Runs, Timeout: o.Timeout, CPUProfileDir: o.ProfileDir, Logf: o.Logf}
	if so.CPUProfileDir != "" {
		if err := os.MkdirAll(so.CPUProfileDir, 0o755); err != nil {
			return MemoryRow{}, err
		}
	}
	if so.Timeout <= 0 {
		so.Timeout = 2*time.Minute + time.Duration(n/100_000)*time.Second
	}
	parent, err := parentFor(ctx, o.Dir, SplitOptions{Size: size, PartitionSize: o.PartitionSize, Version: o.Version, Logf: o.Logf})
	if err != nil {
		return MemoryRow{}, err
	}
	tmp, err := os.MkdirTemp(o.Dir, "sluice-bench-memory-")
	if err != nil {
		return MemoryRow{}, err
	}
	defer os.RemoveAll(tmp)
	w := &streamWorld{o: so, tmp: tmp, tlsDir: filepath.Join(tmp, "tls"), data: filepath.Join(tmp, "node")}
	if err := w.makeTLS(); err != nil {
		return MemoryRow{}, err
	}
	if err := w.makeNodeData(parent); err != nil {
		return MemoryRow{}, err
	}
	t, err := sstable.Open(parent.Prefix())
	if err != nil {
		return MemoryRow{}, err
	}
	row := MemoryRow{ParentData: t.DataLength()}
	quarters, err := slice.EqualRanges(t, 4)
	if err == nil {
		err = t.ScanKeys(func(*sstable.Partition) error { row.Partitions++; return nil })
	}
	t.Close()
	if err == nil && len(quarters) < 4 {
		err = fmt.Errorf("the parent is too small for four token ranges")
	}
	if err != nil {
		return row, err
	}
	// The same half as bench stream's (b): two non-adjacent quarters.
	w.half = token.RangeSet{quarters[0], quarters[2]}
	var samples []streamSample
	for run := 0; run < o.Runs; run++ {
		rctx, cancel := context.WithTimeout(ctx, so.Timeout)
		s, err := w.runFetch(rctx, fmt.Sprintf("m%d", n), benchTable, w.half, o.Transport)
		cancel()
		if err != nil {
			return row, fmt.Errorf("run %d: %w", run+1, err)
		}
		o.Logf("%d partitions, run %d: %d bytes in %.3fs, sender peak RSS %d, receiver %d (its filter %d)", row.Partitions, run+1, s.bytes,
			s.wall.Seconds(), s.senderRSS, s.peakRSS, s.filterBytes)
		samples = append(samples, s)
	}
	m := streamMedians("memory", samples)
	row.Bytes, row.WallSeconds, row.MBps = m.Bytes, m.WallSeconds, m.MBps
	row.SenderPeakRSS, row.ReceiverPeakRSS = m.SenderPeakRSS, m.ReceiverPeakRSS
	row.FilterBytes = samples[len(samples)-1].filterBytes // the same child every run
	return row, nil
}
