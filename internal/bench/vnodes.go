package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
)

// VnodesOptions configures `sluice bench vnodes`: streaming a vnode-shaped range set out of
// one parent against one range of about the same size.
type VnodesOptions struct {
	Dir       string // where the parent lives (reused, as bench split does)
	Size      int64  // parent's uncompressed size
	Ranges    int    // disjoint ranges of the vnode request, one wrapping; default 33
	Transport string // quic (default), tls or tcp
	Exe       string // the sluice binary the sender and receiver run; required
	Env       []string
	Runs      int           // runs per configuration, medians compared; default 3
	Timeout   time.Duration // bounds one run; default 2 min + 2 s per 4 MB
	Logf      func(format string, args ...any)
}

// VnodesReport is the benchmark's result.
type VnodesReport struct {
	ParentData     int64         `json:"parent_data_length"`
	ParentDataFile int64         `json:"parent_data_file_length"`
	ChunkLength    int           `json:"chunk_length"`
	Transport      string        `json:"transport"`
	Runs           int           `json:"runs"`
	Ranges         int           `json:"ranges"`
	Many           VnodesRow     `json:"many_ranges"`
	One            VnodesRow     `json:"one_range"`
	ExpectedBytes  int64         `json:"expected_bytes"` // live runs + index slice (+ BTI rows slice)
	Checks         []StreamCheck `json:"checks"`
}

// VnodesRow is one configuration's median run.
type VnodesRow struct {
	RangeSpec string `json:"ranges"`
	SSTables  int    `json:"sstables"`
	Runs      int    `json:"runs"`
	// FillerBytes and ReencodedBytes are what the receiver's fill added: the filler
	// partitions in the gaps between runs, and the Data.db bytes of the re-encoded edge chunks.
	FillerBytes    int64   `json:"filler_bytes"`
	ReencodedBytes int64   `json:"reencoded_bytes"`
	Bytes          int64   `json:"bytes_received"`
	WallSeconds    float64 `json:"wall_seconds"`
	NsPerByte      float64 `json:"ns_per_byte"`
}

// Vnodes fetches Ranges disjoint ranges (one wrapping) covering about half of a parent, and
// one range covering about the same half, alternately in the same run, and checks the
// multi-run targets: one sstable, time per byte within 1.3x of the one range's, re-encoded
// edge bytes within two chunks per run, and bytes received within 1.02x of the live chunk runs plus the
// index slice.
func Vnodes(ctx context.Context, o VnodesOptions) (*VnodesReport, error) {
	if o.Exe == "" {
		return nil, errors.New("bench vnodes: no sluice binary to run the sender and receiver")
	}
	if o.Ranges <= 1 {
		o.Ranges = 33
	}
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.Transport == "" {
		o.Transport = "quic"
	}
	if o.Timeout <= 0 {
		o.Timeout = 2*time.Minute + time.Duration(o.Size/(4<<20))*2*time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	parent, err := parentFor(ctx, o.Dir, SplitOptions{Size: o.Size, Logf: o.Logf})
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(o.Dir, "sluice-bench-vnodes-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	w := &streamWorld{o: StreamOptions{Exe: o.Exe, Env: o.Env, Logf: o.Logf}, tmp: tmp, tlsDir: filepath.Join(tmp, "tls"), data: filepath.Join(tmp, "node")}
	if err := w.makeTLS(); err != nil {
		return nil, err
	}
	if err := w.makeNodeData(parent); err != nil {
		return nil, err
	}
	t, err := sstable.Open(parent.Prefix())
	if err != nil {
		return nil, err
	}
	many, one, err := vnodeRanges(t, o.Ranges)
	var expected int64
	if err == nil {
		expected, err = shippedBytes(t, many)
	}
	rep := &VnodesReport{ParentData: t.DataLength(), ParentDataFile: t.DataFileLength, Transport: o.Transport, Runs: o.Runs,
		Ranges: len(many), ExpectedBytes: expected}
	if t.Compression != nil {
		rep.ChunkLength = t.Compression.ChunkLength
	}
	t.Close()
	if err != nil {
		return nil, err
	}
	var sm, so []streamSample
	for run := 0; run < o.Runs; run++ {
		for _, c := range []struct {
			ranges token.RangeSet
			out    *[]streamSample
		}{{many, &sm}, {one, &so}} {
			rctx, cancel := context.WithTimeout(ctx, o.Timeout)
			s, err := w.runFetch(rctx, fmt.Sprintf("v%d", len(c.ranges)), benchTable, c.ranges, o.Transport)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("%d ranges, run %d: %w", len(c.ranges), run+1, err)
			}
			o.Logf("%d ranges, run %d: %d bytes in %.3fs", len(c.ranges), run+1, s.bytes, s.wall.Seconds())
			*c.out = append(*c.out, s)
		}
	}
	rep.Many, rep.One = vnodesMedian(many, sm), vnodesMedian(one, so)
	rep.Checks = vnodesChecks(rep)
	return rep, nil
}

// vnodeRanges cuts the parent into 2n equal-count ranges and takes every other one, the last
// joined with the first into one wrapping range, which makes n disjoint ranges over about half
// the partitions; and one range over about the same half.
func vnodeRanges(t *sstable.Table, n int) (many, one token.RangeSet, err error) {
	eq, err := slice.EqualRanges(t, 2*n)
	if err != nil {
		return nil, nil, err
	}
	if len(eq) < 2*n {
		return nil, nil, fmt.Errorf("bench vnodes: the parent is too small for %d ranges", 2*n)
	}
	for k := 1; k < 2*n-2; k += 2 {
		many = append(many, eq[k])
	}
	many = append(many, token.Range{Left: eq[2*n-1].Left, Right: eq[0].Right}) // wraps
	one = token.RangeSet{{Left: eq[n/2].Left, Right: eq[n/2+n].Right}}
	return many, one, nil
}

// shippedBytes is what a partial transfer of ranges must carry: the child's chunk runs, its
// index slice and (BTI) its rows slice.
func shippedBytes(t *sstable.Table, ranges token.RangeSet) (int64, error) {
	ps, _, err := slice.Partials(t, ranges, slice.PartialOptions{OnePerParent: true})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, p := range ps {
		n += p.Layout.FileLength + int64(len(p.Index)+len(p.Rows))
	}
	return n, nil
}

func vnodesMedian(ranges token.RangeSet, ss []streamSample) VnodesRow {
	sort.Slice(ss, func(i, j int) bool {
		return ss[i].wall.Seconds()/float64(ss[i].bytes) < ss[j].wall.Seconds()/float64(ss[j].bytes)
	})
	m := ss[len(ss)/2]
	r := VnodesRow{SSTables: len(m.fetched.SSTables), Bytes: m.bytes, WallSeconds: m.wall.Seconds(),
		NsPerByte: float64(m.wall.Nanoseconds()) / float64(max(m.bytes, 1))}
	if len(ranges) <= 3 {
		r.RangeSpec = ranges.String()
	} else {
		r.RangeSpec = fmt.Sprintf("%d ranges", len(ranges))
	}
	for _, f := range m.fetched.SSTables {
		r.Runs += f.Runs
		r.FillerBytes += f.FillerBytes
		r.ReencodedBytes += f.ReencodedBytes
	}
	return r
}

func vnodesChecks(r *VnodesReport) []StreamCheck {
	ratio := r.Many.NsPerByte / max(r.One.NsPerByte, 1e-12)
	out := []StreamCheck{
		{Name: fmt.Sprintf("%d ranges: sstables installed", r.Ranges), Measured: float64(r.Many.SSTables), Unit: "", Target: "1", Met: r.Many.SSTables == 1},
		{Name: "time per byte / one range's", Measured: ratio, Unit: "x", Target: "<= 1.30", Met: ratio <= 1.3},
	}
	if r.ChunkLength > 0 && r.Many.Runs > 0 {
		perRun := float64(r.Many.ReencodedBytes) / float64(r.Many.Runs) / float64(r.ChunkLength)
		out = append(out, StreamCheck{Name: "re-encoded bytes per run", Measured: perRun, Unit: "chunks", Target: "<= 2", Met: perRun <= 2})
	}
	if r.ExpectedBytes > 0 {
		sent := float64(r.Many.Bytes) / float64(r.ExpectedBytes)
		out = append(out, StreamCheck{Name: "bytes received / (live runs + index slice)", Measured: sent, Unit: "x", Target: "<= 1.02", Met: sent <= 1.02})
	}
	return out
}
