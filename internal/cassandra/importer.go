package cassandra

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
)

// Importer hands sstables to the live Cassandra node with nodetool import. For one request it
//
//  1. verifies every complete sstable of the source directory with sluice's strict
//     verification (every chunk's CRC, the digest, the layout Cassandra's sequential readers
//     need; Verify);
//  2. moves them (rename; a copy when the source is on another file system) into a fresh
//     staging directory <staging_dir>/import-<random>/<keyspace>/<table>-<id>/, named as
//     Cassandra names table directories: some versions (4.1.4, CASSANDRA-19401) silently
//     import nothing from a directory named otherwise (5.0.7 imports from any name);
//  3. hands that directory to the node: through the persistent JMX client when JMX is set
//     (importNewSSTables with SidecarImportFlags: Cassandra checks that the node owns every
//     token and opens each sstable, but does not read Data.db again for the digest step 1
//     checked), else by running <nodetool argv> import <keyspace> <table> <that directory>
//     (ImportArgs: Cassandra verifies the sstables and checks that the node owns their
//     tokens); either way Cassandra moves them in;
//  4. confirms on disk, never from the exit code alone, that every sstable left the staging
//     directory and is now in one of the table's live directories (the same inode: a move is a
//     rename), and removes the staging directory.
//
// On a failure before Cassandra took an sstable, the sstables still staged go back to the
// source directory (copies are deleted), so a failed import leaves the source as it was. The
// Importer never writes into a live table directory. Imports may run concurrently (each has
// its own staging directory); the fields must not change once Import is called.
type Importer struct {
	// Node names the Cassandra node in errors (its host id, else its native address).
	Node string
	// Nodetool is the argv prefix that runs nodetool against the node (cassandra.nodetool).
	Nodetool []string
	// StagingDir is the staging directory of a node with one data directory, or of every
	// data directory Staging leaves unset: on the data directories' file system.
	StagingDir string
	// DataDirs are the node's data_file_directories, where imports must land, in
	// cassandra.yaml's order.
	DataDirs []string
	// Staging, when set, is the staging directory of each of DataDirs (same index; "" for
	// none): on that directory's file system (PairStaging).
	Staging []string
	// Boundaries, with several DataDirs, are the table's keyspace's disk boundaries
	// (DiskBoundaries): each sstable is staged beside the data directory Cassandra will put it
	// in, by its first token (DiskFor), and handed over with the others bound there. Nil: one
	// staging directory for all, on the file system of any data directory.
	Boundaries []int64
	// Run runs nodetool; nil is ExecRunner.
	Run Runner
	// JMX, when set, is the node's persistent JMX client (cassandra.jmx_address): imports call
	// importNewSSTables through it and nodetool is not run.
	JMX *JMX
	// Verify checks one sstable (its Data.db path) before anything moves; nil is VerifyStrict.
	Verify func(dataPath string) error
}

// ImportRequest is one import: the sstables of Dir into Keyspace.Table, whose id (from
// system_schema.tables) names the staging directory as Cassandra names the live one.
type ImportRequest struct {
	Keyspace, Table string
	TableID         string // 32 hex digits or a UUID with dashes
	Dir             string
}

// ImportedSSTable is one sstable the node took.
type ImportedSSTable struct {
	Source string // the sstable in the request's directory (descriptor prefix)
	Live   string // its Data.db in the live table directory, under the name Cassandra gave it
	Bytes  int64  // its Data.db's size
	Copied bool   // staged by copy (source on another file system): the source was left in place
}

// ImportResult is a confirmed import.
type ImportResult struct {
	Keyspace, Table string
	Staging         string // the staging table directory nodetool imported from (removed since)
	SSTables        []ImportedSSTable
	Output          string // what nodetool printed (usually nothing)
	Elapsed         time.Duration
	// The phases of Elapsed: sluice's strict verification, and the hand-over to Cassandra
	// (the JMX call or the nodetool process, Cassandra's own checks and move included).
	Verified, HandedOver time.Duration
}

// staged is one component file in the staging directory.
type staged struct {
	src, dst string
	copied   bool
}

// stagedTable is one sstable in the staging directory.
type stagedTable struct {
	source string      // descriptor prefix in the source directory
	data   string      // its Data.db in the staging directory
	info   os.FileInfo // of that Data.db: the inode to find in the live directory
	files  []staged
}

// Import runs one import; see Importer. A failure is an *ImportError naming the node, the
// table, the staging directory and what nodetool printed, wrapping ErrNothingToImport,
// ErrVerify, ErrCrossDevice, ErrNodetool or ErrNotConfirmed (or the I/O error).
func (im *Importer) Import(ctx context.Context, req ImportRequest) (res ImportResult, err error) {
	start := time.Now()
	res = ImportResult{Keyspace: req.Keyspace, Table: req.Table}
	ie := &ImportError{Node: im.Node, Keyspace: req.Keyspace, Table: req.Table}
	fail := func(e error) (ImportResult, error) {
		ie.Err = e
		return res, ie
	}
	if e := cqlname.CheckTable(req.Keyspace, req.Table); e != nil {
		return fail(e)
	}
	id, e := TableID(req.TableID)
	if e != nil {
		return fail(e)
	}
	live, e := catalog.ListLive(req.Dir)
	if e != nil {
		return fail(e)
	}
	if len(live) == 0 {
		return fail(fmt.Errorf("%w in %s (none has a TOC.txt)", ErrNothingToImport, req.Dir))
	}
	verify := im.Verify
	if verify == nil {
		verify = VerifyStrict
	}
	if e := verifyAll(ctx, live, verify); e != nil {
		return fail(e)
	}
	res.Verified = time.Since(start)
	groups, e := im.place(live)
	if e != nil {
		return fail(e)
	}
	for _, g := range groups {
		gr, e := im.importGroup(ctx, req, id, g)
		res.Staging = gr.Staging
		res.SSTables = append(res.SSTables, gr.SSTables...)
		res.Output = strings.TrimSpace(res.Output + "\n" + gr.Output)
		res.HandedOver += gr.HandedOver
		if e != nil {
			ie.Dir, ie.Output = gr.Staging, gr.Output
			if len(res.SSTables) > 0 {
				e = fmt.Errorf("%w (%d sstable(s) of this import were imported and confirmed: %s)", e, len(res.SSTables), importedList(res.SSTables))
			}
			return fail(e)
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// verifyAll verifies every sstable of live, as many at once as there are CPUs (each reads its
// files once, mostly from the page cache a fetch just filled), and returns the failure of the
// first one in live's order that failed, naming it.
func verifyAll(ctx context.Context, live []catalog.LiveSSTable, verify func(dataPath string) error) error {
	errs := make([]error, len(live))
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(live)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(live) {
					return
				}
				if e := ctx.Err(); e != nil {
					errs[i] = e
					return
				}
				if e := verify(live[i].Desc.Path(descriptor.Data)); e != nil {
					errs[i] = fmt.Errorf("%w: %s: %v", ErrVerify, live[i].Desc.Prefix(), e)
				}
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// importedList names the live Data.db of imported sstables.
func importedList(ts []ImportedSSTable) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Live)
	}
	return strings.Join(out, ", ")
}

// diskGroup is the sstables of an import bound for one data directory (disk -1: any, one
// staging directory for all).
type diskGroup struct {
	disk int
	live []catalog.LiveSSTable
}

// place groups the sstables by the data directory Cassandra will put them in: by their first
// token with Boundaries and several data directories, else all in one group.
func (im *Importer) place(live []catalog.LiveSSTable) ([]diskGroup, error) {
	if len(im.DataDirs) < 2 || im.Boundaries == nil {
		return []diskGroup{{disk: -1, live: live}}, nil
	}
	byDisk := map[int][]catalog.LiveSSTable{}
	for _, s := range live {
		t, err := FirstToken(s.Desc.Path(descriptor.Data))
		if err != nil {
			return nil, err
		}
		d := DiskFor(im.Boundaries, t)
		if d >= len(im.DataDirs) {
			return nil, fmt.Errorf("%s: first token %d falls to data directory %d of %d (disk boundaries %v)", s.Desc.Prefix(), t, d+1, len(im.DataDirs), im.Boundaries)
		}
		byDisk[d] = append(byDisk[d], s)
	}
	var out []diskGroup
	for d := range im.DataDirs {
		if len(byDisk[d]) > 0 {
			out = append(out, diskGroup{disk: d, live: byDisk[d]})
		}
	}
	return out, nil
}

// FirstToken is the Murmur3 token of the first partition of the sstable of dataPath (its
// Data.db): what Cassandra places an imported sstable by.
func FirstToken(dataPath string) (int64, error) {
	t, err := sstable.Open(dataPath)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	if t.Partitioner == nil || t.Partitioner.Name() != token.Murmur3Name {
		return 0, fmt.Errorf("%w: %s is not a Murmur3 sstable", ErrUnsupportedPartitioner, dataPath)
	}
	key, err := t.KeyAt(0)
	if err != nil {
		return 0, err
	}
	return t.Partitioner.Token(key).Long, nil
}

// stagingFor is the staging directory for data directory disk (-1: StagingDir).
func (im *Importer) stagingFor(disk int) (string, error) {
	if disk >= 0 && disk < len(im.Staging) && im.Staging[disk] != "" {
		return im.Staging[disk], nil
	}
	if im.StagingDir != "" && (disk < 0 || len(im.Staging) == 0) {
		return im.StagingDir, nil
	}
	return "", fmt.Errorf("%w: no staging directory on the file system of data file directory %s (cassandra.staging_dirs)", ErrCrossDevice, im.DataDirs[disk])
}

// importGroup stages one group's sstables in a fresh directory of its data directory's
// staging directory, hands them over and confirms them.
func (im *Importer) importGroup(ctx context.Context, req ImportRequest, id string, g diskGroup) (res ImportResult, err error) {
	staging, e := im.stagingFor(g.disk)
	if e != nil {
		return res, e
	}
	session, e := im.sessionDir(staging)
	if e != nil {
		return res, e
	}
	dir := filepath.Join(session, req.Keyspace, req.Table+"-"+id)
	if e := os.MkdirAll(dir, 0o755); e != nil {
		return res, e
	}
	res.Staging = dir
	defer func() {
		// A staging directory that still holds files (an import whose outcome is unknown) is
		// kept for the operator; an empty one goes.
		if rerr := removeIfEmpty(session); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if e := im.checkDevice(staging, dir, g.disk); e != nil {
		return res, e
	}
	if e := checkCopySpace(g.live, dir); e != nil {
		return res, e
	}
	tables, e := stage(g.live, dir)
	if e != nil {
		return res, errors.Join(e, unstage(tables))
	}

	call := time.Now()
	out, verdict, e := im.handOver(ctx, req, dir)
	res.HandedOver = time.Since(call)
	res.Output = strings.TrimSpace(out)
	switch verdict {
	case handOverUnknown:
		// Cassandra may still be importing (nodetool's JMX call outlives nodetool, and so does
		// the JMX client's): the staged sstables stay where they are.
		return res, fmt.Errorf("%w; the outcome is unknown: what Cassandra did not take is still in %s", e, dir)
	case handOverFailed:
		return res, errors.Join(e, unstage(tables))
	}

	// Confirm on disk: each sstable left staging and its Data.db inode is in a live directory.
	found, e := im.liveByInode(req.Keyspace, req.Table, tables)
	if e != nil {
		return res, e
	}
	var left, lost []string
	var back []stagedTable
	for _, t := range tables {
		if _, e := os.Lstat(t.data); e == nil {
			left = append(left, filepath.Base(t.data))
			back = append(back, t)
			continue
		}
		p, ok := found[t.data]
		if !ok {
			lost = append(lost, filepath.Base(t.data))
			continue
		}
		res.SSTables = append(res.SSTables, ImportedSSTable{Source: t.source, Live: p, Bytes: t.info.Size(), Copied: t.files[0].copied})
	}
	switch {
	case len(left) > 0:
		return res, errors.Join(fmt.Errorf("%w: the import reported success but %d of %d sstables are still in the staging directory (%s): Cassandra did not take them (its log says why, e.g. \"No new SSTables were found\"); they are back in %s",
			ErrNotConfirmed, len(left), len(tables), strings.Join(left, ", "), req.Dir), unstage(back))
	case len(lost) > 0:
		where := "compacted away already, or moved elsewhere"
		if len(im.DataDirs) > 1 {
			where += " (or copied into another data directory than the one their first token falls to by the disk boundaries sluice computed: Cassandra's importer copies across file systems)"
		}
		return res, fmt.Errorf("%w: %d of %d sstables left the staging directory but are in no live directory of %s.%s as the same file (%s): %s",
			ErrNotConfirmed, len(lost), len(tables), req.Keyspace, req.Table, strings.Join(lost, ", "), where)
	}
	return res, nil
}

// checkCopySpace refuses, naming dir, to stage by copy more bytes than dir's file system has
// free (sstables from another file system are copied; those on dir's are renamed, taking no
// room).
func checkCopySpace(live []catalog.LiveSSTable, dir string) error {
	di, err := os.Stat(dir)
	if err != nil {
		return err
	}
	var need int64
	for _, s := range live {
		for _, c := range s.Comps {
			fi, err := os.Stat(s.Desc.Path(c))
			if err != nil {
				return err
			}
			if !SameFileSystem(fi, di) {
				need += fi.Size()
			}
		}
	}
	if need == 0 {
		return nil
	}
	err = fsx.CheckFreeSpace(dir, need)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}

// handOver verdicts.
const (
	handOverDone    = iota // the call returned success: confirm on disk
	handOverFailed         // the call failed: Cassandra took nothing, or moved it back
	handOverUnknown        // no answer: Cassandra may still be importing
)

// handOver asks the node to import dir: through the JMX client when there is one, else with
// nodetool. It returns what to show of the call's output and its verdict (with the error
// unless done).
func (im *Importer) handOver(ctx context.Context, req ImportRequest, dir string) (string, int, error) {
	if im.JMX != nil {
		r, err := im.JMX.Import(ctx, req.Keyspace, req.Table, dir, SidecarImportFlags)
		switch {
		case errors.Is(err, ErrOutcomeUnknown):
			return "", handOverUnknown, err
		case err != nil:
			return "", handOverFailed, err
		case len(r.Failed) > 0:
			out := "importNewSSTables failed directories: " + strings.Join(r.Failed, ", ")
			return out, handOverFailed, fmt.Errorf("%w: Cassandra failed to import %s (its log says why)", ErrJMX, strings.Join(r.Failed, ", "))
		}
		return "", handOverDone, nil
	}
	run := im.Run
	if run == nil {
		run = ExecRunner
	}
	argv := append(append([]string(nil), im.Nodetool...), ImportArgs(req.Keyspace, req.Table, dir)...)
	out, code, e := run(ctx, argv)
	parsed := ParseImportOutput(out)
	switch {
	case e != nil && ctx.Err() != nil:
		return out, handOverUnknown, fmt.Errorf("%w: %s: %v", ErrNodetool, strings.Join(argv, " "), e)
	case e != nil:
		return out, handOverFailed, fmt.Errorf("%w: %s: %v", ErrNodetool, strings.Join(argv, " "), e)
	case code != 0 || parsed.Failed():
		return out, handOverFailed, fmt.Errorf("%w: exit code %d", ErrNodetool, code)
	}
	return out, handOverDone, nil
}

// sessionDir creates a fresh import-<random> directory under staging.
func (im *Importer) sessionDir(staging string) (string, error) {
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return "", fmt.Errorf("staging directory: %w", err)
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	p := filepath.Join(staging, StagingPrefix+hex.EncodeToString(raw[:]))
	if err := os.Mkdir(p, 0o755); err != nil {
		return "", err
	}
	return p, nil
}

// StagingPrefix starts the name of one import's directory under the staging directory.
const StagingPrefix = "import-"

// checkDevice refuses a staging directory on another file system than the data directory
// disk (-1: than every data directory): nodetool import would have to copy every byte, and
// the confirmation by inode would fail.
func (im *Importer) checkDevice(staging, dir string, disk int) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	sd, ok := device(fi)
	if !ok {
		return nil
	}
	dirs := im.DataDirs
	if disk >= 0 {
		dirs = dirs[disk : disk+1]
	}
	for _, d := range dirs {
		di, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("data file directory: %w", err)
		}
		if dd, ok := device(di); ok && dd == sd {
			return nil
		}
	}
	return fmt.Errorf("%w: staging directory %s and data file directories %s", ErrCrossDevice, staging, strings.Join(dirs, ", "))
}

// stage moves every component of every sstable into dir (a copy across file systems), TOC
// last, and syncs both directories. On error it returns what it staged so far for unstage.
func stage(live []catalog.LiveSSTable, dir string) ([]stagedTable, error) {
	var out []stagedTable
	srcDirs := map[string]bool{}
	for _, s := range live {
		t := stagedTable{source: s.Desc.Prefix()}
		srcDirs[s.Desc.Dir] = true
		for _, c := range s.Comps {
			st := staged{src: s.Desc.Path(c), dst: filepath.Join(dir, s.Desc.Filename(c))}
			err := os.Rename(st.src, st.dst)
			if errors.Is(err, syscall.EXDEV) {
				st.copied = true
				err = copyFile(st.src, st.dst)
			}
			if err != nil {
				out = append(out, t)
				return out, err
			}
			t.files = append(t.files, st)
			if c == descriptor.Data {
				t.data = st.dst
				if t.info, err = os.Stat(st.dst); err != nil {
					out = append(out, t)
					return out, err
				}
			}
		}
		if t.data == "" {
			out = append(out, t)
			return out, fmt.Errorf("%s: its TOC lists no Data.db", s.Desc.Prefix())
		}
		out = append(out, t)
	}
	if err := fsx.SyncDir(dir); err != nil {
		return out, err
	}
	for d := range srcDirs {
		if err := fsx.SyncDir(d); err != nil {
			return out, err
		}
	}
	return out, nil
}

// removeIfEmpty removes dir when no file is left anywhere under it.
func removeIfEmpty(dir string) error {
	files := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return err
	})
	if err != nil || files > 0 {
		return err
	}
	return os.RemoveAll(dir)
}

// unstage returns staged sstables to their source: moved files are renamed back, copies
// removed. Files no longer in the staging directory (Cassandra took them) are left alone.
func unstage(tables []stagedTable) error {
	var errs []error
	for _, t := range tables {
		for _, f := range t.files {
			if _, err := os.Lstat(f.dst); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if f.copied {
				errs = append(errs, os.Remove(f.dst))
			} else {
				errs = append(errs, os.Rename(f.dst, f.src))
			}
		}
	}
	return errors.Join(errs...)
}

func copyFile(src, dst string) error { return fsx.CopyNew(src, dst) }

// liveByInode maps each staged Data.db (by its staging path) to the live Data.db that is the
// same file, searching every directory of keyspace.table in every data directory.
func (im *Importer) liveByInode(keyspace, table string, tables []stagedTable) (map[string]string, error) {
	found := map[string]string{}
	for _, root := range im.DataDirs {
		ents, err := os.ReadDir(filepath.Join(root, keyspace))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			dir := filepath.Join(root, keyspace, e.Name())
			if _, name, _, ok := descriptor.TableDir(dir); !ok || name != table || !e.IsDir() {
				continue
			}
			ls, err := catalog.ListLive(dir)
			if err != nil {
				return nil, err
			}
			for _, s := range ls {
				p := s.Desc.Path(descriptor.Data)
				fi, err := os.Stat(p)
				if err != nil {
					continue // compacted away meanwhile
				}
				for _, t := range tables {
					if os.SameFile(fi, t.info) {
						found[t.data] = p
					}
				}
			}
		}
	}
	return found, nil
}

// VerifyStrict is the Importer's default check: sstable.Verify with Strict (every chunk read
// and CRC-checked, the digest, Cassandra's sequential layout rules). Its error lists the first
// problems.
func VerifyStrict(dataPath string) error {
	rep, err := sstable.Verify(dataPath, sstable.VerifyOptions{Strict: true})
	if err != nil {
		return err
	}
	if rep.OK {
		return nil
	}
	var ps []string
	for i, p := range rep.Problems {
		if i == 3 {
			ps = append(ps, fmt.Sprintf("and %d more", len(rep.Problems)-3))
			break
		}
		ps = append(ps, p.String())
	}
	return errors.New(strings.Join(ps, "; "))
}

// SameFileSystem reports whether two files are on one file system; true where that cannot be
// told.
func SameFileSystem(a, b os.FileInfo) bool {
	da, oka := device(a)
	db, okb := device(b)
	return !oka || !okb || da == db
}
