package testcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/token"
)

// CheckReport is what Check found. OK means every count but PartitionsChecked and SSTables
// is zero.
type CheckReport struct {
	OK                bool `json:"ok"`
	PartitionsChecked int  `json:"partitions_checked"`
	SSTables          int  `json:"sstables"`
	Lost              int  `json:"lost"`      // held by no member at all
	Misplaced         int  `json:"misplaced"` // held, but not by exactly its replicas
	// Diverged counts (replica, partition) pairs whose reconciled content differs from the
	// reference: an update or a deletion missing (a resurrected row), or a corrupt copy.
	Diverged    int      `json:"diverged"`
	Duplicated  int      `json:"duplicated"` // one member holds more copies than flushes wrote (not a failure with Options.AllowDuplicates)
	Unknown     int      `json:"unknown"`    // keys that were never generated
	TempFiles   int      `json:"temp_files"` // fsx.TempPrefix files in table directories
	BadSSTables int      `json:"bad_sstables"`
	Members     []string `json:"members"`
	Problems    []string `json:"problems,omitempty"` // the first few, for the reader

	census *Census // what the check read
}

const maxProblems = 20

func (r *CheckReport) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// RingOf builds the ring a node reports in GET /v1/ring; every member must be NORMAL (a ring
// with an operation in flight has no single placement to check against).
func RingOf(v adminapi.RingView) (ring.Ring, error) {
	tokens := map[string][]token.Token{}
	for _, t := range v.Tokens {
		tokens[t.Node] = append(tokens[t.Node], token.Token{Kind: token.KindMurmur3, Long: t.Token})
	}
	var ms []ring.Member
	for _, m := range v.Members {
		if m.State == ring.Left.String() || m.Liveness == "left" || m.ReplacedBy != "" {
			continue
		}
		if m.State != ring.Normal.String() {
			return ring.Ring{}, fmt.Errorf("testcluster: %s is %q: the ring is not settled", m.Name, m.State)
		}
		ms = append(ms, ring.Member{Node: ring.Node{Name: m.Name, DC: m.DC, Rack: m.Rack}, State: ring.Normal, Tokens: tokens[m.Name]})
	}
	return ring.NewRing(ms...)
}

// Check verifies the cluster's invariant against the ring of the first running node: every
// generated partition is held by exactly its replicas, and on each of them the reconciled
// content of all its copies (last write wins, deletions applied: repair.Hasher) equals the
// reference's, so nothing is lost and nothing deleted comes back; no member holds anything
// else; no table directory holds an install's temporary file; every sstable passes
// sstable.Verify (extended: every row). Nodes that are not ring members (left, stopped) are
// not looked at.
func (c *Cluster) Check(ctx context.Context) (*CheckReport, error) {
	if c.Data == nil {
		return nil, fmt.Errorf("testcluster: nothing was seeded")
	}
	r, err := c.settledRing(ctx, 30*time.Second)
	if err != nil {
		return nil, err
	}
	rep := &CheckReport{}
	var names []string
	for _, m := range r.Members() {
		names = append(names, m.Node.Name)
	}
	rep.Members = names
	cen, err := c.Census(ctx, names, rep)
	if err != nil {
		return nil, err
	}
	rep.census = cen
	for _, k := range c.Data.Keys {
		rep.PartitionsChecked++
		ref := c.Data.Ref[string(k)]
		tok := token.Murmur3.Token(k)
		var want, got []string
		for _, rn := range c.strategy.Replicas(r, tok) {
			want = append(want, rn.Name)
		}
		for _, m := range names {
			h, ok := cen.Held[m][string(k)]
			if !ok {
				continue
			}
			got = append(got, m)
			if h.Hash != ref.Hash {
				rep.Diverged++
				rep.problem("key %s (token %v) on %s: reconciled content differs from the reference (an update or a deletion missing, or a corrupt copy)", k, tok, m)
			}
			if h.Copies > c.Data.Flushes[string(k)] {
				rep.Duplicated++
				rep.problem("key %s: %s holds %d copies, %d flushes wrote it", k, m, h.Copies, c.Data.Flushes[string(k)])
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		switch {
		case len(got) == 0:
			rep.Lost++
			rep.problem("key %s (token %v) lost: replicas %v hold none", k, tok, want)
		case !slices.Equal(want, got):
			rep.Misplaced++
			rep.problem("key %s (token %v) held by %v, replicas %v", k, tok, got, want)
		}
	}
	for _, m := range names {
		for k := range cen.Held[m] {
			if _, ok := c.Data.Ref[k]; !ok {
				rep.Unknown++
				rep.problem("key %x was never generated (held by %s)", k, m)
			}
		}
	}
	failures := rep.Lost + rep.Misplaced + rep.Diverged + rep.Unknown + rep.TempFiles + rep.BadSSTables
	rep.OK = failures+rep.Duplicated == 0 || (c.opts.AllowDuplicates && failures == 0)
	return rep, nil
}

// Census is what the named nodes hold of the keyspace's tables.
type Census struct {
	// Held maps node -> key -> what the node holds of the partition.
	Held map[string]map[string]Holding
	// SSTables counts each node's sstables (Data.db files).
	SSTables map[string]int
	// Layouts are each node's sstables' partition positions and chunk offsets, to work out
	// what shipping their partitions costs after they are gone (cleanup rewrites them).
	Layouts map[string][]Layout
}

// Layout is where an sstable's partitions and chunks are.
type Layout struct {
	Path       string
	Tokens     []int64 // of the partitions, in order
	Positions  []int64 // uncompressed Data.db offsets of the partitions
	DataLength int64   // uncompressed
	FileLength int64   // on disk
	Chunk      int64   // uncompressed chunk length; 0 uncompressed
	Offsets    []int64 // on-disk chunk starts
}

// Ship returns, for the partitions of l within rs, the on-disk bytes of their copies (by the
// compression ratio) and the dead bytes a chunk-granular copy ships with them: the parts of
// the chunks at each run's edges that hold partitions outside rs.
func (l *Layout) Ship(rs token.RangeSet) (live, dead int64) {
	ratio := 1.0
	if l.DataLength > 0 {
		ratio = float64(l.FileLength) / float64(l.DataLength)
	}
	for i := 0; i < len(l.Tokens); {
		if !rs.Contains(token.Token{Kind: token.KindMurmur3, Long: l.Tokens[i]}) {
			i++
			continue
		}
		j := i
		for j < len(l.Tokens) && rs.Contains(token.Token{Kind: token.KindMurmur3, Long: l.Tokens[j]}) {
			j++
		}
		lo, hi := l.Positions[i], l.DataLength
		if j < len(l.Tokens) {
			hi = l.Positions[j]
		}
		est := int64(float64(hi-lo) * ratio)
		live += est
		if l.Chunk > 0 && hi > lo {
			c0, c1 := lo/l.Chunk, (hi-1)/l.Chunk
			end := l.FileLength
			if int(c1+1) < len(l.Offsets) {
				end = l.Offsets[c1+1]
			}
			if int(c0) < len(l.Offsets) {
				dead += max(end-l.Offsets[c0]-est, 0)
			}
		}
		i = j
	}
	return live, dead
}

// Holding is one node's copies of one partition.
type Holding struct {
	Hash   uint64 // reconciled content of all copies
	Copies int
	Bytes  int64 // on disk, all copies (uncompressed lengths scaled by each sstable's ratio)
}

// Census reads every sstable of the named nodes' table directories of the keyspace and
// reconciles each partition's copies. With a report it also verifies every sstable (extended)
// and counts temporary files and bad sstables into it; a bad sstable is left out of the
// census.
func (c *Cluster) Census(ctx context.Context, names []string, rep *CheckReport) (*Census, error) {
	cen := &Census{Held: map[string]map[string]Holding{}, SSTables: map[string]int{}, Layouts: map[string][]Layout{}}
	for _, name := range names {
		n, err := c.Node(name)
		if err != nil {
			return nil, err
		}
		held, layouts, err := c.scanNode(ctx, n, rep)
		if err != nil {
			return nil, err
		}
		cen.Held[name], cen.SSTables[name], cen.Layouts[name] = held, len(layouts), layouts
	}
	return cen, nil
}

// layoutOf reads t's partition index.
func layoutOf(t *sstable.Table) (Layout, error) {
	l := Layout{Path: t.Desc.Path("Data.db"), DataLength: t.DataLength(), FileLength: t.DataFileLength}
	if t.Compression != nil {
		l.Chunk, l.Offsets = int64(t.Compression.ChunkLength), t.Compression.Offsets
	}
	err := t.ScanPartitions(func(p *sstable.Partition) error {
		l.Tokens = append(l.Tokens, p.Token.Long)
		l.Positions = append(l.Positions, p.Position)
		return nil
	})
	return l, err
}

// scanNode reads every sstable in n's table directories of the keyspace.
func (c *Cluster) scanNode(ctx context.Context, n *Node, rep *CheckReport) (map[string]Holding, []Layout, error) {
	tableDirs, err := filepath.Glob(filepath.Join(n.DataDir(), c.opts.Keyspace, "*"))
	if err != nil {
		return nil, nil, err
	}
	bad := func(format string, args ...any) {
		if rep != nil {
			rep.BadSSTables++
			rep.problem(format, args...)
		}
	}
	held := map[string]Holding{}
	var layouts []Layout
	for _, td := range tableDirs {
		ents, err := os.ReadDir(td)
		if err != nil {
			return nil, nil, err
		}
		var tables []*sstable.Table
		var ratios []float64
		for _, e := range ents {
			name := e.Name()
			if strings.HasPrefix(name, fsx.TempPrefix) {
				if rep != nil {
					rep.TempFiles++
					rep.problem("%s: temporary file %s left in %s", n.Name, name, td)
				}
				continue
			}
			if e.IsDir() || !strings.HasSuffix(name, "-Data.db") {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			path := filepath.Join(td, name)
			if rep != nil {
				rep.SSTables++
				vr, err := sstable.Verify(path, sstable.VerifyOptions{Extended: true, Strict: true})
				if err != nil || !vr.OK {
					bad("%s: %s does not verify: %v %v", n.Name, path, err, problemsOf(vr))
					continue
				}
			}
			t, err := sstable.Open(path)
			if err != nil {
				bad("%s: %s: %v", n.Name, path, err)
				continue
			}
			l, err := layoutOf(t)
			if err != nil {
				t.Close()
				bad("%s: %s: %v", n.Name, path, err)
				continue
			}
			layouts = append(layouts, l)
			tables = append(tables, t)
			ratios = append(ratios, compressionRatio(t))
		}
		err = repair.Walk(ctx, tables, nil, func(p *repair.Partition) error {
			h := Holding{Hash: p.Hash, Copies: len(p.Tables)}
			for i, t := range p.Tables {
				h.Bytes += int64(float64(p.Bytes[i]) * ratios[t])
			}
			held[string(p.Key)] = h
			return nil
		})
		for _, t := range tables {
			t.Close()
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			bad("%s: %s: %v", n.Name, td, err)
		}
	}
	return held, layouts, nil
}

func problemsOf(r *sstable.Report) []sstable.Problem {
	if r == nil {
		return nil
	}
	return r.Problems[:min(len(r.Problems), 3)]
}

// settledRing is the ring as a running NORMAL member sees it once every member's tokens have
// arrived: right after a restart a member may be announced before its token set (gossip sends
// them separately), which is a moment to wait out, not a failure.
func (c *Cluster) settledRing(ctx context.Context, d time.Duration) (ring.Ring, error) {
	deadline := time.Now().Add(d)
	var last error
	for {
		for _, name := range c.Names() {
			n := c.MustNode(name)
			if !n.Running() {
				continue
			}
			v, err := n.Ring(ctx)
			if err == nil && v.State != ring.Normal.String() {
				err = fmt.Errorf("%s is %s", name, v.State)
			}
			if err == nil {
				var r ring.Ring
				if r, err = RingOf(v); err == nil {
					return r, nil
				}
			}
			last = err
		}
		if time.Now().After(deadline) {
			return ring.Ring{}, fmt.Errorf("%w: no settled ring after %s: %v", ErrTimeout, d, last)
		}
		select {
		case <-ctx.Done():
			return ring.Ring{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
