package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// StreamOptions configures `sluice bench stream`.
//
// The benchmark runs every sender and receiver as a separate process of the sluice binary Exe
// so that CPU time and memory are measured per side. It relies on these command lines of
// that binary: `run` (the node), `stream fetch --json`, and the hidden `bench measure`,
// `bench quic-raw-serve`, `bench quic-raw-fetch`, `bench tcp-raw-serve` and `bench
// tcp-raw-fetch` (both with --tls-dir for the raw TLS transfer).
type StreamOptions struct {
	Dir  string // where the parent lives (reused, as bench split does) and the run's temporary directory
	Size int64  // parent's uncompressed size
	// PartitionSize is the parent's partition size (default 64 KiB); small ones make a
	// many-partition parent, for memory against partition count.
	PartitionSize int
	// ReferencePartitionSize, when set, makes a pair run: a second parent of the same size
	// with partitions of this size, and only the partial fetches, of both parents run by run
	// ((b) over QUIC and, with tcp or tls, (f) or (h), plus that plane's raw transfer as
	// the machine's reference), each compared with the reference parent's in the same run:
	// the small-partitions target. Not with SSTables.
	ReferencePartitionSize int
	// Version is the parent's sstable version: oa (default) or nb, BIG; da, BTI.
	Version string
	// ReferenceVersion, when set to another version than Version, makes a pair run too: the
	// reference parent (of ReferencePartitionSize, or of PartitionSize when that is unset)
	// is of this version, e.g. da against oa, BTI's small partitions against BIG's.
	ReferenceVersion string
	Transport        string // "quic" (default); "tcp": the quic rows plus (e) raw TCP and (f) partial over the TCP data plane; "tls": the quic rows plus (g) raw Go TLS over TCP and (h) partial over the TLS data plane
	// TCPCongestion, for tcp and tls, is the node's tcp_congestion and fetch's
	// --tcp-congestion ("" = the kernel's default); the raw rows use the kernel's default.
	TCPCongestion string
	Exe           string        // the sluice binary the child processes run; required
	Env           []string      // the children's environment; nil inherits this process's
	Runs          int           // runs per configuration, medians printed; default 1
	Timeout       time.Duration // bounds one run of one configuration; default 2 min + 2 s per 4 MB
	// CPUProfileDir, when set, makes every child write a CPU profile there,
	// <config>-sender.pprof and <config>-receiver.pprof, each the heap profile of its largest
	// live heap, <config>-{sender,receiver}.peakheap.pprof, and each receiver an allocation
	// profile, <config>-receiver.allocs.pprof (the last run's).
	CPUProfileDir string
	// SSTables, when above 1, adds configuration (i): the whole ring of a table made of the
	// parent split into this many sstables (rewrite mode, so each is an ordinary sstable),
	// against (d), the same bytes as one sstable, over the same transport.
	SSTables int
	Logf     func(format string, args ...any)
}

// StreamRow is one configuration's medians.
type StreamRow struct {
	Config string `json:"config"`
	// Status is "ok"; "not supported" for a kind the stream package refuses, or "failed" for
	// the rows path (Note says why; the other configurations' failures end the benchmark).
	Status             string  `json:"status"`
	Note               string  `json:"note,omitempty"`
	Kinds              string  `json:"kinds,omitempty"` // kinds of the installed sstables
	Bytes              int64   `json:"payload_bytes"`
	WallSeconds        float64 `json:"wall_seconds"`
	MBps               float64 `json:"mb_per_second"`
	SenderCPUPerGiB    float64 `json:"sender_cpu_seconds_per_gib"`
	ReceiverCPUPerGiB  float64 `json:"receiver_cpu_seconds_per_gib"`
	ReceiverHeapPerGiB float64 `json:"receiver_heap_bytes_per_gib"`
	ReceiverPeakRSS    int64   `json:"receiver_peak_rss_bytes"`
	// SenderPeakRSS is the sending process's VmHWM after the transfer (the node, for fetches).
	SenderPeakRSS int64 `json:"sender_peak_rss_bytes"`
	// PartitionSize, in a pair run, is the partition size of the parent the row fetched from.
	PartitionSize int `json:"partition_size,omitempty"`
	// Parent, in a pair run, names the parent the row fetched from (StreamParent.Label).
	Parent string `json:"parent,omitempty"`
}

// OK reports whether the configuration ran.
func (r StreamRow) OK() bool { return r.Status == "ok" }

// StreamCheck is one target of the streaming issue, with what was measured.
type StreamCheck struct {
	Name     string  `json:"name"`
	Measured float64 `json:"measured"`
	Unit     string  `json:"unit"` // "x" for ratios, "MiB" for memory
	Target   string  `json:"target"`
	Met      bool    `json:"met"`
	// PerRun, for a pair run's comparison of the two parents, is each run's ratio; Measured
	// is their median and RunMin and RunMax their extremes, the spread of the noise.
	PerRun []float64 `json:"per_run,omitempty"`
	RunMin float64   `json:"run_min,omitempty"`
	RunMax float64   `json:"run_max,omitempty"`
	// RatioOfMedians is the same comparison made from the two rows' median MB/s: the
	// median of the ratios pairs each run's fetches, but under noise the two can differ.
	RatioOfMedians float64 `json:"ratio_of_medians,omitempty"`
}

// StreamParent is a parent the benchmark fetched from.
type StreamParent struct {
	PartitionSize int    `json:"partition_size"`
	Version       string `json:"version"`
	// Label names the parent in a pair run's rows and checks: its partition size, and its
	// version when the two parents' versions differ ("512 B", "512 B da").
	Label          string `json:"label,omitempty"`
	ParentData     int64  `json:"parent_data_length"`
	ParentDataFile int64  `json:"parent_data_file_length"`
	Partitions     int64  `json:"parent_partitions"`
	PartialRanges  string `json:"partial_ranges"`
}

// StreamReport is the whole benchmark.
type StreamReport struct {
	Dir       string `json:"dir"`
	Transport string `json:"transport"`
	StreamParent
	// Reference, in a pair run, is the parent of ReferencePartitionSize.
	Reference *StreamParent `json:"reference,omitempty"`
	Runs      int           `json:"runs"`
	Rows      []StreamRow   `json:"rows"`
	Checks    []StreamCheck `json:"checks"`
}

// The configurations, in the order they run and print.
const (
	cfgRaw     = "(a) raw quic-go, one stream"
	cfgPartial = "(b) partial zero-copy, ~50%"
	cfgRows    = "(c) rows path, same ranges"
	cfgEntire  = "(d) entire sstable"
	// --transport tcp adds:
	cfgRawTCP     = "(e) raw TCP, sendfile to splice"
	cfgPartialTCP = "(f) partial over TCP data plane"
	// --transport tls adds:
	cfgRawTLS     = "(g) raw Go TLS 1.3 over TCP"
	cfgPartialTLS = "(h) partial over TLS data plane"
	// --sstables N adds:
	cfgMany = "(i) many sstables, whole ring"
)

const (
	benchKeyspace   = "sluice"
	benchTable      = "stress"
	legacyTable     = "stress_legacy" // the parent's copy with legacy counter shards, for (c)
	manyTable       = "stress_many"   // the parent split into StreamOptions.SSTables sstables, for (i)
	senderName      = "n1"
	receiverName    = "cli"
	gib             = float64(1 << 30)
	nodeReadyWithin = 30 * time.Second
	stopWithin      = 15 * time.Second
)

// Stream measures streaming on one parent of the seed workload's shape against a raw
// quic-go transfer of the same bytes between the same kind of endpoints; with
// ReferencePartitionSize, the partial fetches of two parents that differ only in their
// partition size against each other (pairConfigs).
func Stream(ctx context.Context, o StreamOptions) (*StreamReport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Transport == "" {
		o.Transport = "quic"
	}
	if o.Exe == "" {
		return nil, errors.New("bench stream: no sluice binary to run the sender and receiver")
	}
	if o.Runs <= 0 {
		o.Runs = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 2*time.Minute + time.Duration(o.Size/(4<<20))*2*time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	tmp, err := os.MkdirTemp(o.Dir, "sluice-bench-stream-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if o.CPUProfileDir != "" {
		if err := os.MkdirAll(o.CPUProfileDir, 0o755); err != nil {
			return nil, err
		}
	}
	tlsDir := filepath.Join(tmp, "tls")
	if err := (&streamWorld{tlsDir: tlsDir}).makeTLS(); err != nil {
		return nil, err
	}
	pair := o.pair()
	ps, v, refPS, refV := o.parents()
	sub := ""
	if pair {
		sub = parentStem(ps, v)
	}
	w, parent, err := newStreamWorld(ctx, o, tmp, sub, ps, v)
	if err != nil {
		return nil, err
	}
	rep := &StreamReport{Dir: o.Dir, Transport: o.Transport, StreamParent: parent, Runs: o.Runs}
	var groups [][]streamConfig
	if pair {
		w.label = o.parentLabel(ps, v)
		rep.Label = w.label
		ref, refParent, err := newStreamWorld(ctx, o, tmp, parentStem(refPS, refV), refPS, refV)
		if err != nil {
			return nil, err
		}
		ref.label = o.parentLabel(refPS, refV)
		refParent.Label = ref.label
		rep.Reference = &refParent
		groups = pairConfigs(w, ref, o.Transport)
	} else if groups, err = w.configs(ctx); err != nil {
		return nil, err
	}
	configs, samples, err := runInterleaved(ctx, o, groups)
	if err != nil {
		return nil, err
	}
	for i, c := range configs {
		row := streamMedians(c.name, samples[i])
		if pair {
			row.PartitionSize, row.Parent = c.partitionSize, c.parent
		}
		rep.Rows = append(rep.Rows, row)
	}
	if pair {
		rep.Checks = pairRunChecks(rep, groups, samples)
	} else {
		rep.Checks = streamChecks(rep.Rows)
	}
	return rep, nil
}

// pairRunChecks is a pair run's checks: the two parents against each other first, the run's
// point (pairCheck, for every group of two, with the ratio of the rows' medians beside it); then each parent's rows against the usual
// targets (streamChecks), named after its partition size.
func pairRunChecks(rep *StreamReport, groups [][]streamConfig, samples [][]streamSample) []StreamCheck {
	var out []StreamCheck
	for i, g := range groups {
		if len(g) != 2 {
			continue
		}
		j := groupStart(groups, i)
		if c, ok := pairCheck(g[0].name, g[0].parent, g[1].parent, samples[j], samples[j+1]); ok {
			// The rows are in the configurations' order.
			if small, ref := rep.Rows[j], rep.Rows[j+1]; small.OK() && ref.OK() && ref.MBps > 0 {
				c.RatioOfMedians = small.MBps / ref.MBps
			}
			out = append(out, c)
		}
	}
	for _, p := range []string{rep.Label, rep.Reference.Label} {
		// The raw transfer runs once per run, with the first parent's bytes; it is the
		// reference of both parents' fetches over its plane (the plane's own target is the
		// bulk fetch's, 64 KiB partitions, against it).
		var rows []StreamRow
		for _, r := range rep.Rows {
			if r.Parent == p || r.Config == cfgRaw || r.Config == cfgRawTCP || r.Config == cfgRawTLS {
				rows = append(rows, r)
			}
		}
		for _, c := range streamChecks(rows) {
			c.Name = p + ": " + c.Name
			out = append(out, c)
		}
	}
	return out
}

// Validate checks the options a command line sets, before anything is generated.
func (o StreamOptions) Validate() error {
	switch o.Transport {
	case "", "quic", "tcp", "tls":
	default:
		return fmt.Errorf("--transport %q: want quic, tls or tcp", o.Transport)
	}
	if o.SSTables < 0 || o.SSTables == 1 {
		return fmt.Errorf("--sstables %d: want at least 2 (0: no many-sstables row)", o.SSTables)
	}
	for _, f := range []struct {
		flag string
		size int
	}{{"--partition-size", o.PartitionSize}, {"--reference-partition-size", o.ReferencePartitionSize}} {
		if f.size < 0 || f.size > 1<<30 {
			return fmt.Errorf("%s %d: want a size up to 1GiB", f.flag, f.size)
		}
	}
	for _, f := range []struct{ flag, v string }{{"--format", o.Version}, {"--reference-format", o.ReferenceVersion}} {
		if f.v == "" {
			continue
		}
		if _, err := version.ParseWritable(f.v); err != nil {
			return fmt.Errorf("%s %q: %w", f.flag, f.v, err)
		}
	}
	if !o.pair() {
		return nil
	}
	if o.SSTables > 0 {
		return errors.New("--reference-partition-size and --reference-format compare the partial fetches of two parents; --sstables (the whole ring of one parent) is not part of that run")
	}
	ps, v, refPS, refV := o.parents()
	if p := partitionSizeOrDefault(ps); p == partitionSizeOrDefault(refPS) && v == refV {
		return fmt.Errorf("--reference-partition-size %d: the parent's partitions are %d bytes too, and of the same version; nothing to compare", o.ReferencePartitionSize, p)
	}
	return nil
}

// parents is the partition size and version of the parent and of a pair run's reference
// parent (the parent's where the options leave them).
func (o StreamOptions) parents() (ps int, v string, refPS int, refV string) {
	ps, v = o.PartitionSize, versionOrDefault(o.Version)
	refPS, refV = o.ReferencePartitionSize, v
	if refPS == 0 {
		refPS = ps
	}
	if o.ReferenceVersion != "" {
		refV = o.ReferenceVersion
	}
	return ps, v, refPS, refV
}

// parentLabel names a pair run's parent of partitionSize and version v: its partition size,
// and its version when the two parents' versions differ ("512 B", "512 B da").
func (o StreamOptions) parentLabel(partitionSize int, v string) string {
	l := PartitionLabel(partitionSizeOrDefault(partitionSize))
	if _, pv, _, rv := o.parents(); pv != rv {
		l += " " + v
	}
	return l
}

// pair says whether the options make a pair run: a reference parent of another partition
// size or version.
func (o StreamOptions) pair() bool {
	return o.ReferencePartitionSize > 0 || o.ReferenceVersion != "" && versionOrDefault(o.ReferenceVersion) != versionOrDefault(o.Version)
}

// versionOrDefault is v, or oa (parentFor's default) when empty.
func versionOrDefault(v string) string {
	if v == "" {
		return "oa"
	}
	return v
}

// parentStem names a pair run's parent in file and directory names: p512, p512-da.
func parentStem(partitionSize int, v string) string {
	s := fmt.Sprintf("p%d", partitionSizeOrDefault(partitionSize))
	if v != "oa" {
		s += "-" + v
	}
	return s
}

// defaultPartitionSize is gen.Options' default partition size, the seed workload's.
const defaultPartitionSize = 64 << 10

func partitionSizeOrDefault(n int) int {
	if n == 0 {
		return defaultPartitionSize
	}
	return n
}

// PartitionLabel names a partition size in the largest binary unit that divides it:
// "512 B", "64 KiB", "1 MiB".
func PartitionLabel(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// streamConfig is one configuration of the benchmark: its row's name, the stem of its
// files (profiles, received data) and one run of it.
type streamConfig struct {
	name          string
	file          string
	partitionSize int    // a pair run's: the partition size of the parent it fetches from
	parent        string // a pair run's: the label of the parent it fetches from
	run           func(ctx context.Context, file string) (streamSample, error)
}

// configs is the configurations of a run on one parent: (a) to (d), the data plane's raw
// transfer and partial fetch for tcp and tls, and (i) with SSTables; each a group of its own.
func (w *streamWorld) configs(ctx context.Context) ([][]streamConfig, error) {
	o := w.o
	ringStart := token.Murmur3.MinToken()
	whole := token.RangeSet{{Left: ringStart, Right: ringStart}}
	fetch := func(name, table string, ranges token.RangeSet, transport string) streamConfig {
		return streamConfig{name: name, file: profileName(name), run: func(ctx context.Context, file string) (streamSample, error) {
			return w.runFetch(ctx, file, table, ranges, transport)
		}}
	}
	configs := []streamConfig{
		{name: cfgRaw, file: profileName(cfgRaw), run: w.runRaw},
		fetch(cfgPartial, benchTable, w.half, "quic"),
		fetch(cfgRows, legacyTable, w.half, "quic"),
		fetch(cfgEntire, benchTable, whole, "quic"),
	}
	if raw, partial, ok := planeConfigs(o.Transport); ok {
		configs = append(configs, streamConfig{name: raw, file: profileName(raw), run: w.runRawTCP},
			fetch(partial, benchTable, w.half, o.Transport))
	}
	if o.SSTables > 1 {
		many, err := manyFor(ctx, w.parent, o.SSTables, o.Logf)
		if err != nil {
			return nil, err
		}
		if err := linkTable(many, gen.TableDir(w.data, benchKeyspace, manyTable)); err != nil {
			return nil, err
		}
		configs = append(configs, fetch(cfgMany, manyTable, whole, "quic"))
	}
	groups := make([][]streamConfig, len(configs))
	for i, c := range configs {
		groups[i] = []streamConfig{c}
	}
	return groups, nil
}

// pairConfigs is a pair run's configurations: (b), partial over QUIC, of the parent w and
// of the reference parent ref side by side, and with tcp or tls the same over that data
// plane, then that plane's raw transfer of w's partial byte count, once: the machine's
// reference. Raw QUIC, the rows path and the entire sstable say nothing about partition
// size and are left out to keep the run short.
func pairConfigs(w, ref *streamWorld, transport string) [][]streamConfig {
	fetch := func(x *streamWorld, name, transport string) streamConfig {
		return streamConfig{name: name, file: profileName(name) + "-" + x.stem, partitionSize: x.partitionSize, parent: x.label,
			run: func(ctx context.Context, file string) (streamSample, error) {
				return x.runFetch(ctx, file, benchTable, x.half, transport)
			}}
	}
	groups := [][]streamConfig{{fetch(w, cfgPartial, "quic"), fetch(ref, cfgPartial, "quic")}}
	if raw, partial, ok := planeConfigs(transport); ok {
		groups = append(groups, []streamConfig{fetch(w, partial, transport), fetch(ref, partial, transport)},
			[]streamConfig{{name: raw, file: profileName(raw) + "-" + w.stem, partitionSize: w.partitionSize, parent: w.label, run: w.runRawTCP}})
	}
	return groups
}

// planeConfigs names the raw transfer and the partial fetch of the tcp or tls data plane;
// false for quic, whose rows every run has.
func planeConfigs(transport string) (raw, partial string, ok bool) {
	switch transport {
	case "tcp":
		return cfgRawTCP, cfgPartialTCP, true
	case "tls":
		return cfgRawTLS, cfgPartialTLS, true
	}
	return "", "", false
}

// groupStart is the index, among all the groups' configurations in order, of group i's first.
func groupStart(groups [][]streamConfig, i int) int {
	n := 0
	for _, g := range groups[:i] {
		n += len(g)
	}
	return n
}

// runInterleaved runs every configuration o.Runs times and returns the configurations in
// order with each one's samples. Runs are the outer loop so that a change in the machine's
// load during the benchmark falls on every configuration alike; the configurations of a
// group run back to back, their order reversed every other run (runOrder) so that neither
// always runs in the other's wake. A configuration whose first run was not "ok" is not run
// again.
func runInterleaved(ctx context.Context, o StreamOptions, groups [][]streamConfig) ([]streamConfig, [][]streamSample, error) {
	var configs []streamConfig
	for _, g := range groups {
		configs = append(configs, g...)
	}
	samples := make([][]streamSample, len(configs))
	for run := 0; run < o.Runs; run++ {
		for gi, g := range groups {
			start := groupStart(groups, gi)
			for _, k := range runOrder(len(g), run) {
				i := start + k
				c := configs[i]
				if run > 0 && samples[i][0].status != "ok" {
					continue
				}
				rctx, cancel := context.WithTimeout(ctx, o.Timeout)
				s, err := c.run(rctx, c.file)
				cancel()
				if err != nil {
					return nil, nil, fmt.Errorf("%s, run %d: %w", configLabel(c), run+1, err)
				}
				samples[i] = append(samples[i], s)
				if s.status == "ok" {
					o.Logf("%s run %d: %d bytes in %.3fs", configLabel(c), run+1, s.bytes, s.wall.Seconds())
				}
			}
		}
	}
	return configs, samples, nil
}

// runOrder is the order of a group of n configurations in run number run (from 0): as
// listed in even runs, reversed in odd ones.
func runOrder(n, run int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
		if run%2 == 1 {
			order[i] = n - 1 - i
		}
	}
	return order
}

// configLabel names a configuration in logs and errors, with its parent's label in a pair
// run.
func configLabel(c streamConfig) string {
	if c.parent == "" {
		return c.name
	}
	return c.name + " [" + c.parent + " partitions]"
}

// newStreamWorld makes (or reuses) the parent of partitionSize and version v in o.Dir and the world that
// fetches from it, in tmp/sub with tmp/tls's certificates (made by the caller): the node's
// tables, the two non-adjacent quarters of the ring its partial fetches ask for and their
// payload.
func newStreamWorld(ctx context.Context, o StreamOptions, tmp, sub string, partitionSize int, v string) (*streamWorld, StreamParent, error) {
	var info StreamParent
	parent, err := parentFor(ctx, o.Dir, SplitOptions{Size: o.Size, PartitionSize: partitionSize, Version: v, Logf: o.Logf})
	if err != nil {
		return nil, info, err
	}
	wtmp := filepath.Join(tmp, sub)
	if err := os.MkdirAll(wtmp, 0o755); err != nil {
		return nil, info, err
	}
	w := &streamWorld{o: o, tmp: wtmp, tlsDir: filepath.Join(tmp, "tls"), data: filepath.Join(wtmp, "node"),
		parent: parent, partitionSize: partitionSizeOrDefault(partitionSize), stem: parentStem(partitionSize, v)}
	if err := w.makeNodeData(parent); err != nil {
		return nil, info, err
	}
	t, err := sstable.Open(parent.Prefix())
	if err != nil {
		return nil, info, err
	}
	info = StreamParent{PartitionSize: w.partitionSize, Version: v, ParentData: t.DataLength(), ParentDataFile: t.DataFileLength}
	quarters, err := slice.EqualRanges(t, 4)
	if err == nil && len(quarters) < 4 {
		err = fmt.Errorf("bench stream: the parent is too small for four token ranges")
	}
	if err != nil {
		t.Close()
		return nil, info, err
	}
	// Two non-adjacent quarters, so the partial stream carries one child of two runs.
	w.half = token.RangeSet{quarters[0], quarters[2]}
	info.PartialRanges = w.half.String()
	partials, _, err := slice.Partials(t, w.half, slice.PartialOptions{OnePerParent: true})
	if err == nil {
		err = t.ScanPartitions(func(*sstable.Partition) error { info.Partitions++; return nil })
	}
	w.dataFile = t.Path(descriptor.Data)
	t.Close()
	if err != nil {
		return nil, info, err
	}
	// The raw transfer moves as many bytes as the partial stream's payload.
	for _, p := range partials {
		w.halfBytes += p.Layout.FileLength + int64(len(p.Index)+len(p.Rows))
	}
	return w, info, nil
}

// pairCheck is the small-partitions target for one configuration of a pair run: its MB/s on
// the parent labelled parent over its MB/s on the reference parent, labelled ref, at least 0.80. The
// ratio is taken run by run (the two fetches of a run ran back to back, under about the same
// load) and Measured is the median of the runs' ratios, with their spread beside it. False
// when no run of both went through.
func pairCheck(config string, parent, ref string, ss, refs []streamSample) (StreamCheck, bool) {
	var ratios []float64
	for i := range min(len(ss), len(refs)) {
		s, r := ss[i], refs[i]
		if s.status != "ok" || r.status != "ok" || s.wall <= 0 || r.wall <= 0 || r.bytes <= 0 {
			continue
		}
		ratios = append(ratios, MBps(s.bytes, s.wall)/MBps(r.bytes, r.wall))
	}
	if len(ratios) == 0 {
		return StreamCheck{}, false
	}
	p := profileName(config)
	c := StreamCheck{Name: fmt.Sprintf("(%s) %s MB/s / (%s) %s MB/s", p, parent, p, ref),
		Unit: "x", Target: ">= 0.80", PerRun: ratios, RunMin: slices.Min(ratios), RunMax: slices.Max(ratios), Measured: median(ratios)}
	c.Met = c.Measured >= 0.80
	return c, true
}

// median is the middle value of v, the mean of the two middle ones for an even count.
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// profileName is a configuration's file-name stem: "(b) partial ..." is "b".
func profileName(config string) string { return config[1:2] }

// streamSample is one run of one configuration.
type streamSample struct {
	status      string
	note        string
	kinds       string
	bytes       int64
	wall        time.Duration
	senderCPU   time.Duration
	receiverCPU time.Duration
	heap        uint64
	peakRSS     int64
	senderRSS   int64
	filterBytes int64       // the largest Filter.db the fetch installed (fetch configurations)
	fetched     fetchOutput // what `stream fetch --json` printed (fetch configurations)
}

func streamMedians(name string, ss []streamSample) StreamRow {
	last := ss[len(ss)-1]
	row := StreamRow{Config: name, Status: last.status, Note: last.note, Kinds: last.kinds}
	if last.status != "ok" {
		return row
	}
	med := func(f func(streamSample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	row.Bytes = last.bytes
	g := float64(last.bytes) / gib
	row.WallSeconds = med(func(s streamSample) float64 { return s.wall.Seconds() })
	row.MBps = med(func(s streamSample) float64 { return MBps(s.bytes, s.wall) })
	row.SenderCPUPerGiB = med(func(s streamSample) float64 { return s.senderCPU.Seconds() }) / g
	row.ReceiverCPUPerGiB = med(func(s streamSample) float64 { return s.receiverCPU.Seconds() }) / g
	row.ReceiverHeapPerGiB = med(func(s streamSample) float64 { return float64(s.heap) }) / g
	row.ReceiverPeakRSS = int64(med(func(s streamSample) float64 { return float64(s.peakRSS) }))
	row.SenderPeakRSS = int64(med(func(s streamSample) float64 { return float64(s.senderRSS) }))
	return row
}

// streamChecks compares the rows with the targets of the streaming issue: partial streaming
// at >= 80% of the raw transfer's rate, its receiver at <= 1.15x the raw receiver's CPU per
// GiB, and every streaming receiver within 8 MiB of heap per GiB and 256 MiB peak RSS; over
// the TCP data plane, partial streaming at >= 60% of the raw TCP transfer's rate; over the
// TLS data plane, at >= 80% of the raw Go TLS transfer's.
func streamChecks(rows []StreamRow) []StreamCheck {
	by := map[string]StreamRow{}
	for _, r := range rows {
		by[r.Config] = r
	}
	var out []StreamCheck
	raw, partial := by[cfgRaw], by[cfgPartial]
	if raw.OK() && partial.OK() && raw.MBps > 0 && raw.ReceiverCPUPerGiB > 0 {
		thr := partial.MBps / raw.MBps
		out = append(out, StreamCheck{Name: "(b) MB/s / (a) MB/s", Measured: thr, Unit: "x", Target: ">= 0.80", Met: thr >= 0.80})
		cpu := partial.ReceiverCPUPerGiB / raw.ReceiverCPUPerGiB
		out = append(out, StreamCheck{Name: "(b) receiver CPU/GiB / (a)'s", Measured: cpu, Unit: "x", Target: "<= 1.15", Met: cpu <= 1.15})
	}
	rawTCP, partialTCP := by[cfgRawTCP], by[cfgPartialTCP]
	if rawTCP.OK() && partialTCP.OK() && rawTCP.MBps > 0 {
		thr := partialTCP.MBps / rawTCP.MBps
		out = append(out, StreamCheck{Name: "(f) MB/s / (e) MB/s", Measured: thr, Unit: "x", Target: ">= 0.60", Met: thr >= 0.60})
	}
	rawTLS, partialTLS := by[cfgRawTLS], by[cfgPartialTLS]
	if rawTLS.OK() && partialTLS.OK() && rawTLS.MBps > 0 {
		thr := partialTLS.MBps / rawTLS.MBps
		out = append(out, StreamCheck{Name: "(h) MB/s / (g) MB/s", Measured: thr, Unit: "x", Target: ">= 0.80", Met: thr >= 0.80})
	}
	entire, many := by[cfgEntire], by[cfgMany]
	if entire.OK() && many.OK() && many.MBps > 0 {
		// Time per byte of the many sstables against one sstable of the same bytes.
		per := entire.MBps / many.MBps
		out = append(out, StreamCheck{Name: "(i) time per byte / (d)'s", Measured: per, Unit: "x", Target: "<= 1.50", Met: per <= 1.5})
	}
	for _, r := range rows {
		if !r.OK() || r.Config == cfgRaw || r.Config == cfgRawTCP || r.Config == cfgRawTLS {
			continue
		}
		heap := r.ReceiverHeapPerGiB / (1 << 20)
		out = append(out, StreamCheck{Name: profileName(r.Config) + ": receiver heap per GiB streamed", Measured: heap, Unit: "MiB",
			Target: "<= 8", Met: heap <= 8})
		rss := float64(r.ReceiverPeakRSS) / (1 << 20)
		out = append(out, StreamCheck{Name: profileName(r.Config) + ": receiver peak RSS", Measured: rss, Unit: "MiB",
			Target: "<= 256", Met: rss <= 256})
	}
	return out
}

// streamWorld is one benchmark run's files: the cluster's certificates, the node's data
// directory (hard links to the parent) and the receivers' directories.
type streamWorld struct {
	o         StreamOptions
	tmp       string
	tlsDir    string
	data      string // the node's data directory
	dataFile  string // the parent's Data.db
	half      token.RangeSet
	halfBytes int64
	parent    descriptor.Descriptor // the parent the node serves
	// partitionSize is the parent's partition size (its generator's, the default filled in).
	partitionSize int
	stem          string // parentStem: the parent in file names
	label         string // a pair run's: StreamParent.Label
}

func (w *streamWorld) makeTLS() error {
	if err := tlsx.WriteCA(w.tlsDir, false); err != nil {
		return err
	}
	for _, name := range []string{senderName, receiverName} {
		if err := tlsx.WriteNode(w.tlsDir, name, nil, false); err != nil {
			return err
		}
	}
	return nil
}

// makeNodeData gives the node two tables made of hard links to the parent's files: stress,
// the parent as it is, and stress_legacy, whose own Statistics.db says the parent has legacy
// counter shards, which refuses zero-copy and sends it down the rows path.
func (w *streamWorld) makeNodeData(parent descriptor.Descriptor) error {
	files, err := filepath.Glob(parent.Prefix() + "-*")
	if err != nil {
		return err
	}
	for _, table := range []string{benchTable, legacyTable} {
		dir := gen.TableDir(w.data, benchKeyspace, table)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, f := range files {
			dst := filepath.Join(dir, filepath.Base(f))
			if table == legacyTable && f == parent.Path(descriptor.Statistics) {
				continue
			}
			if err := os.Link(f, dst); err != nil {
				return fmt.Errorf("linking the parent into the node's data directory (same file system needed): %w", err)
			}
		}
		if table != legacyTable {
			continue
		}
		raw, err := os.ReadFile(parent.Path(descriptor.Statistics))
		if err != nil {
			return err
		}
		st, err := stats.Parse(raw, parent.Version)
		if err != nil {
			return err
		}
		if st.Stats == nil {
			return fmt.Errorf("%s: no stats component", parent.Path(descriptor.Statistics))
		}
		st.Stats.HasLegacyCounterShards = true
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(parent.Path(descriptor.Statistics))), st.Append(nil, parent.Version), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// manyFor splits parent into n sstables of about equal size (slice.EqualRanges, rewrite
// mode: ordinary sstables without dead bytes) in a directory under the parent's root, reused while it
// holds n sstables, and returns that directory.
func manyFor(ctx context.Context, parent descriptor.Descriptor, n int, logf func(string, ...any)) (string, error) {
	// The parent's root (the parent-SIZE directory above keyspace/table), so that a new
	// parent replaces its splits too.
	out := filepath.Join(filepath.Dir(filepath.Dir(parent.Dir)), fmt.Sprintf("many-%d", n))
	if ds, err := descriptor.List(out); err == nil && len(ds) == n {
		logf("reusing %d sstables in %s", n, out)
		return out, nil
	}
	if err := os.RemoveAll(out); err != nil {
		return "", err
	}
	logf("splitting %s into %d sstables in %s", parent, n, out)
	t, err := sstable.Open(parent.Prefix())
	if err != nil {
		return "", err
	}
	defer t.Close()
	ranges, err := slice.EqualRanges(t, n)
	if err != nil {
		return "", err
	}
	res, err := slice.Split(ctx, t, ranges, out, slice.Options{Mode: slice.ModeRewrite})
	if err != nil {
		return "", err
	}
	if len(res.Children) != n {
		os.RemoveAll(out)
		return "", fmt.Errorf("bench stream: splitting %s %d ways gave %d sstables (too few partitions?)", parent, n, len(res.Children))
	}
	return out, nil
}

// linkTable hard-links every file of the sstable directory src into the table directory dst.
func linkTable(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := os.Link(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return fmt.Errorf("linking %s into the node's data directory: %w", e.Name(), err)
			}
		}
	}
	return nil
}

func (w *streamWorld) profile(name, side string) string {
	if w.o.CPUProfileDir == "" {
		return ""
	}
	return filepath.Join(w.o.CPUProfileDir, name+"-"+side+".pprof")
}

// runRaw is configuration (a): a raw quic-go server process writes w.halfBytes of the
// parent's Data.db over one stream to a raw client process, which writes them to a file and
// fsyncs it.
func (w *streamWorld) runRaw(ctx context.Context, name string) (streamSample, error) {
	srv, err := w.startServer(ctx, name, []string{"bench", "quic-raw-serve", "--file", w.dataFile, "--addr", "127.0.0.1:0",
		"--tls-dir", w.tlsDir, "--name", senderName}, rawReadyAddr, false)
	if err != nil {
		return streamSample{}, err
	}
	defer srv.stop()
	return w.rawReceive(ctx, srv, name, "raw fetch", []string{"bench", "quic-raw-fetch", "--peer", srv.addr,
		"--tls-dir", w.tlsDir, "--name", receiverName})
}

// rawReceive runs a raw baseline's receiving process (args, plus the length and the output
// file), which prints a RawFetchResult, and checks it received exactly w.halfBytes.
func (w *streamWorld) rawReceive(ctx context.Context, srv *server, name, what string, args []string) (streamSample, error) {
	out := filepath.Join(w.tmp, name+"-received")
	defer os.Remove(out)
	var got RawFetchResult
	args = append(args, "--length", strconv.FormatInt(w.halfBytes, 10), "--out", out)
	s, stdout, err := w.receive(ctx, srv, name, args)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		return s, fmt.Errorf("%s printed %q: %w", what, stdout, err)
	}
	if got.Bytes != w.halfBytes {
		return s, fmt.Errorf("%s received %d bytes, want %d", what, got.Bytes, w.halfBytes)
	}
	s.status, s.kinds, s.bytes, s.wall = "ok", "raw", got.Bytes, secondsDuration(got.Wall)
	return s, nil
}

// fetchOutput is the part of `sluice stream fetch --json` the benchmark reads.
type fetchOutput struct {
	SSTables []fetchedOutput `json:"sstables"`
	Failed   []string        `json:"failed"`
	Bytes    int64           `json:"bytes_received"`
	Wall     float64         `json:"wall_seconds"`
}

// fetchedOutput is one sstable in `stream fetch --json`.
type fetchedOutput struct {
	Path  string `json:"path"` // its Data.db
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
	Runs  int    `json:"runs"`
	// The receiver's fill of a partial: filler partitions' bytes, re-encoded edge chunks.
	FillerBytes    int64 `json:"filler_bytes"`
	ReencodedBytes int64 `json:"reencoded_bytes"`
}

// runFetch is configurations (b) to (d) and (f): a `sluice run` node sends, `sluice stream
// fetch` receives ranges of table into a fresh table directory, both on transport.
func (w *streamWorld) runFetch(ctx context.Context, name, table string, ranges token.RangeSet, transport string) (streamSample, error) {
	args := []string{"run", "--name", senderName, "--data-dir", w.data, "--tls-dir", w.tlsDir,
		"--stream-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}
	var fetchArgs []string
	if transport != "quic" {
		// The node's transport is set only by its configuration file.
		yaml := "transport: " + transport + "\n"
		if w.o.TCPCongestion != "" {
			yaml += "tcp_congestion: " + w.o.TCPCongestion + "\n"
			fetchArgs = append(fetchArgs, "--tcp-congestion", w.o.TCPCongestion)
		}
		conf := filepath.Join(w.tmp, "sluice-"+transport+".yaml")
		if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
			return streamSample{}, err
		}
		args = append(args, "--config", conf)
	}
	srv, err := w.startServer(ctx, name, args, nodeReadyAddr, true)
	if err != nil {
		return streamSample{}, err
	}
	defer srv.stop()
	recvRoot := filepath.Join(w.tmp, "received-"+name)
	defer os.RemoveAll(recvRoot)
	s, stdout, err := w.receive(ctx, srv, name, append([]string{"stream", "fetch", "--peer", srv.addr, "--keyspace", benchKeyspace,
		"--table", table, "--ranges", ranges.String(), "--out", gen.TableDir(recvRoot, benchKeyspace, table),
		"--tls-dir", w.tlsDir, "--name", receiverName, "--transport", transport, "--json"}, fetchArgs...))
	var got fetchOutput
	if jerr := json.Unmarshal(stdout, &got); jerr != nil {
		if err != nil {
			return s, err
		}
		return s, fmt.Errorf("stream fetch printed %q: %w", stdout, jerr)
	}
	if err != nil {
		if why, ok := refusedOnly(got); ok {
			s.status, s.note = "not supported", why
			return s, nil
		}
		if table == legacyTable {
			// The rows path is the newest; its failure is reported in its row and does not
			// cost the other configurations' numbers.
			s.status, s.note = "failed", truncated(strings.Join(got.Failed, "; "), 400)
			if s.note == "" {
				s.note = truncated(err.Error(), 400)
			}
			return s, nil
		}
		return s, err
	}
	kinds := map[string]int{}
	for _, f := range got.SSTables {
		kinds[f.Kind]++
	}
	var ks []string
	for k, n := range kinds {
		ks = append(ks, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(ks)
	s.status, s.kinds, s.bytes, s.wall = "ok", strings.Join(ks, ", "), got.Bytes, secondsDuration(got.Wall)
	s.fetched = got
	if len(got.SSTables) == 0 || got.Bytes == 0 {
		return s, fmt.Errorf("stream fetch installed nothing: %s", stdout)
	}
	if s.filterBytes, err = largestFilter(got.SSTables); err != nil {
		return s, err
	}
	return s, nil
}

// largestFilter is the size of the largest Filter.db among the fetched sstables: the bloom
// filter a receiver holds (outside the Go heap) while it rebuilds that sstable, sized from
// its partition count, as Cassandra holds every open sstable's. It is the output's own
// component, so memory benchmarks report it beside the peak RSS.
func largestFilter(ss []fetchedOutput) (int64, error) {
	var most int64
	for _, f := range ss {
		prefix, ok := strings.CutSuffix(f.Path, "Data.db")
		if !ok {
			return 0, fmt.Errorf("stream fetch printed the path %q, not a Data.db", f.Path)
		}
		fi, err := os.Stat(prefix + "Filter.db")
		if errors.Is(err, os.ErrNotExist) {
			continue // a table without a filter (bloom_filter_fp_chance 1)
		}
		if err != nil {
			return 0, err
		}
		most = max(most, fi.Size())
	}
	return most, nil
}

// refusedOnly reports whether a fetch installed nothing because every sstable was refused
// (the sender or receiver does not implement its kind), and the first reason.
func refusedOnly(f fetchOutput) (string, bool) {
	if len(f.SSTables) != 0 || len(f.Failed) == 0 {
		return "", false
	}
	for _, e := range f.Failed {
		if !strings.Contains(e, "(refused)") {
			return "", false
		}
	}
	why := f.Failed[0]
	if i := strings.LastIndex(why, ": "); i >= 0 {
		why = why[i+2:]
	}
	return why, true
}

func secondsDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// receive runs one receiver process under `bench measure` while srv serves, and returns its
// measurements and standard output. The sender's CPU is its /proc stat delta over the
// receiver's life; the receiver's CPU and peak RSS are its rusage, its heap what `bench
// measure` reports. A receiver exiting non-zero returns its output and an error.
func (w *streamWorld) receive(ctx context.Context, srv *server, name string, args []string) (streamSample, []byte, error) {
	var s streamSample
	report := filepath.Join(w.tmp, name+"-measure.json")
	defer os.Remove(report)
	margs := []string{"bench", "measure", "--report", report}
	if p := w.profile(name, "receiver"); p != "" {
		stem := strings.TrimSuffix(p, ".pprof")
		margs = append(margs, "--cpuprofile", p, "--memprofile", stem+".allocs.pprof", "--heapprofile", stem+".peakheap.pprof")
	}
	margs = append(append(append(margs, "--"), "--log-format", "json"), args...)
	cmd := exec.CommandContext(ctx, w.o.Exe, margs...)
	cmd.Env = w.o.Env
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	cmd.WaitDelay = stopWithin
	cpu0, err := procCPU(srv.cmd.Process.Pid)
	if err != nil {
		return s, nil, err
	}
	runErr := cmd.Run()
	cpu1, err := procCPU(srv.cmd.Process.Pid)
	if err != nil {
		return s, nil, fmt.Errorf("sender: %w (its output: %s)", err, srv.output.String())
	}
	s.senderCPU = cpu1 - cpu0
	s.senderRSS, _ = procPeakRSS(srv.cmd.Process.Pid)
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			s.receiverCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			s.peakRSS = ru.Maxrss << 10 // KiB on Linux
		}
	}
	if runErr != nil {
		return s, stdout.Bytes(), fmt.Errorf("receiver %v: %w: %s", args[:2], runErr, strings.TrimSpace(stderr.String()))
	}
	var m MeasureReport
	b, err := os.ReadFile(report)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		return s, stdout.Bytes(), fmt.Errorf("receiver's measure report: %w", err)
	}
	s.heap = m.HeapBytes
	if m.PeakRSS > 0 {
		s.peakRSS = m.PeakRSS
	}
	return s, stdout.Bytes(), nil
}

// MeasureReport is what the hidden `sluice bench measure` writes about the command it ran
// in-process.
type MeasureReport struct {
	HeapBytes uint64  `json:"heap_allocated_bytes"` // runtime.MemStats.TotalAlloc delta
	Mallocs   uint64  `json:"mallocs"`
	CPU       float64 `json:"cpu_seconds"` // the process's, start-up included
	Wall      float64 `json:"wall_seconds"`
	ExitCode  int     `json:"exit_code"`
	// PeakRSS is the process's VmHWM, which exec resets: the child's own, unlike the rusage
	// maxrss a parent sees, which keeps the forking process's high-water mark.
	PeakRSS int64 `json:"peak_rss_bytes"`
}

// server is a long-running child process: the raw sender or a node.
type server struct {
	cmd    *exec.Cmd
	addr   string
	output *tailBuffer
	exited chan struct{}
}

// startServer starts a child and waits until ready finds its address in a line of its
// standard output (or error, fromStderr). The child is killed if it is not ready in time.
func (w *streamWorld) startServer(ctx context.Context, name string, args []string, ready func(line []byte) string, fromStderr bool) (*server, error) {
	if p := w.profile(name, "sender"); p != "" {
		args = append([]string{"bench", "measure", "--report", os.DevNull, "--cpuprofile", p,
			"--heapprofile", strings.TrimSuffix(p, ".pprof") + ".peakheap.pprof", "--", "--log-format", "json"}, args...)
	} else {
		args = append([]string{"--log-format", "json"}, args...)
	}
	// Not CommandContext: the server must outlive a run's context only until stop, which
	// every caller defers; stop kills it if SIGTERM does not end it.
	cmd := exec.Command(w.o.Exe, args...)
	cmd.Env = w.o.Env
	out := &tailBuffer{max: 64 << 10}
	pr, pw := io.Pipe()
	if fromStderr {
		cmd.Stdout, cmd.Stderr = out, io.MultiWriter(out, pw)
	} else {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(out, pw), out
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, output: out, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		pw.Close()
		close(s.exited)
	}()
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			if !found {
				if a := ready(sc.Bytes()); a != "" {
					found = true
					addrc <- a
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	timer := time.NewTimer(nodeReadyWithin)
	defer timer.Stop()
	select {
	case s.addr = <-addrc:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("%v exited before it was ready: %s", args, strings.TrimSpace(out.String()))
	case <-timer.C:
		s.stop()
		return nil, fmt.Errorf("%v not ready within %v: %s", args, nodeReadyWithin, strings.TrimSpace(out.String()))
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

// stop asks the server to stop (SIGTERM), and kills it if it has not within stopWithin.
func (s *server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(stopWithin):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// nodeReadyAddr finds the stream address in the node's "node running" JSON log line.
func nodeReadyAddr(line []byte) string {
	var l struct {
		Message    string `json:"message"`
		StreamAddr string `json:"stream_addr"`
	}
	if json.Unmarshal(line, &l) != nil || l.Message != "node running" {
		return ""
	}
	return l.StreamAddr
}

// rawReadyAddr finds the address in quic-raw-serve's {"addr": ...} line.
func rawReadyAddr(line []byte) string {
	var l struct {
		Addr string `json:"addr"`
	}
	if json.Unmarshal(line, &l) != nil {
		return ""
	}
	return l.Addr
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times; 100 on every Linux port Go
// supports.
const clockTicks = 100

// procCPU is the user + system time of process pid so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(b)
}

// parseProcStatCPU reads utime + stime (fields 14 and 15) of a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may hold spaces and parentheses, so fields
// are counted from the last ')'.
func parseProcStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command name", b)
	}
	// After ") ": field 3 (state) is f[0], so utime (14) is f[11] and stime (15) f[12].
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("/proc stat: bad CPU time %q", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// PeakRSS is process pid's peak resident set (VmHWM) in bytes.
func PeakRSS(pid int) (int64, error) { return procPeakRSS(pid) }

// procPeakRSS is process pid's peak resident set (VmHWM) in bytes.
func procPeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kib << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// RawQUICConfig is the quic-go configuration of the raw transfer: stream's own flow-control
// windows (stream.quicConfig), so that the limit is measured under the same settings.
// streamWindow, when positive, replaces the maximum stream receive window (and doubles as
// the connection's), to see what larger windows buy.
func RawQUICConfig(streamWindow int64) *quic.Config {
	c := &quic.Config{
		HandshakeIdleTimeout:           10 * time.Second,
		MaxIdleTimeout:                 30 * time.Second,
		KeepAlivePeriod:                10 * time.Second,
		MaxIncomingStreams:             4,
		MaxIncomingUniStreams:          64,
		InitialStreamReceiveWindow:     1 << 20,
		MaxStreamReceiveWindow:         2 << 20,
		InitialConnectionReceiveWindow: 2 << 20,
		MaxConnectionReceiveWindow:     4 << 20,
	}
	if streamWindow > 0 {
		c.MaxStreamReceiveWindow = uint64(streamWindow)
		c.MaxConnectionReceiveWindow = 2 * uint64(streamWindow)
	}
	return c
}

// RawServeOptions configures the raw quic-go sender.
type RawServeOptions struct {
	File         string // the bytes to send, from offset 0
	Addr         string // UDP address to listen on
	TLS          *tls.Config
	BufferSize   int   // bytes per Write; default 1 MiB, stream's default frame payload
	StreamWindow int64 // see RawQUICConfig
}

// RawServe listens on o.Addr, calls ready with the bound address, and serves until ctx
// ends: each connection opens one bidirectional stream and writes the length it wants (8
// bytes, big endian); the server answers with that many bytes of o.File read with ReadAt
// into one buffer and written with one Write each, as stream's sender does, then closes
// the stream.
func RawServe(ctx context.Context, o RawServeOptions, ready func(addr string)) error {
	if o.BufferSize <= 0 {
		o.BufferSize = 1 << 20
	}
	f, err := os.Open(o.File)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	ln, err := quic.ListenAddr(o.Addr, o.TLS, RawQUICConfig(o.StreamWindow))
	if err != nil {
		return err
	}
	defer ln.Close()
	ready(ln.Addr().String())
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rawSend(ctx, conn, f, fi.Size(), o.BufferSize); err != nil {
				conn.CloseWithError(1, truncated(err.Error(), 256))
				return
			}
			// The client closes the connection once it has everything on disk.
			select {
			case <-conn.Context().Done():
			case <-ctx.Done():
				conn.CloseWithError(0, "")
			}
		}()
	}
}

func rawSend(ctx context.Context, conn *quic.Conn, f *os.File, size int64, bufSize int) error {
	s, err := conn.AcceptStream(ctx)
	if err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(s, hdr[:]); err != nil {
		return err
	}
	n := int64(binary.BigEndian.Uint64(hdr[:]))
	if n < 0 || n > size {
		s.CancelWrite(1)
		return fmt.Errorf("asked for %d bytes of a %d-byte file", n, size)
	}
	buf := make([]byte, bufSize)
	for off := int64(0); off < n; {
		k := min(int64(len(buf)), n-off)
		if _, err := f.ReadAt(buf[:k], off); err != nil {
			s.CancelWrite(1)
			return err
		}
		if _, err := s.Write(buf[:k]); err != nil {
			return err
		}
		off += k
	}
	return s.Close()
}

func truncated(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// RawFetchOptions configures the raw quic-go receiver.
type RawFetchOptions struct {
	Peer         string
	Length       int64
	Out          string // file written (created or truncated) and fsynced
	TLS          *tls.Config
	BufferSize   int // bytes per file Write; default 1 MiB, stream's frame payload
	StreamWindow int64
}

// RawFetchResult is what RawFetch received.
type RawFetchResult struct {
	Bytes int64   `json:"bytes"`
	Wall  float64 `json:"wall_seconds"` // dial to fsync done
}

// RawFetch dials o.Peer, asks for o.Length bytes and writes them to o.Out in buffers of
// o.BufferSize, as stream's receiver writes a frame's payload once the frame is whole, then
// fsyncs the file and closes the connection.
func RawFetch(ctx context.Context, o RawFetchOptions) (RawFetchResult, error) {
	if o.BufferSize <= 0 {
		o.BufferSize = 1 << 20
	}
	start := time.Now()
	var res RawFetchResult
	conn, err := quic.DialAddr(ctx, o.Peer, o.TLS, RawQUICConfig(o.StreamWindow))
	if err != nil {
		return res, err
	}
	defer conn.CloseWithError(0, "")
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return res, err
	}
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(o.Length))
	if _, err := s.Write(hdr[:]); err != nil {
		return res, err
	}
	if err := s.Close(); err != nil {
		return res, err
	}
	out, err := os.Create(o.Out)
	if err != nil {
		return res, err
	}
	defer out.Close()
	buf := make([]byte, o.BufferSize)
	for {
		k, rerr := io.ReadFull(s, buf)
		if k > 0 {
			if _, err := out.Write(buf[:k]); err != nil {
				return res, err
			}
			res.Bytes += int64(k)
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return res, rerr
		}
	}
	if err := out.Sync(); err != nil {
		return res, err
	}
	if res.Bytes != o.Length {
		return res, fmt.Errorf("received %d bytes, asked for %d", res.Bytes, o.Length)
	}
	res.Wall = time.Since(start).Seconds()
	return res, nil
}

// runRawTCP is configuration (e): a raw TCP server process sends w.halfBytes of the
// parent's Data.db with sendfile to a raw client process, which splices them into a file
// and fsyncs it: the limit of the TCP data plane on this machine. Under --transport tls it
// is configuration (g): the same over Go's TLS 1.3 with the nodes' certificates, the bytes
// read and written through 1 MiB buffers (a TLS connection cannot sendfile or splice).
func (w *streamWorld) runRawTCP(ctx context.Context, name string) (streamSample, error) {
	serve := []string{"bench", "tcp-raw-serve", "--file", w.dataFile, "--addr", "127.0.0.1:0"}
	var fetchTLS []string
	if w.o.Transport == "tls" {
		serve = append(serve, "--tls-dir", w.tlsDir, "--name", senderName)
		fetchTLS = []string{"--tls-dir", w.tlsDir, "--name", receiverName}
	}
	srv, err := w.startServer(ctx, name, serve, rawReadyAddr, false)
	if err != nil {
		return streamSample{}, err
	}
	defer srv.stop()
	return w.rawReceive(ctx, srv, name, "raw TCP fetch", append([]string{"bench", "tcp-raw-fetch", "--peer", srv.addr}, fetchTLS...))
}

// RawTCPServe listens on the TCP address addr, calls ready with the bound address, and
// serves until ctx ends: each connection writes the length it wants (8 bytes, big endian)
// and gets that many bytes of file from offset 0, sent with one sendfile loop
// (fsx.Sendfile), then the server closes its side. No TLS: this is the TCP data plane's
// unencrypted bulk path without its framing or checks. With tlsConf every connection is
// TLS (tlsConf must ask for client certificates as a node's does) and the file is read and
// written through one 1 MiB buffer: the TLS data plane's limit.
func RawTCPServe(ctx context.Context, file, addr string, tlsConf *tls.Config, ready func(addr string)) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	ready(ln.Addr().String())
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			var hdr [8]byte
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return
			}
			n := int64(binary.BigEndian.Uint64(hdr[:]))
			if n < 0 || n > fi.Size() {
				return
			}
			if tlsConf != nil {
				if _, err := io.CopyBuffer(c, io.NewSectionReader(f, 0, n), make([]byte, rawTLSBuffer)); err != nil {
					return
				}
			} else if _, err := fsx.Sendfile(ctx, c.(*net.TCPConn), f, 0, n); err != nil {
				return
			}
			// Wait for the client to close once its file is synced.
			io.Copy(io.Discard, c)
		}()
	}
}

// rawTLSBuffer is the raw TLS transfer's read and write size: the data plane's frame payload.
const rawTLSBuffer = 1 << 20

// RawTCPFetch dials peer, asks for length bytes and splices them into out (created or
// truncated) with fsx.SpliceToFile, then fsyncs it; with tlsConf, over TLS, read through
// one 1 MiB buffer and written to out. Wall runs from dial to fsync done, the TLS handshake
// included.
func RawTCPFetch(ctx context.Context, peer string, length int64, out string, tlsConf *tls.Config) (RawFetchResult, error) {
	start := time.Now()
	var res RawFetchResult
	var c net.Conn
	var err error
	if tlsConf != nil {
		d := tls.Dialer{Config: tlsConf}
		c, err = d.DialContext(ctx, "tcp", peer)
	} else {
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", peer)
	}
	if err != nil {
		return res, err
	}
	defer c.Close()
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(length))
	if _, err := c.Write(hdr[:]); err != nil {
		return res, err
	}
	f, err := os.Create(out)
	if err != nil {
		return res, err
	}
	defer f.Close()
	if tlsConf != nil {
		res.Bytes, err = io.CopyBuffer(struct{ io.Writer }{f}, io.LimitReader(c, length), make([]byte, rawTLSBuffer))
		if err == nil && res.Bytes < length {
			err = io.ErrUnexpectedEOF
		}
	} else {
		res.Bytes, err = fsx.SpliceToFile(ctx, f, 0, c.(*net.TCPConn), length)
	}
	if err != nil {
		return res, err
	}
	if err := f.Sync(); err != nil {
		return res, err
	}
	res.Wall = time.Since(start).Seconds()
	return res, nil
}
