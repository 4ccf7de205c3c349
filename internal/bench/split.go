package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/testkit/loopfs"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// SplitOptions configures `sluice bench split`.
type SplitOptions struct {
	Dir  string // where the parent and children live; ignored with XFS
	XFS  bool   // make a loop-mounted XFS with reflink for the run, and remove it after
	Size int64  // parent's uncompressed size
	Ways int
	Cold bool // evict the parent's pages before each run, and check they were evicted
	Runs int  // medians of this many runs (default 3)
	// PartitionSize is the generated parent's partition size (default 64 KiB, the seed
	// workload's); small ones make a many-partition parent, where the index pass dominates.
	PartitionSize int
	// Version is the generated parent's sstable version (default oa, BIG).
	Version string
	// Exe, when set, times each split as a whole process from outside: `Exe sstable split
	// PARENT --ways N --mode M --digest always|never`, wall from fork to exit, CPU and device I/O from
	// the child's rusage (the measurement: process start, parsing and the --ways
	// pass included). Otherwise each split runs in this process (slice.Split on ranges cut
	// beforehand).
	Exe string
	// Configs, when set, runs only these configurations (rewrite, copy, reflink,
	// reflink-nodigest, rechunk); rewrite, the reference, always runs.
	Configs []string
	Logf    func(format string, args ...any)
}

// SplitRow is one configuration's medians.
type SplitRow struct {
	Config       string  `json:"config"`
	Mode         string  `json:"mode_used"`
	WallSeconds  float64 `json:"wall_seconds"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	ReadBytes    int64   `json:"read_from_device"`
	WrittenBytes int64   `json:"written_to_device"`
	HeapBytes    uint64  `json:"heap_allocated"`
	SpeedupVsRW  float64 `json:"speedup_vs_rewrite"`
	WriteRatio   float64 `json:"rewrite_writes_over_these"`
}

// SplitReport is the whole benchmark.
type SplitReport struct {
	Dir            string     `json:"dir"`
	FileSystem     string     `json:"file_system"`
	ParentData     int64      `json:"parent_data_length"`
	ParentDataFile int64      `json:"parent_data_file_length"`
	IndexBytes     int64      `json:"parent_index_bytes"`
	Partitions     int64      `json:"parent_partitions"`
	Cold           bool       `json:"cold"`
	WholeProcess   bool       `json:"whole_process"`
	Rows           []SplitRow `json:"rows"`
}

type splitConfig struct {
	name     string
	key      string // SplitOptions.Configs
	mode     slice.Mode
	noDigest bool
}

var splitConfigs = []splitConfig{
	{"rewrite", "rewrite", slice.ModeRewrite, false},
	{"copy", "copy", slice.ModeCopy, false},
	{"reflink", "reflink", slice.ModeReflink, false},
	{"reflink + no digest", "reflink-nodigest", slice.ModeReflink, true},
	{"rechunk", "rechunk", slice.ModeRechunk, false},
}

// selected is the configurations o asks for, rewrite first, or an error naming an unknown one.
func (o SplitOptions) selected() ([]splitConfig, error) {
	if len(o.Configs) == 0 {
		return splitConfigs, nil
	}
	want := map[string]bool{"rewrite": true}
	for _, k := range o.Configs {
		known := false
		for _, c := range splitConfigs {
			known = known || c.key == k
		}
		if !known {
			return nil, fmt.Errorf("bench split: configuration %q: want rewrite, copy, reflink, reflink-nodigest or rechunk", k)
		}
		want[k] = true
	}
	var out []splitConfig
	for _, c := range splitConfigs {
		if want[c.key] {
			out = append(out, c)
		}
	}
	return out, nil
}

// Split measures the split modes on one parent of the seed workload's shape.
func Split(ctx context.Context, o SplitOptions) (*SplitReport, error) {
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	configs, err := o.selected()
	if err != nil {
		return nil, err
	}
	dir := o.Dir
	fsName := "as found"
	if o.XFS {
		base, err := os.MkdirTemp(o.Dir, "sluice-bench-xfs-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(base)
		// Sparse: room for the parent and the children of one configuration at a time.
		mnt, unmount, err := loopfs.MountXFS(base, 3*o.Size+(2<<30))
		if err != nil {
			return nil, err
		}
		defer unmount()
		dir, fsName = mnt, "xfs (loop, reflink=1)"
	}
	parent, err := parentFor(ctx, dir, o)
	if err != nil {
		return nil, err
	}
	t, err := sstable.Open(parent.Prefix())
	if err != nil {
		return nil, err
	}
	rep := &SplitReport{Dir: dir, FileSystem: fsName, ParentData: t.DataLength(), ParentDataFile: t.DataFileLength, Cold: o.Cold,
		WholeProcess: o.Exe != ""}
	for _, c := range t.Components {
		if c != descriptor.Data {
			rep.IndexBytes += fileSize(t.Path(c))
		}
	}
	ranges, err := slice.EqualRanges(t, o.Ways)
	if err != nil {
		t.Close()
		return nil, err
	}
	_ = t.ScanPartitions(func(*sstable.Partition) error { rep.Partitions++; return nil })
	t.Close()

	for _, c := range configs {
		var samples []splitSample
		for run := 0; run < o.Runs; run++ {
			var s splitSample
			var err error
			if o.Exe != "" {
				s, err = splitProcess(ctx, o, parent, filepath.Join(dir, "children"), c)
			} else {
				s, err = splitOnce(ctx, parent, ranges, filepath.Join(dir, "children"), c, o.Cold)
			}
			if err != nil {
				return nil, fmt.Errorf("%s, run %d: %w", c.name, run+1, err)
			}
			o.Logf("%s run %d: %.3fs wall", c.name, run+1, s.wall.Seconds())
			samples = append(samples, s)
		}
		rep.Rows = append(rep.Rows, medianRow(c.name, samples))
	}
	base := rep.Rows[0]
	for i := range rep.Rows {
		r := &rep.Rows[i]
		r.SpeedupVsRW = base.WallSeconds / r.WallSeconds
		if r.WrittenBytes > 0 {
			r.WriteRatio = float64(base.WrittenBytes) / float64(r.WrittenBytes)
		}
	}
	return rep, nil
}

type splitSample struct {
	wall, cpu     time.Duration
	read, written int64
	heap          uint64
	mode          slice.Mode
}

// parentFor reuses a parent generated earlier in dir for the same size, or generates one.
func parentFor(ctx context.Context, dir string, o SplitOptions) (descriptor.Descriptor, error) {
	if o.Version == "" {
		o.Version = "oa"
	}
	v, err := version.ParseWritable(o.Version)
	if err != nil {
		return descriptor.Descriptor{}, err
	}
	if o.PartitionSize == defaultPartitionSize {
		// gen's default: --partition-size 64KiB names the default parent, not a second copy.
		o.PartitionSize = 0
	}
	root := filepath.Join(dir, fmt.Sprintf("parent-%d", o.Size))
	if o.PartitionSize > 0 {
		root += fmt.Sprintf("-p%d", o.PartitionSize)
	}
	if o.Version != "oa" {
		root += "-" + o.Version
	}
	tdir := gen.TableDir(root, "sluice", "stress")
	if ds, err := descriptor.List(tdir); err == nil && len(ds) == 1 {
		if rep, err := sstable.Verify(ds[0].Prefix(), sstable.VerifyOptions{}); err == nil && rep.OK {
			o.Logf("reusing parent %s", ds[0])
			return ds[0], nil
		}
		os.RemoveAll(root)
	}
	o.Logf("generating a %d-byte parent in %s", o.Size, root)
	g := gen.Options{Version: v, Size: o.Size, Seed: 1, PartitionSize: o.PartitionSize}
	if o.PartitionSize > 0 && o.PartitionSize < 4<<10 {
		g.RowSize = max(o.PartitionSize/4, 32) // a few rows per partition
	}
	res, err := gen.Generate(ctx, root, g)
	return res.Desc, err
}

func splitOnce(ctx context.Context, parent descriptor.Descriptor, ranges token.RangeSet, out string, c splitConfig, cold bool) (splitSample, error) {
	var s splitSample
	if err := os.RemoveAll(out); err != nil {
		return s, err
	}
	if cold {
		if err := evict(parent); err != nil {
			return s, err
		}
	}
	t, err := sstable.Open(parent.Prefix())
	if err != nil {
		return s, err
	}
	defer t.Close()
	io0, err := fsx.ProcIO()
	if err != nil {
		return s, err
	}
	var res *slice.Result
	m, err := Measure(func() error {
		var err error
		res, err = slice.Split(ctx, t, ranges, out, slice.Options{Mode: c.mode, NoDigest: c.noDigest})
		return err
	})
	if err != nil {
		return s, err
	}
	io1, _ := fsx.ProcIO()
	return splitSample{wall: m.Wall, cpu: m.CPU, read: io1.ReadBytes - io0.ReadBytes,
		written: io1.WriteBytes - io0.WriteBytes, heap: m.HeapBytes, mode: res.Mode}, nil
}

// splitProcess is one split as a whole `sluice sstable split` process, timed from outside:
// wall from the fork to the exit, CPU and device I/O from the child's rusage.
func splitProcess(ctx context.Context, o SplitOptions, parent descriptor.Descriptor, out string, c splitConfig) (splitSample, error) {
	var s splitSample
	if err := os.RemoveAll(out); err != nil {
		return s, err
	}
	if o.Cold {
		if err := evict(parent); err != nil {
			return s, err
		}
	}
	args := []string{"--log-level", "warn", "sstable", "split", parent.Prefix(), "--out", out, "--ways", strconv.Itoa(o.Ways),
		"--mode", string(c.mode), "--json"}
	if c.noDigest {
		args = append(args, "--digest", "never")
	} else {
		args = append(args, "--digest", "always") // the CLI's default (auto) leaves cloned children without
	}
	cmd := exec.CommandContext(ctx, o.Exe, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	s.wall = time.Since(start)
	if err != nil {
		return s, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, truncated(stderr.String(), 400))
	}
	var got struct {
		Mode slice.Mode `json:"mode"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		return s, fmt.Errorf("sstable split printed %q: %w", truncated(stdout.String(), 200), err)
	}
	s.mode = got.Mode
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		// Blocks of 512 bytes, as getrusage counts them.
		s.read, s.written = ru.Inblock*512, ru.Oublock*512
	}
	return s, nil
}

// evict drops the parent's pages from the page cache and checks that Data.db left it.
func evict(d descriptor.Descriptor) error {
	cs, err := filepath.Glob(d.Prefix() + "-*")
	if err != nil {
		return err
	}
	for _, p := range cs {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = fsx.EvictPageCache(f)
		if err == nil && p == d.Path(descriptor.Data) {
			var resident int64
			if resident, err = fsx.ResidentBytes(f); err == nil && resident > 0 {
				err = fmt.Errorf("%d bytes of %s still cached after eviction", resident, p)
			}
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func medianRow(name string, ss []splitSample) SplitRow {
	med := func(f func(splitSample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return SplitRow{
		Config:       name,
		Mode:         string(ss[len(ss)-1].mode),
		WallSeconds:  med(func(s splitSample) float64 { return s.wall.Seconds() }),
		CPUSeconds:   med(func(s splitSample) float64 { return s.cpu.Seconds() }),
		ReadBytes:    int64(med(func(s splitSample) float64 { return float64(s.read) })),
		WrittenBytes: int64(med(func(s splitSample) float64 { return float64(s.written) })),
		HeapBytes:    uint64(med(func(s splitSample) float64 { return float64(s.heap) })),
	}
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}
