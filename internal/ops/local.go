package ops

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
)

// Local is this node's data: the data directories and their catalog, and the locks that order
// what rewrites a table directory (cleanup, import) against what installs into it (fetches).
// Its methods may be called concurrently.
type Local struct {
	DataDirs []string
	Catalog  *catalog.Catalog
	locks    dirLocks
}

// NewLocal is the data of the data directories dirs, listed by cat.
func NewLocal(dirs []string, cat *catalog.Catalog) *Local {
	return &Local{DataDirs: dirs, Catalog: cat}
}

// Lock is table directory dir's lock: held shared by what installs into it (fetches, which
// may run side by side) and by readers, exclusively by what rewrites it. slice.Split and an
// import start by removing install leftovers, which would take a concurrent install's
// temporaries.
func (l *Local) Lock(dir string) *sync.RWMutex { return l.locks.get(dir) }

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

// Tables is the catalog's table summaries in the admin API's (and the peer API's) form.
func (l *Local) Tables() ([]TableStatus, error) {
	sums, err := l.Catalog.Tables()
	out := make([]TableStatus, len(sums))
	for i, s := range sums {
		out[i] = TableStatus(s)
	}
	return out, err
}

// TableDirFor is the directory of keyspace.table on this node: the one that exists, or a new
// one named with id under the first data directory.
func (l *Local) TableDirFor(keyspace, table, id string) (string, error) {
	// Every caller checked the names; this is the last line before they become a path.
	if err := cqlname.CheckTable(keyspace, table); err != nil {
		return "", BadRequest{err}
	}
	dirs, err := l.Catalog.TableDirs()
	if err != nil {
		return "", err
	}
	for _, td := range dirs {
		if td.Keyspace == keyspace && td.Table == table && (id == "" || td.ID == id) {
			return td.Path, nil
		}
	}
	if id == "" {
		return "", fmt.Errorf("%w: %s.%s (and no table id to create it)", catalog.ErrUnknownTable, keyspace, table)
	}
	p := filepath.Join(l.DataDirs[0], keyspace, table+"-"+id)
	if _, _, _, ok := descriptor.TableDir(p); !ok {
		return "", fmt.Errorf("table %s.%s id %q: not a table directory name", keyspace, table, id)
	}
	return p, nil
}

// OpenTable opens the live sstables of keyspace.table in every data directory, holding each
// directory's lock shared so that cleanup and import do not rewrite it meanwhile. release
// closes them and drops the locks.
func (l *Local) OpenTable(keyspace, table string) (tables []*sstable.Table, release func(), err error) {
	var unlock []func()
	release = func() {
		for _, t := range tables {
			t.Close()
		}
		for _, u := range unlock {
			u()
		}
	}
	dirs, err := l.Catalog.TableDirs()
	if err != nil {
		return nil, release, err
	}
	for _, td := range dirs {
		if td.Keyspace != keyspace || td.Table != table {
			continue
		}
		lk := l.Lock(td.Path)
		lk.RLock()
		unlock = append(unlock, lk.RUnlock)
		live, err := catalog.ListLive(td.Path)
		if err != nil {
			release()
			return nil, func() {}, err
		}
		for _, s := range live {
			t, err := sstable.Open(s.Desc.Prefix())
			if err != nil {
				release()
				return nil, func() {}, fmt.Errorf("%s: %w", s.Desc.Prefix(), err)
			}
			tables = append(tables, t)
		}
	}
	return tables, release, nil
}

// RepairTrees builds this node's Merkle trees of keyspace.table for the specs. A table this
// node does not hold has empty trees.
func (l *Local) RepairTrees(ctx context.Context, keyspace, table string, specs []repair.Spec) ([]*repair.Tree, error) {
	tables, release, err := l.OpenTable(keyspace, table)
	if err != nil {
		return nil, err
	}
	defer release()
	return repair.Build(ctx, tables, specs)
}

// RepairSpecs sizes one tree per range by this node's partition count in it.
func (l *Local) RepairSpecs(keyspace, table string, ranges token.RangeSet) ([]repair.Spec, error) {
	tables, release, err := l.OpenTable(keyspace, table)
	if err != nil {
		return nil, err
	}
	defer release()
	counts, err := repair.Count(tables, ranges)
	if err != nil {
		return nil, err
	}
	specs := make([]repair.Spec, len(ranges))
	for i, r := range ranges {
		specs[i] = repair.Spec{Range: r, Depth: repair.DepthFor(counts[i])}
	}
	return specs, nil
}
