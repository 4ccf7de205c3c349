package catalog

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/stream"
)

const (
	// SnapshotsDir is Cassandra's per-table snapshot directory.
	SnapshotsDir = "snapshots"
	// HoldPrefix starts the name of a Hold's snapshot under SnapshotsDir. The leading dot
	// keeps it apart from operator snapshots; start-up removes any a crash left.
	HoldPrefix = ".stream-"
	// holdAttempts bounds the re-listings of a table whose sstables keep disappearing.
	holdAttempts = 8
)

var (
	// ErrUnknownTable reports a Hold of a keyspace.table that has no directory in any data
	// directory.
	ErrUnknownTable = errors.New("catalog: unknown table")

	// ErrAmbiguousTable reports a keyspace.table with live sstables under more than one table id
	// (a table dropped and re-created while the old directory kept its files): the node cannot
	// tell which one is current without the schema.
	ErrAmbiguousTable = errors.New("catalog: table has live sstables under several table ids")

	// ErrUnstableTable reports a Hold that kept finding sstables deleted between listing and
	// linking them (a compaction storm) and gave up.
	ErrUnstableTable = errors.New("catalog: table changed during every snapshot attempt")

	// ErrNotRegular reports an sstable component that is a symlink or another non-regular file;
	// such an sstable is never served.
	ErrNotRegular = errors.New("catalog: component is not a regular file")
)

// Catalog finds tables in the node's data directories and holds their live sstables for
// senders. It implements stream.Catalog; its methods may be called concurrently.
type Catalog struct {
	dirs []string
	log  zerolog.Logger

	mu      sync.Mutex
	sources map[string]map[[2]string]string // source id → (keyspace, table) → directory
}

var (
	_ stream.Catalog       = (*Catalog)(nil)
	_ stream.SourceCatalog = (*Catalog)(nil)
)

// ErrUnknownSource reports a HoldSource of a source id or table that is not registered.
var ErrUnknownSource = errors.New("catalog: unknown source")

// AddSource registers sstables outside the data directories (a sidecar's load, staged by its
// owner) under id: tables maps [keyspace, table] to the directory holding its sstables. The
// owner keeps the files unchanged until it calls RemoveSource and the sessions reading them
// are done; HoldSource takes no snapshot.
func (c *Catalog) AddSource(id string, tables map[[2]string]string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sources == nil {
		c.sources = map[string]map[[2]string]string{}
	}
	if _, ok := c.sources[id]; ok || id == "" {
		return fmt.Errorf("catalog: source %q already registered or empty", id)
	}
	m := make(map[[2]string]string, len(tables))
	for k, v := range tables {
		m[k] = v
	}
	c.sources[id] = m
	return nil
}

// RemoveSource unregisters id; sessions that hold its sstables keep them.
func (c *Catalog) RemoveSource(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sources, id)
}

// HoldSource returns the complete sstables of keyspace.table registered under source, read in
// place (release does nothing).
func (c *Catalog) HoldSource(source, keyspace, table string) ([]descriptor.Descriptor, func(), error) {
	c.mu.Lock()
	dir, ok := c.sources[source][[2]string{keyspace, table}]
	c.mu.Unlock()
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s has no %s.%s", ErrUnknownSource, source, keyspace, table)
	}
	live, err := ListLive(dir)
	if err != nil {
		return nil, nil, err
	}
	out := make([]descriptor.Descriptor, len(live))
	for i, s := range live {
		out[i] = s.Desc
	}
	return out, func() {}, nil
}

// NewCatalog returns a catalog over data directories in Cassandra's layout
// <dir>/<keyspace>/<table>-<table id>/. Missing directories hold no tables.
func New(dataDirs []string, log zerolog.Logger) *Catalog {
	return &Catalog{dirs: append([]string(nil), dataDirs...), log: log}
}

// TableDir is one <keyspace>/<table>-<id> directory.
type TableDir struct {
	Keyspace, Table, ID, Path string
}

// tableDirs lists the table directories of every data directory, in data directory order
// and by name within one.
func (c *Catalog) TableDirs() ([]TableDir, error) {
	var out []TableDir
	for _, root := range c.dirs {
		kss, err := readDirs(root)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, ks := range kss {
			tables, err := readDirs(filepath.Join(root, ks))
			if err != nil {
				return nil, err
			}
			for _, t := range tables {
				p := filepath.Join(root, ks, t)
				if k, name, id, ok := descriptor.TableDir(p); ok {
					out = append(out, TableDir{Keyspace: k, Table: name, ID: id, Path: p})
				}
			}
		}
	}
	return out, nil
}

// readDirs returns the names of the subdirectories of dir, hidden ones (Cassandra's .idx
// secondary index directories, our own .stream- holds) excluded.
func readDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// LiveSSTable is an sstable with a TOC and the components the TOC lists.
type LiveSSTable struct {
	Desc  descriptor.Descriptor
	Comps []descriptor.Component // TOC last, no duplicates
}

// ListLive returns the sstables of dir that have a TOC.txt: the ones Cassandra considers
// complete. An sstable whose TOC disappears while it is read is being deleted and is left out.
func ListLive(dir string) ([]LiveSSTable, error) {
	ds, err := descriptor.List(dir)
	if err != nil {
		return nil, err
	}
	var out []LiveSSTable
	for _, d := range ds {
		b, err := os.ReadFile(d.Path(descriptor.TOC))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		comps, err := descriptor.ParseTOC(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Path(descriptor.TOC), err)
		}
		s := LiveSSTable{Desc: d}
		seen := map[descriptor.Component]bool{descriptor.TOC: true}
		for _, c := range comps {
			if !seen[c] {
				seen[c] = true
				s.Comps = append(s.Comps, c)
			}
		}
		s.Comps = append(s.Comps, descriptor.TOC)
		out = append(out, s)
	}
	return out, nil
}

// TableSummary is one table of the data directories: where it lives, how many live sstables
// it has and their bytes.
type TableSummary struct {
	Keyspace string
	Table    string
	ID       string
	Dirs     []string
	SSTables int
	Bytes    int64
}

// Tables summarises every table found, ordered by keyspace, table and id. A table whose id
// appears in several data directories is one entry listing each directory.
func (c *Catalog) Tables() ([]TableSummary, error) {
	dirs, err := c.TableDirs()
	if err != nil {
		return nil, err
	}
	byKey := map[string]*TableSummary{}
	for _, td := range dirs {
		key := td.Keyspace + "\x00" + td.Table + "\x00" + td.ID
		ts := byKey[key]
		if ts == nil {
			ts = &TableSummary{Keyspace: td.Keyspace, Table: td.Table, ID: td.ID}
			byKey[key] = ts
		}
		ts.Dirs = append(ts.Dirs, td.Path)
		live, err := ListLive(td.Path)
		if err != nil {
			return nil, err
		}
		ts.SSTables += len(live)
		for _, s := range live {
			for _, comp := range s.Comps {
				if fi, err := os.Stat(s.Desc.Path(comp)); err == nil {
					ts.Bytes += fi.Size()
				}
			}
		}
	}
	out := make([]TableSummary, 0, len(byKey))
	for _, ts := range byKey {
		out = append(out, *ts)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Keyspace != b.Keyspace {
			return a.Keyspace < b.Keyspace
		}
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		return a.ID < b.ID
	})
	return out, nil
}

// Hold returns the live sstables of keyspace.table, read through a hard-link snapshot taken
// in every data directory that holds the table (<table dir>/snapshots/.stream-<random>/), and
// a release function that removes the snapshots. Until release the sstables stay readable
// whatever compaction or cleanup deletes; hard links need no copy and, being inside the table
// directory, stay on its file system. The descriptors point into the snapshots.
//
// Cassandra writes a compaction's results before it deletes the inputs, so when an sstable
// vanishes while it is linked, Hold lists the directory again to pick up its replacement. The
// held set can then include both an input already linked and its result: the same cells
// twice, which reconcile and cost only bytes.
//
// release may be called more than once and from any goroutine; errors removing a snapshot
// are logged.
func (c *Catalog) Hold(keyspace, table string) ([]descriptor.Descriptor, func(), error) {
	all, err := c.TableDirs()
	if err != nil {
		return nil, nil, err
	}
	var dirs []TableDir
	ids := map[string]bool{}
	for _, td := range all {
		if td.Keyspace != keyspace || td.Table != table {
			continue
		}
		dirs = append(dirs, td)
	}
	if len(dirs) == 0 {
		return nil, nil, fmt.Errorf("%w: %s.%s", ErrUnknownTable, keyspace, table)
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, nil, err
	}
	h := &hold{name: HoldPrefix + hex.EncodeToString(raw[:]), log: c.log}
	var out []descriptor.Descriptor
	for _, td := range dirs {
		ds, err := h.snapshot(td.Path)
		if err != nil {
			h.release()
			return nil, nil, err
		}
		if len(ds) > 0 {
			ids[td.ID] = true
		}
		out = append(out, ds...)
	}
	if len(ids) > 1 {
		h.release()
		idList := make([]string, 0, len(ids))
		for id := range ids {
			idList = append(idList, id)
		}
		sort.Strings(idList)
		return nil, nil, fmt.Errorf("%w: %s.%s: %s", ErrAmbiguousTable, keyspace, table, strings.Join(idList, ", "))
	}
	c.log.Debug().Str("keyspace", keyspace).Str("table", table).Str("hold", h.name).
		Int("sstables", len(out)).Msg("holding sstables")
	return out, h.release, nil
}

// hold is one Hold's snapshot directories.
type hold struct {
	name string
	log  zerolog.Logger
	mu   sync.Mutex
	dirs []string
}

// snapshot links the live sstables of table directory dir into the hold's snapshot there.
func (h *hold) snapshot(dir string) ([]descriptor.Descriptor, error) {
	snap := filepath.Join(dir, SnapshotsDir, h.name)
	// seen holds the sstables linked or found vanished; each is tried once.
	seen := map[string]bool{}
	created := false
	var out []descriptor.Descriptor
	for attempt := 0; attempt < holdAttempts; attempt++ {
		live, err := ListLive(dir)
		if err != nil {
			return nil, err
		}
		vanished := false
		for _, s := range live {
			if seen[s.Desc.Prefix()] {
				continue
			}
			seen[s.Desc.Prefix()] = true
			if !created {
				if err := os.MkdirAll(snap, 0o755); err != nil {
					return nil, err
				}
				created = true
				h.mu.Lock()
				h.dirs = append(h.dirs, snap)
				h.mu.Unlock()
			}
			ok, err := linkSSTable(s, snap)
			if err != nil {
				return nil, err
			}
			if !ok {
				vanished = true
				continue
			}
			out = append(out, descriptor.Descriptor{Dir: snap, Version: s.Desc.Version, ID: s.Desc.ID})
		}
		if !vanished {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrUnstableTable, dir)
}

// linkSSTable hard-links every component of s into snap, the TOC last. It returns false,
// having removed its links, when the sstable was deleted meanwhile (its Data.db or TOC.txt
// is gone); a missing component of an sstable that still has both is an error.
func linkSSTable(s LiveSSTable, snap string) (bool, error) {
	var made []string
	undo := func() {
		for _, p := range made {
			_ = os.Remove(p)
		}
	}
	for _, comp := range s.Comps {
		src := s.Desc.Path(comp)
		dst := filepath.Join(snap, s.Desc.Filename(comp))
		err := os.Link(src, dst)
		if err == nil {
			made = append(made, dst)
			// The link is the inode that src named when it was made (link(2) does not follow
			// a symlink), so checking it is free of races: a symlinked or special component
			// would let a data directory serve files from anywhere, and is never served.
			if fi, lerr := os.Lstat(dst); lerr != nil || !fi.Mode().IsRegular() {
				undo()
				if lerr != nil {
					return false, lerr
				}
				return false, fmt.Errorf("%w: %s is a %v, not a regular file", ErrNotRegular, src, fi.Mode().Type())
			}
			continue
		}
		undo()
		if errors.Is(err, fs.ErrNotExist) && (!exists(s.Desc.Path(descriptor.TOC)) || !exists(s.Desc.Path(descriptor.Data))) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func (h *hold) release() {
	h.mu.Lock()
	dirs := h.dirs
	h.dirs = nil
	h.mu.Unlock()
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			h.log.Error().Err(err).Str("dir", d).Msg("removing stream snapshot")
		}
	}
}

// RemoveStaleHolds removes the hold snapshots of table directory dir, which only a crash can
// leave (no Hold is active before the node starts), and returns their paths.
func RemoveStaleHolds(dir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, SnapshotsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), HoldPrefix) {
			continue
		}
		p := filepath.Join(dir, SnapshotsDir, e.Name())
		if err := os.RemoveAll(p); err != nil {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}
