package fsx

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// TempPrefix starts the name of every file an Install creates before Commit publishes it.
// Nothing else in a data directory may use it: CleanLeftovers deletes such files.
const TempPrefix = ".sluice-tmp-"

// intentSuffix ends the name of an install's intent record, TempPrefix+id+intentSuffix.
const intentSuffix = ".intent"

// lockSuffix ends the name of an install's owner lock, TempPrefix+id+lockSuffix: an empty file
// the install holds an exclusive flock on from its first file to its end, so that a cleaner
// tells an install in flight (its lock held) from the leftovers of one whose process died (the
// kernel released the lock) without guessing from times. On Linux it gets its name only once
// locked (O_TMPFILE, flock, linkat), so no cleaner ever sees an unlocked lock file of a live
// install; elsewhere it is made under lockSuffix+"x" and renamed once locked.
const lockSuffix = ".lock"

// intentHeader and intentTrailer frame an intent record; a record without the trailer was torn
// by a crash while it was written, before any rename. The trailer holds a '/', so it cannot be
// a file name.
const (
	intentHeader  = "sluice-install 1"
	intentTrailer = "/end"
)

// Install publishes a set of files in one directory so that a reader, even after a crash,
// sees either none of them under their final names or all of them complete (the hashicorp/raft
// file_snapshot discipline). Use it from one goroutine:
//
//	in, err := NewInstall(dir, "nb-1-big-TOC.txt")
//	defer in.Abort() // no-op after a successful Commit
//	f, err := in.Create("nb-1-big-Data.db") // write through f; do not Close it
//	...
//	err = in.Commit()
//
// The crash-consistency argument, step by step (Commit):
//
//  1. Every file is written under TempPrefix+id+"-"+name, then fsynced and closed, so its
//     bytes are durable before any final name can point at them.
//  2. An intent record (TempPrefix+id+".intent": the final names in rename order, then a
//     trailer) is written and fsynced, and the directory is fsynced, so the record is durable
//     before the first rename. A crash up to here leaves only TempPrefix files.
//  3. Every file but the last is renamed to its final name with RENAME_NOREPLACE, so an
//     existing file is never replaced and every final name the record lists whose temporary
//     is gone was made by this install. The directory is fsynced.
//  4. The last file (the marker, normally TOC.txt) is renamed and the directory fsynced. Step
//     3's fsync makes every other rename durable first, so a durable marker implies a durable,
//     complete set, on any POSIX file system and not only on those that journal in order.
//  5. The intent record is removed.
//
// A crash between 2 and 5 leaves the record. CleanLeftovers, run at start-up before any
// Install in the directory, reads it: if the marker exists and its temporary does not, the
// install completed and only the leftovers go; otherwise each listed final name whose
// temporary is gone is removed (it is a partial set of this install), and then every
// TempPrefix file. Readers that trust only marked sets never see a partial one, and after
// CleanLeftovers no final-named partial set remains.
//
// A failure inside Commit rolls back the same way in process: renamed finals are removed and
// the directory fsynced before the intent record is removed, so a crash during the rollback
// still leaves a record describing what to undo.
type Install struct {
	dir    string
	id     string
	marker string
	files  []*installFile
	done   bool
	lock   *os.File // the owner lock, from the first Create

	// beforeRename, when set by tests, runs before each rename with the final name; an error
	// fails Commit at that point.
	beforeRename func(name string) error
}

type installFile struct {
	name, tmp string
	f         *os.File
	renamed   bool
}

// NewInstall starts an install into dir. marker is the final name renamed last (the TOC);
// with "" the last created file is renamed last.
func NewInstall(dir, marker string) (*Install, error) {
	if marker != "" {
		if err := checkName(marker); err != nil {
			return nil, err
		}
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return &Install{dir: dir, id: hex.EncodeToString(b[:]), marker: marker}, nil
}

// Dir returns the install's directory.
func (in *Install) Dir() string { return in.dir }

// Temporaries maps each file created so far (its final name) to the path it is written
// under until the commit: what a check of the uncommitted files opens.
func (in *Install) Temporaries() map[string]string {
	out := make(map[string]string, len(in.files))
	for _, f := range in.files {
		out[f.name] = f.tmp
	}
	return out
}

// Create creates the file that Commit will publish as name, under its temporary name, open for
// reading and writing. The Install owns the returned file and closes it; the caller only reads
// and writes it (including with CloneRange, CopyRange, Mover.Move and SpliceToFile). It fails
// with an error wrapping fs.ErrExist if name already exists in the directory.
func (in *Install) Create(name string) (*os.File, error) {
	if in.done {
		return nil, ErrInstallDone
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	for _, f := range in.files {
		if f.name == name {
			return nil, fmt.Errorf("%w: %q created twice", ErrBadName, name)
		}
	}
	final := filepath.Join(in.dir, name)
	if _, err := os.Lstat(final); err == nil {
		return nil, &os.PathError{Op: "install", Path: final, Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := in.takeLock(); err != nil {
		return nil, err
	}
	tmp := filepath.Join(in.dir, TempPrefix+in.id+"-"+name)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	in.files = append(in.files, &installFile{name: name, tmp: tmp, f: f})
	return f, nil
}

// Commit makes the created files durable and publishes them under their final names, the
// marker last, as described on Install. On failure it rolls back (removes whatever it had
// published and every temporary) and returns the error joined with any rollback error.
func (in *Install) Commit() error {
	order, err := in.finishing()
	if err != nil {
		return err
	}
	if err := in.commit(order); err != nil {
		return errors.Join(err, in.rollback())
	}
	// The set is durable and complete. If removing the record fails, CleanLeftovers finds the
	// marker in place and only removes the record, so the install has still succeeded.
	_ = os.Remove(in.intentPath())
	_ = in.releaseLock()
	return nil
}

// Publish renames the files to their final names without syncing anything: for a private
// scratch directory that no reader shares and that is removed after use (a crash leaves it to
// the next sweep), where durability buys nothing. The files stay open for the Install to close.
func (in *Install) Publish() error {
	order, err := in.finishing()
	if err != nil {
		return err
	}
	for _, f := range order {
		if err := renameNoReplace(f.tmp, filepath.Join(in.dir, f.name)); err != nil {
			return errors.Join(err, in.rollback())
		}
		f.renamed = true
	}
	for _, f := range in.files {
		if f.f != nil {
			f.f.Close()
			f.f = nil
		}
	}
	return in.releaseLock()
}

func (in *Install) commit(order []*installFile) error {
	for _, f := range in.files {
		if err := f.f.Sync(); err != nil {
			return err
		}
		if err := f.f.Close(); err != nil {
			return err
		}
		f.f = nil
	}
	if err := in.writeIntent(order); err != nil {
		return err
	}
	if err := syncDir(in.dir); err != nil {
		return err
	}
	for i, f := range order {
		if i == len(order)-1 {
			// Everything before the marker must be durable before the marker can be.
			if err := syncDir(in.dir); err != nil {
				return err
			}
		}
		if in.beforeRename != nil {
			if err := in.beforeRename(f.name); err != nil {
				return err
			}
		}
		if err := renameNoReplace(f.tmp, filepath.Join(in.dir, f.name)); err != nil {
			return err
		}
		f.renamed = true
	}
	return syncDir(in.dir)
}

// takeLock makes and holds the install's owner lock, once.
func (in *Install) takeLock() error {
	if in.lock != nil {
		return nil
	}
	final := filepath.Join(in.dir, TempPrefix+in.id+lockSuffix)
	// Where the kernel can, the lock file gets its name only once locked (an unnamed file,
	// then linked): a cleaner in another fetch into this directory never sees it unlocked.
	// Elsewhere it is made under a second name and renamed, which a concurrent cleaner can
	// take for a dead owner's leftover between the create and the flock.
	if f, err := lockedUnnamed(in.dir, final); err == nil {
		in.lock = f
		return nil
	} else if !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	f, err := os.OpenFile(final+"x", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err := lockOwner(f); err != nil {
		return errors.Join(err, f.Close(), os.Remove(f.Name()))
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return errors.Join(err, f.Close(), os.Remove(f.Name()))
	}
	in.lock = f
	return nil
}

// releaseLock ends the install's ownership: its lock file goes, then the lock.
func (in *Install) releaseLock() error {
	if in.lock == nil {
		return nil
	}
	err := removeIfExists(filepath.Join(in.dir, TempPrefix+in.id+lockSuffix))
	err = errors.Join(err, in.lock.Close())
	in.lock = nil
	return err
}

// finishing ends the install's building (Commit or Publish) and returns its rename order; a set
// that cannot be published is rolled back.
func (in *Install) finishing() ([]*installFile, error) {
	if in.done {
		return nil, ErrInstallDone
	}
	in.done = true
	order, err := in.renameOrder()
	if err != nil {
		return nil, errors.Join(err, in.rollback())
	}
	return order, nil
}

// renameOrder puts the marker last, keeping creation order otherwise.
func (in *Install) renameOrder() ([]*installFile, error) {
	if len(in.files) == 0 {
		return nil, fmt.Errorf("fsx: install into %s: no files", in.dir)
	}
	if in.marker == "" {
		return in.files, nil
	}
	order := make([]*installFile, 0, len(in.files))
	var marker *installFile
	for _, f := range in.files {
		if f.name == in.marker {
			marker = f
			continue
		}
		order = append(order, f)
	}
	if marker == nil {
		return nil, fmt.Errorf("fsx: install into %s: marker %q was not created", in.dir, in.marker)
	}
	return append(order, marker), nil
}

func (in *Install) intentPath() string {
	return filepath.Join(in.dir, TempPrefix+in.id+intentSuffix)
}

func (in *Install) writeIntent(order []*installFile) error { return in.writeIntentSync(order, true) }

// writeIntentSync writes the intent record, fsyncing it when sync (a caller that flushes the
// whole file system next need not).
func (in *Install) writeIntentSync(order []*installFile, sync bool) error {
	var b bytes.Buffer
	b.WriteString(intentHeader + "\n")
	for _, f := range order {
		b.WriteString(f.name + "\n")
	}
	b.WriteString(intentTrailer + "\n")
	f, err := os.OpenFile(in.intentPath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b.Bytes())
	if err == nil && sync {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// Abort discards the install: it closes and removes every temporary (and, after a failed
// Commit, whatever that had published). It is a no-op after a successful Commit or a previous
// Abort, so `defer in.Abort()` is the usual pattern.
func (in *Install) Abort() error {
	if in.done {
		return nil
	}
	in.done = true
	return in.rollback()
}

// rollback undoes an unfinished install: renamed finals first and durably, then the intent
// record, then temporaries, so that at every instant a crash leaves either a record that
// describes what to undo or nothing to undo.
func (in *Install) rollback() error {
	var errs []error
	renamed := false
	for _, f := range in.files {
		if f.f != nil {
			errs = append(errs, f.f.Close())
			f.f = nil
		}
		if f.renamed {
			errs = append(errs, removeIfExists(filepath.Join(in.dir, f.name)))
			renamed = true
		}
	}
	if renamed {
		errs = append(errs, syncDir(in.dir))
	}
	errs = append(errs, removeIfExists(in.intentPath()))
	for _, f := range in.files {
		if !f.renamed {
			errs = append(errs, removeIfExists(f.tmp))
		}
	}
	errs = append(errs, in.releaseLock())
	return errors.Join(errs...)
}

// CleanLeftovers removes what interrupted installs left in dir and returns the removed base
// names: the final-named files of an install that crashed before its marker was durable, then
// every TempPrefix file of an install whose owner is gone (its owner lock not held). Installs in
// flight, this process's or another's, are left alone, so any process may call it at any time;
// before owner locks, it had to run at start-up, before any Install in dir began: it could not tell
// a running install's temporaries from a dead one's.
func CleanLeftovers(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	// Installs in flight (another process's, or this one's) hold their owner lock: their
	// files stay. Only the leftovers of installs whose owner is gone are removed.
	alive := map[string]bool{}
	for _, e := range entries {
		if id, ok := lockID(e.Name()); ok && ownerAlive(filepath.Join(dir, e.Name())) {
			alive[id] = true
		}
	}
	kept := entries[:0:0]
	for _, e := range entries {
		if id, ok := tempID(e.Name()); ok && alive[id] {
			continue
		}
		kept = append(kept, e)
	}
	entries = kept
	var removed []string
	remove := func(name string) error {
		if err := removeIfExists(filepath.Join(dir, name)); err != nil {
			return err
		}
		removed = append(removed, name)
		return nil
	}
	// Partial sets first, while their records and temporaries still say what is ours.
	for _, e := range entries {
		id, ok := intentID(e.Name())
		if !ok {
			continue
		}
		names, err := readIntent(filepath.Join(dir, e.Name()))
		if err != nil {
			return removed, err
		}
		if len(names) == 0 || installComplete(dir, id, names[len(names)-1]) {
			continue
		}
		for _, name := range names {
			if exists(filepath.Join(dir, name)) && !exists(filepath.Join(dir, TempPrefix+id+"-"+name)) {
				if err := remove(name); err != nil {
					return removed, err
				}
			}
		}
	}
	if len(removed) > 0 {
		// The partial sets must be gone durably before their records go.
		if err := syncDir(dir); err != nil {
			return removed, err
		}
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			if err := remove(e.Name()); err != nil {
				return removed, err
			}
		}
	}
	if len(removed) > 0 {
		return removed, syncDir(dir)
	}
	return removed, nil
}

// installComplete reports whether the marker was published: its final name exists and its
// temporary does not (a final name with the temporary still present is someone else's).
func installComplete(dir, id, marker string) bool {
	return exists(filepath.Join(dir, marker)) && !exists(filepath.Join(dir, TempPrefix+id+"-"+marker))
}

// tempID returns the install id of any name an install makes (TempPrefix, the id, then "-"
// and a final name, or a suffix).
func tempID(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, TempPrefix)
	if !ok {
		return "", false
	}
	if i := strings.IndexAny(rest, "-."); i > 0 {
		return rest[:i], true
	}
	return "", false
}

// lockID returns the install id of an owner lock's name (made or being made).
func lockID(name string) (string, bool) {
	id, ok := tempID(name)
	if !ok {
		return "", false
	}
	suffix := strings.TrimPrefix(name, TempPrefix+id)
	return id, suffix == lockSuffix || suffix == lockSuffix+"x"
}

// intentID returns the install id of an intent record's name.
func intentID(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, TempPrefix)
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, intentSuffix)
	if !ok || id == "" || strings.ContainsAny(id, "-.") {
		return "", false
	}
	return id, true
}

// readIntent returns the final names of an intent record, or none for a torn record (written
// before any rename, so nothing was published).
func readIntent(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseIntent(data), nil
}

// parseIntent parses an intent record; anything but a complete, well-formed record yields nil.
func parseIntent(data []byte) []string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() || sc.Text() != intentHeader {
		return nil
	}
	var names []string
	for sc.Scan() {
		line := sc.Text()
		if line == intentTrailer {
			if len(data) == 0 || data[len(data)-1] != '\n' || sc.Scan() {
				return nil
			}
			return names
		}
		if checkName(line) != nil {
			return nil
		}
		names = append(names, line)
	}
	return nil
}

// checkName accepts a plain file name that an Install may publish.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\n\x00") ||
		strings.HasPrefix(name, TempPrefix) {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// CommitAll commits several installs into one directory as Commit does each, but shares the
// syncs between them: every file and intent record made durable (one syncfs when there are
// many files, else each fsynced and then one directory sync); every non-marker renamed, one
// directory sync (none on XFS, see renamesDurableInOrder); every marker renamed, one directory
// sync. Each install keeps its own crash consistency (its record, its marker last), and
// together they publish with at most three syncs instead of three each: what a split into many
// children spends most of its time on otherwise. On failure every install is rolled back.
func CommitAll(ins ...*Install) error {
	if len(ins) == 0 {
		return nil
	}
	dir := ins[0].dir
	orders := make([][]*installFile, len(ins))
	fail := func(err error) error {
		errs := []error{err}
		for _, in := range ins {
			errs = append(errs, in.rollback())
		}
		return errors.Join(errs...)
	}
	for i, in := range ins {
		if in.done {
			return fail(ErrInstallDone)
		}
		in.done = true
		if in.dir != dir {
			return fail(fmt.Errorf("fsx: CommitAll: installs into %s and %s", dir, in.dir))
		}
		var err error
		if orders[i], err = in.renameOrder(); err != nil {
			return fail(err)
		}
	}
	// Files and intent records durable, then the directory. With many files one syncfs does
	// all of it; otherwise each file and record is fsynced and the directory after them.
	var files []*installFile
	for _, in := range ins {
		files = append(files, in.files...)
	}
	whole := false
	if len(files) >= syncAllFiles {
		for i, in := range ins {
			if err := in.writeIntentSync(orders[i], false); err != nil {
				return fail(err)
			}
		}
		ok, err := syncFS(dir)
		if err != nil {
			return fail(err)
		}
		whole = ok
	}
	if whole {
		if err := closeAll(files); err != nil {
			return fail(err)
		}
	} else {
		if err := syncFiles(files); err != nil {
			return fail(err)
		}
		for i, in := range ins {
			if err := in.writeIntent(orders[i]); err != nil && !errors.Is(err, fs.ErrExist) {
				return fail(err)
			} else if errors.Is(err, fs.ErrExist) {
				// Written unsynced above before syncfs turned out to be unavailable.
				if err := syncPath(in.intentPath()); err != nil {
					return fail(err)
				}
			}
		}
		if err := syncDir(dir); err != nil {
			return fail(err)
		}
	}
	// Non-markers of every install, one sync, then the markers: a durable marker still implies
	// a durable set. Where renames become durable in the order they are made (XFS), the
	// markers follow the other renames without a sync between: a durable marker implies the
	// renames before it were made durable first, and one device flush is saved.
	inOrder := renamesDurableInOrder(dir)
	for _, markers := range []bool{false, true} {
		for i, in := range ins {
			order := orders[i]
			files := order[:len(order)-1]
			if markers {
				files = order[len(order)-1:]
			}
			for _, f := range files {
				if in.beforeRename != nil {
					if err := in.beforeRename(f.name); err != nil {
						return fail(err)
					}
				}
				if err := renameNoReplace(f.tmp, filepath.Join(dir, f.name)); err != nil {
					return fail(err)
				}
				f.renamed = true
			}
		}
		if !markers && inOrder {
			continue
		}
		if err := syncDir(dir); err != nil {
			return fail(err)
		}
	}
	for _, in := range ins {
		_ = os.Remove(in.intentPath())
		_ = in.releaseLock()
	}
	return nil
}

// syncAllFiles is how many files make CommitAll flush the whole file system (one syncfs)
// rather than fsync each file. syncfs also flushes unrelated dirty data on the same file
// system, so it is kept for installs of many files, where per-file flushes (each a device
// flush on a loop device or a disk without a volatile cache) dominate.
const syncAllFiles = 16

func closeAll(files []*installFile) error {
	var errs []error
	for _, f := range files {
		errs = append(errs, f.f.Close())
		f.f = nil
	}
	return errors.Join(errs...)
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// syncFiles fsyncs and closes files, several at a time: file systems batch concurrent log
// forces, so this costs little more than one.
func syncFiles(files []*installFile) error {
	errs := make([]error, len(files))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f.f.Sync(); err != nil {
				errs[i] = err
				return
			}
			errs[i] = f.f.Close()
		}()
	}
	wg.Wait()
	for i, f := range files {
		if errs[i] == nil {
			f.f = nil
		}
	}
	return errors.Join(errs...)
}
