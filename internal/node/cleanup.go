package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/generation"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
)

// dirLocks serialise what rewrites a table directory (cleanup, import) against what installs
// into it (fetches): slice.Split and the import start by removing install leftovers, which
// would take a concurrent install's temporaries. Fetches share the lock among themselves.
type dirLocks struct {
	mu sync.Mutex
	m  map[string]*sync.RWMutex
}

func (d *dirLocks) get(dir string) *sync.RWMutex {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]*sync.RWMutex{}
	}
	dir = filepath.Clean(dir)
	l := d.m[dir]
	if l == nil {
		l = &sync.RWMutex{}
		d.m[dir] = l
	}
	return l
}

// StartCleanup removes from this node's tables every partition outside the ranges it must
// keep (ring.CleanupRanges: replicated now or once in-flight changes settle), but only what the
// nodes that own it confirm they hold (confirm.go): the ring says what may go, the owners'
// data says whether it can. A cleanup with something to drop first waits for the ring to be
// unchanged for a gossip round and refuses one with unproven members; each range of the ring
// an owner does not confirm is kept, and the cleanup then fails naming it.
//
// Each sstable becomes at most one: kept whole when nothing lies outside the kept ranges,
// dropped when nothing lies inside, and otherwise sliced (slice.Slice, mode auto: one
// multi-run child of its chunk runs, rechunked gap-free past the slice bounds) in its own
// directory, and then removed, TOC first, so a node's sstable count never rises from cleanup.
// The child is installed before the parent goes, so a crash in between leaves both (the kept
// partitions twice, which reconcile), never a loss.
func (n *Node) StartCleanup(req CleanupRequest) (OpStatus, error) {
	if err := n.refuseOwnRing("cleanup"); err != nil {
		return OpStatus{}, err
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if req.Table != "" && req.Keyspace == "" {
		return OpStatus{}, badRequest{errors.New("cleanup: a table needs its keyspace")}
	}
	if req.Keyspace != "" {
		if err := cqlname.Check("keyspace", req.Keyspace); err != nil {
			return OpStatus{}, badRequest{fmt.Errorf("cleanup: %w", err)}
		}
	}
	if req.Table != "" {
		if err := cqlname.Check("table", req.Table); err != nil {
			return OpStatus{}, badRequest{fmt.Errorf("cleanup: %w", err)}
		}
	}
	if req.Keyspace != "" {
		if _, ok := n.cfg.Keyspaces[req.Keyspace]; !ok {
			return OpStatus{}, fmt.Errorf("cleanup: keyspace %q has no replication in the configuration", req.Keyspace)
		}
	}
	if s := c.state(); s != ring.Normal {
		return OpStatus{}, fmt.Errorf("%w: cleanup needs NORMAL, node is %v", ErrBadState, s)
	}
	detail := strings.TrimSuffix(req.Keyspace+"."+req.Table, ".")
	return n.startOp(OpCleanup, detail, func(ctx context.Context, o *op) error { return c.cleanup(ctx, o, req) })
}

func (c *cluster) cleanup(ctx context.Context, o *op, req CleanupRequest) error {
	r, err := c.g.Ring()
	if err != nil {
		return err
	}
	if m, ok := r.Member(c.n.cfg.Name); !ok || m.State != ring.Normal {
		// Without this node on the ring every range would look foreign.
		return fmt.Errorf("%w: this node is not NORMAL on its own ring view", ErrBadState)
	}
	dirs, err := c.n.catalog.TableDirs()
	if err != nil {
		return err
	}
	mover, err := fsx.NewMover(fsx.Config{})
	if err != nil {
		return err
	}
	trusted := false
	trust := func(ctx context.Context) error {
		if trusted {
			return c.ringUnchanged(r)
		}
		if err := c.trustRing(ctx, r); err != nil {
			return err
		}
		trusted = true
		return nil
	}
	var checks []adminapi.CleanupCheck
	for _, td := range dirs {
		repl, ok := c.n.cfg.Keyspaces[td.Keyspace]
		if !ok || (req.Keyspace != "" && td.Keyspace != req.Keyspace) || (req.Table != "" && td.Table != req.Table) {
			continue
		}
		s, _ := repl.Strategy()
		keep := ring.CleanupRanges(r, s, c.n.cfg.Name)
		chk, err := c.cleanupDir(ctx, o, td, r, s, keep, mover, trust)
		if chk != nil {
			checks = append(checks, *chk)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", td.Path, err)
		}
	}
	return unconfirmedError(checks)
}

// cleanupDir cleans one table directory in two steps. Under the directory's shared lock
// (fetches may add sstables meanwhile, which this cleanup leaves alone) it lists the live
// sstables and, when they hold partitions outside keep, has the ring trusted and the owners
// confirm them; the refused ranges join keep. Then, under the exclusive lock, it cuts those
// sstables. Only operations remove sstables and they run one at a time, so the listed ones
// are still there. The returned check is nil when nothing was to be dropped.
func (c *cluster) cleanupDir(ctx context.Context, o *op, td catalog.TableDir, r ring.Ring, s ring.Strategy, keep token.RangeSet,
	mover *fsx.Mover, trust func(context.Context) error) (*adminapi.CleanupCheck, error) {
	l := c.n.dirLocks.get(td.Path)
	l.RLock()
	live, chk, err := c.confirmDir(ctx, td, r, s, keep, trust)
	l.RUnlock()
	if err != nil {
		return nil, err
	}
	if chk != nil {
		keep = ring.Normalize(append(slices.Clone(keep), chk.kept...))
		if err := trust(ctx); err != nil {
			return &chk.CleanupCheck, err
		}
		o.update(func(st *OpStatus) { st.CleanupChecks = append(st.CleanupChecks, chk.CleanupCheck) })
	}
	l.Lock()
	defer l.Unlock()
	for _, s := range live {
		if err := ctx.Err(); err != nil {
			return checkOf(chk), err
		}
		res, err := cleanupSSTable(ctx, s, keep, mover)
		if err != nil {
			return checkOf(chk), fmt.Errorf("%s: %w", s.Desc.Prefix(), err)
		}
		o.update(func(st *OpStatus) { st.Cleanup = append(st.Cleanup, res) })
	}
	return checkOf(chk), nil
}

// dirCheck is a directory's confirmation and the ranges it keeps beyond the ring's.
type dirCheck struct {
	adminapi.CleanupCheck
	kept token.RangeSet
}

func checkOf(d *dirCheck) *adminapi.CleanupCheck {
	if d == nil {
		return nil
	}
	return &d.CleanupCheck
}

// confirmDir lists the directory's live sstables and, when they hold partitions in the ranges
// keep leaves out, trusts the ring and has the owners confirm them.
func (c *cluster) confirmDir(ctx context.Context, td catalog.TableDir, r ring.Ring, s ring.Strategy, keep token.RangeSet,
	trust func(context.Context) error) ([]catalog.LiveSSTable, *dirCheck, error) {
	live, err := catalog.ListLive(td.Path)
	if err != nil {
		return nil, nil, err
	}
	units := dropUnits(r, s, keep, c.n.cfg.Name)
	if len(units) == 0 || len(live) == 0 {
		return live, nil, nil
	}
	var tables []*sstable.Table
	defer func() {
		for _, t := range tables {
			t.Close()
		}
	}()
	for _, sst := range live {
		t, err := sstable.Open(sst.Desc.Prefix())
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sst.Desc.Prefix(), err)
		}
		tables = append(tables, t)
	}
	cf := &confirmation{units: units, pieces: pieces(units), refused: make([]map[string]*refusal, len(units))}
	if err := countPieces(tables, cf.pieces); err != nil {
		return nil, nil, err
	}
	if !slices.Contains(cf.needed(), true) {
		return live, nil, nil
	}
	if err := trust(ctx); err != nil {
		return nil, nil, err
	}
	if err := c.confirmUnits(ctx, td.Keyspace, td.Table, s, tables, cf); err != nil {
		return nil, nil, err
	}
	return live, &dirCheck{CleanupCheck: cf.report(td.Keyspace, td.Table, td.Path), kept: cf.keptRanges()}, nil
}

// cleanupSSTable keeps, drops or splits one sstable.
func cleanupSSTable(ctx context.Context, s catalog.LiveSSTable, keep token.RangeSet, mover *fsx.Mover) (CleanupResult, error) {
	res := CleanupResult{SSTable: s.Desc.Prefix()}
	t, err := sstable.Open(s.Desc.Prefix())
	if err != nil {
		return res, err
	}
	defer t.Close()
	err = t.ScanPartitions(func(p *sstable.Partition) error {
		res.Partitions++
		if keep.Contains(p.Token) {
			res.Kept++
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	switch res.Kept {
	case res.Partitions:
		res.Action = CleanupKept
		return res, nil
	case 0:
		res.Action = CleanupDropped
	default:
		res.Action = CleanupSplit
		sr, err := slice.Slice(ctx, t, keep, s.Desc.Dir, slice.Options{Mode: slice.ModeAuto, Mover: mover, RechunkPastBounds: true})
		if err != nil {
			return res, err
		}
		for _, ch := range sr.Children {
			res.Children = append(res.Children, ch.Desc.Prefix())
		}
	}
	t.Close()
	return res, removeSSTable(s)
}

// removeSSTable deletes an sstable, TOC first so that it stops being live before any other
// component goes, then syncs the directory.
func removeSSTable(s catalog.LiveSSTable) error {
	for i := len(s.Comps) - 1; i >= 0; i-- { // comps end with the TOC
		if err := os.Remove(s.Desc.Path(s.Comps[i])); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return fsx.SyncDir(s.Desc.Dir)
}

// maxListedProblems bounds the verification problems an import refusal names.
const maxListedProblems = 10

// StartImport verifies every sstable in the directory (sstable.Verify, extended: every row)
// and, only when all are clean, installs copies into the table's directory under fresh
// generations, each atomically (fsx.Install, TOC last). The source directory is left as is.
func (n *Node) StartImport(req ImportRequest) (OpStatus, error) {
	if err := n.refuseOwnRing("import (use sluice cassandra import)"); err != nil {
		return OpStatus{}, err
	}
	if req.Keyspace == "" || req.Table == "" || req.Dir == "" {
		return OpStatus{}, badRequest{errors.New("import: keyspace, table and dir are required")}
	}
	if err := cqlname.CheckTable(req.Keyspace, req.Table); err != nil {
		return OpStatus{}, badRequest{fmt.Errorf("import: %w", err)}
	}
	fi, err := os.Stat(req.Dir)
	if err != nil {
		return OpStatus{}, fmt.Errorf("import: %w", err)
	}
	if !fi.IsDir() {
		return OpStatus{}, fmt.Errorf("import: %s is not a directory", req.Dir)
	}
	return n.startOp(OpImport, req.Keyspace+"."+req.Table+" "+req.Dir, func(ctx context.Context, o *op) error {
		return n.importDir(ctx, o, req)
	})
}

func (n *Node) importDir(ctx context.Context, o *op, req ImportRequest) error {
	live, err := catalog.ListLive(req.Dir)
	if err != nil {
		return err
	}
	if len(live) == 0 {
		return fmt.Errorf("import: no sstables (with a TOC.txt) in %s", req.Dir)
	}
	var problems []string
	parts := make([]int64, len(live))
	for i, s := range live {
		if err := ctx.Err(); err != nil {
			return err
		}
		rep, err := sstable.Verify(s.Desc.Prefix(), sstable.VerifyOptions{Extended: true})
		if err != nil {
			return err
		}
		parts[i] = rep.Partitions - rep.Fillers
		for _, p := range rep.Problems {
			problems = append(problems, s.Desc.Prefix()+": "+p.String())
		}
	}
	if len(problems) > 0 {
		more := ""
		if len(problems) > maxListedProblems {
			more = fmt.Sprintf(" (and %d more)", len(problems)-maxListedProblems)
			problems = problems[:maxListedProblems]
		}
		return fmt.Errorf("%w: %d problem(s): %s%s", ErrImportRefused, len(problems), strings.Join(problems, "; "), more)
	}
	id := ""
	if _, table, tid, ok := descriptor.TableDir(req.Dir); ok && table == req.Table {
		id = tid
	}
	dir, err := n.tableDirFor(req.Keyspace, req.Table, id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	l := n.dirLocks.get(dir)
	l.Lock()
	defer l.Unlock()
	if _, err := fsx.CleanLeftovers(dir); err != nil {
		return err
	}
	for i, s := range live {
		d, err := copySSTable(s, dir)
		if err != nil {
			return fmt.Errorf("installing %s: %w", s.Desc.Prefix(), err)
		}
		o.update(func(st *OpStatus) {
			st.Imported = append(st.Imported, ImportedSSTable{Source: s.Desc.Prefix(), SSTable: d.Prefix(), Partitions: parts[i]})
		})
	}
	return nil
}

// copySSTable installs a copy of s into dir under the next free generation.
func copySSTable(s catalog.LiveSSTable, dir string) (descriptor.Descriptor, error) {
	var first *os.File
	in, d, err := generation.Install(dir, s.Desc.Version, func(in *fsx.Install, d descriptor.Descriptor) error {
		var err error
		first, err = in.Create(d.Filename(s.Comps[0]))
		return err
	})
	if err != nil {
		return d, err
	}
	defer in.Abort()
	for i, c := range s.Comps {
		dst := first
		if i > 0 {
			if dst, err = in.Create(d.Filename(c)); err != nil {
				return d, err
			}
		}
		src, err := os.Open(s.Desc.Path(c))
		if err != nil {
			return d, err
		}
		_, err = io.Copy(dst, src)
		src.Close()
		if err != nil {
			return d, err
		}
	}
	return d, in.Commit()
}
