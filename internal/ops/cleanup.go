package ops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
)

// Cleanup removes from this node's tables every partition outside the ranges it must keep
// (ring.CleanupRanges: replicated now or once in-flight changes settle), but only what the
// nodes that own it confirm they hold (confirm.go): the ring says what may go, the owners'
// data says whether it can. A cleanup with something to drop first waits for the ring to be
// unchanged for a gossip round and refuses one with unproven members (OwnRing.Trust); each
// range of the ring an owner does not confirm is kept, and the cleanup then fails naming it.
//
// Each sstable becomes at most one: kept whole when nothing lies outside the kept ranges,
// dropped when nothing lies inside, and otherwise sliced (slice.Slice, mode auto: one
// multi-run child of its chunk runs, rechunked gap-free past the slice bounds) in its own
// directory, and then removed, TOC first, so a node's sstable count never rises from cleanup.
// The child is installed before the parent goes, so a crash in between leaves both (the kept
// partitions twice, which reconcile), never a loss.
func (c *Cluster) Cleanup(ctx context.Context, o *Op, req CleanupRequest) error {
	r, err := c.Own.Current()
	if err != nil {
		return err
	}
	self := c.Own.Self()
	if m, ok := r.Member(self); !ok || m.State != ring.Normal {
		// Without this node on the ring every range would look foreign.
		return fmt.Errorf("%w: this node is not NORMAL on its own ring view", ErrBadState)
	}
	kss, err := c.Own.Keyspaces("")
	if err != nil {
		return err
	}
	strategies := map[string]ring.Strategy{}
	for _, ks := range kss {
		strategies[ks.Name] = ks.Strategy
	}
	dirs, err := c.Local.Catalog.TableDirs()
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
			return c.Own.Unchanged(r)
		}
		if err := c.Own.Trust(ctx, r); err != nil {
			return err
		}
		trusted = true
		return nil
	}
	var checks []adminapi.CleanupCheck
	for _, td := range dirs {
		s, ok := strategies[td.Keyspace]
		if !ok || (req.Keyspace != "" && td.Keyspace != req.Keyspace) || (req.Table != "" && td.Table != req.Table) {
			continue
		}
		keep := ring.CleanupRanges(r, s, self)
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
func (c *Cluster) cleanupDir(ctx context.Context, o *Op, td catalog.TableDir, r ring.Ring, s ring.Strategy, keep token.RangeSet,
	mover *fsx.Mover, trust func(context.Context) error) (*adminapi.CleanupCheck, error) {
	l := c.Local.Lock(td.Path)
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
		o.Update(func(st *OpStatus) { st.CleanupChecks = append(st.CleanupChecks, chk.CleanupCheck) })
	}
	l.Lock()
	defer l.Unlock()
	for _, s := range live {
		if err := ctx.Err(); err != nil {
			return checkOf(chk), err
		}
		res, err := CleanupSSTable(ctx, s, keep, mover)
		if err != nil {
			return checkOf(chk), fmt.Errorf("%s: %w", s.Desc.Prefix(), err)
		}
		o.Update(func(st *OpStatus) { st.Cleanup = append(st.Cleanup, res) })
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
func (c *Cluster) confirmDir(ctx context.Context, td catalog.TableDir, r ring.Ring, s ring.Strategy, keep token.RangeSet,
	trust func(context.Context) error) ([]catalog.LiveSSTable, *dirCheck, error) {
	live, err := catalog.ListLive(td.Path)
	if err != nil {
		return nil, nil, err
	}
	units := dropUnits(r, s, keep, c.Own.Self())
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

// CleanupSSTable keeps, drops or splits one sstable: what lies outside keep goes.
func CleanupSSTable(ctx context.Context, s catalog.LiveSSTable, keep token.RangeSet, mover *fsx.Mover) (CleanupResult, error) {
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
		res.Action = adminapi.CleanupKept
		return res, nil
	case 0:
		res.Action = adminapi.CleanupDropped
	default:
		res.Action = adminapi.CleanupSplit
		sr, err := slice.Slice(ctx, t, keep, s.Desc.Dir, slice.Options{Mode: slice.ModeAuto, Mover: mover, RechunkPastBounds: true})
		if err != nil {
			return res, err
		}
		for _, ch := range sr.Children {
			res.Children = append(res.Children, ch.Desc.Prefix())
		}
	}
	t.Close()
	return res, RemoveSSTable(s)
}

// RemoveSSTable deletes an sstable, TOC first so that it stops being live before any other
// component goes, then syncs the directory.
func RemoveSSTable(s catalog.LiveSSTable) error {
	for i := len(s.Comps) - 1; i >= 0; i-- { // comps end with the TOC
		if err := os.Remove(s.Desc.Path(s.Comps[i])); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return fsx.SyncDir(s.Desc.Dir)
}
