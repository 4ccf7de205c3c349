package stream

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/wire"
)

// Resume state: everything a Fetch persists to resume a request, and reads back, is here
// (stream/doc.go, "Resume", has the protocol and the crash argument).

// resumeState is the resume record a Fetch keeps in its target directory: which of the
// sender's sstables it already installed, and under which local name, and the verified
// Data.db prefix of the one it was receiving. It is rewritten atomically (temporary name
// under fsx.TempPrefix, fsync, rename, directory fsync) before every commit and at every
// checkpoint. When a session completes with nothing failed the record keeps only what it
// installed: a repeated Fetch of the same request with Resume then skips all of it, so
// repeating a fetch ends with the same partitions, each once. It also owns the kept Data.db
// files (keep, checkpoint, drop, replay) and the resume points this session sent.
type resumeState struct {
	Peer      string            `json:"peer"`
	Keyspace  string            `json:"keyspace"`
	Table     string            `json:"table"`
	Ranges    string            `json:"ranges"`
	Installed map[string]string `json:"installed"` // sender's sstable ID -> local TOC file name
	Partial   *partialState     `json:"partial,omitempty"`
	dir       string
	key       string // names this request's files in dir
	path      string
	// warnings say which entries of the record were ignored, and why.
	warnings []string
	// pending are the resume points with verified chunks this session sent, by sstable ID:
	// the sender restarts those sstables' Data.db after them (replayFor takes each).
	pending map[string]uint64
}

// partialState is a partly received sstable: its Data.db kept under Path (a hard link to
// the aborted install's temporary, named partPrefix), of which the first VerifiedChunks
// chunks, Bytes bytes, were verified and fsynced before this record was written. Manifest
// is the SHA-256 of the manifest it was received under: a resumed session uses the prefix
// only under an identical one.
type partialState struct {
	ID             string `json:"id"`
	Path           string `json:"path"`
	VerifiedChunks uint64 `json:"verified_chunks"`
	Bytes          int64  `json:"bytes"`
	Manifest       string `json:"manifest"`
	// Fill, for a partial filled in place, is the fill's clean point Bytes is: Path then holds
	// the child as written (its first Fill.Written bytes), not the sender's layout.
	Fill *slice.FillState `json:"fill,omitempty"`
}

// Names of the files a Fetch keeps in its target directory besides installs. None starts
// with fsx.TempPrefix, whose files fsx.CleanLeftovers (and so every slice.Split into the
// directory) removes without asking whose they are; none ends like a component, so
// descriptor.List and NextGeneration ignore them.
const (
	statePrefix   = ".sluice-fetch-"
	partPrefix    = ".sluice-part-"
	scratchPrefix = ".sluice-rows-"
)

// stateKey names the record of one (peer, table, ranges) request; another request into
// the same directory keeps its own.
func stateKey(peer, keyspace, table, ranges string) string {
	h := sha256.Sum256([]byte(peer + "\x00" + keyspace + "\x00" + table + "\x00" + ranges))
	return hex.EncodeToString(h[:8])
}

func statePath(dir, peer, keyspace, table, ranges string) string {
	return filepath.Join(dir, statePrefix+stateKey(peer, keyspace, table, ranges)+".json")
}

// keptLength is how many bytes the kept file holds for this prefix: the received bytes, or
// the child written from them when filled in place.
func (p *partialState) keptLength() int64 {
	if p.Fill != nil {
		return p.Fill.Written
	}
	return p.Bytes
}

// partPattern and scratchPattern are os.CreateTemp / MkdirTemp patterns for this request.
func (st *resumeState) partPattern() string    { return partPrefix + st.key + "-*" }
func (st *resumeState) scratchPattern() string { return scratchPrefix + st.key + "-*" }

// manifestHash identifies a manifest for partialState.Manifest.
func manifestHash(m *wire.Manifest) string {
	h := sha256.Sum256(m.Append(nil))
	return hex.EncodeToString(h[:])
}

// loadState reads the record, keeping only entries whose sstable is still installed and a
// partial whose kept file still holds its prefix. A missing or unreadable record is an
// empty one; without resume the record is always empty (and the next save replaces it).
func loadState(dir, peer, keyspace, table, ranges string, resume bool) *resumeState {
	st := &resumeState{Peer: peer, Keyspace: keyspace, Table: table, Ranges: ranges, Installed: map[string]string{},
		dir: dir, key: stateKey(peer, keyspace, table, ranges), path: statePath(dir, peer, keyspace, table, ranges)}
	if !resume {
		return st
	}
	b, err := os.ReadFile(st.path)
	if err != nil {
		return st
	}
	var old resumeState
	if json.Unmarshal(b, &old) != nil || old.Peer != peer || old.Keyspace != keyspace || old.Table != table || old.Ranges != ranges {
		return st
	}
	for id, toc := range old.Installed {
		// An entry names a TOC of the target directory itself: no separator, no "..", no
		// symbolic link followed. Anything else (a record edited or planted to point at
		// another directory) is ignored, so the sstable is fetched again.
		if !localName(toc) {
			st.warnings = append(st.warnings, fmt.Sprintf("resume record %s: entry for %q names %q, not a file of %s: ignored", st.path, id, toc, dir))
			continue
		}
		d, c, err := descriptor.Parse(filepath.Join(dir, toc))
		if err != nil || c != descriptor.TOC {
			continue
		}
		if fi, err := os.Lstat(d.Path(descriptor.TOC)); err == nil {
			if !fi.Mode().IsRegular() {
				st.warnings = append(st.warnings, fmt.Sprintf("resume record %s: entry for %q names %q, which is not a regular file: ignored", st.path, id, toc))
				continue
			}
			st.Installed[id] = toc
		}
	}
	if p := old.Partial; p != nil && st.ownsPart(p.Path) && p.VerifiedChunks > 0 && p.VerifiedChunks != ResumeInstalled && p.Bytes > 0 {
		if fi, err := os.Lstat(filepath.Join(dir, p.Path)); err == nil && fi.Mode().IsRegular() && fi.Size() >= p.keptLength() {
			if _, done := st.Installed[p.ID]; !done {
				st.Partial = p
			}
		}
	}
	return st
}

// localName says whether name is a plain file name: no directory part, not "." or "..".
func localName(name string) bool {
	return name != "" && name != "." && name != ".." && filepath.Base(name) == name && !strings.ContainsAny(name, "/\\\x00")
}

// ownsPart says whether name is a kept Data.db of this request.
func (st *resumeState) ownsPart(name string) bool {
	return strings.HasPrefix(name, partPrefix+st.key+"-") && filepath.Base(name) == name
}

// sweep removes what earlier Fetches of this same request left in the directory and the
// record does not name: kept Data.db files other than the record's partial (a crash
// between creating one and recording it, or a record that was dropped) and rows scratch
// directories (a crashed rewrite). Files of other requests, of installs and of anyone
// else are left alone: only names carrying this request's key are touched. It must run
// before this Fetch creates any file of its own.
func (st *resumeState) sweep() error {
	ents, err := os.ReadDir(st.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		name := e.Name()
		switch {
		case st.ownsPart(name) && !e.IsDir():
			if st.Partial == nil || st.Partial.Path != name {
				errs = append(errs, removeIfExists(filepath.Join(st.dir, name)))
			}
		case strings.HasPrefix(name, scratchPrefix+st.key+"-") && e.IsDir():
			errs = append(errs, os.RemoveAll(filepath.Join(st.dir, name)))
		}
	}
	return errors.Join(errs...)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (st *resumeState) save() error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(st.path, b, 0o644)
}

// complete drops the kept file of a partial and saves the record of what is installed.
func (st *resumeState) complete() error {
	if st.Partial != nil {
		if err := removeIfExists(filepath.Join(st.dir, st.Partial.Path)); err != nil {
			return err
		}
		st.Partial = nil
	}
	return st.save()
}

// points are the resume points of a Fetch with Resume: every installed sstable (the sender
// leaves it out: skipped lists them) and the partial one's verified chunks.
func (st *resumeState) points() (points []wire.ResumePoint, skipped []string) {
	for id := range st.Installed {
		points = append(points, wire.ResumePoint{SSTableID: id, VerifiedChunks: ResumeInstalled})
		skipped = append(skipped, id)
	}
	sort.Strings(skipped)
	st.pending = map[string]uint64{}
	if p := st.Partial; p != nil {
		points = append(points, wire.ResumePoint{SSTableID: p.ID, VerifiedChunks: p.VerifiedChunks})
		st.pending[p.ID] = p.VerifiedChunks
	}
	return points, skipped
}

// replayFor says which kept prefix, of how many bytes, must fill the gap before the offset
// the sender restarts in's Data.db at (0 when it sends the sstable whole); a record that
// does not match in's manifest fails the sstable.
func (st *resumeState) replayFor(in *Incoming) (path string, n int64, fill *slice.FillState, err error) {
	v, ok := st.pending[in.ID]
	if !ok {
		return "", 0, nil, nil
	}
	delete(st.pending, in.ID)
	off, ok := in.ResumeOffset(v)
	if !ok {
		return "", 0, nil, nil
	}
	p := st.Partial
	if p == nil || p.ID != in.ID || p.VerifiedChunks != v || p.Bytes != off || p.Manifest != in.manifestHash() {
		return "", 0, nil, fmt.Errorf("%w: the kept Data.db prefix of %s was received under another manifest", ErrManifest, in.ID)
	}
	return filepath.Join(st.dir, p.Path), off, p.Fill, nil
}

// replay feeds the first n bytes of a Data.db kept by an interrupted session (path) through
// Accept and write, as if they had arrived again: one sequential read copies them into the
// installer's Data.db, re-verifies their chunk CRCs and rebuilds the digest and CRC.db state.
func replay(inst installer, in *Incoming, path string, n int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, min(n, 1<<20))
	for off := int64(0); off < n; {
		k := min(int64(len(buf)), n-off)
		if err := readFull(f, "the kept Data.db prefix "+path, buf[:k], off); err != nil {
			return err
		}
		d := in.DataFrame(off, buf[:k])
		if err := in.Accept(&d); err != nil {
			return fmt.Errorf("kept Data.db prefix %s: %w", path, err)
		}
		if err := inst.write(&d); err != nil {
			return err
		}
		off += k
	}
	return nil
}

// keep gives the Data.db being received a second name, a hard link in the target directory
// named for this request, which survives the install's abort: a later resume reads the
// verified prefix from it. Where hard links are impossible it returns "" and the sstable can
// only restart from its beginning.
func (st *resumeState) keep(data Writable) (string, error) {
	if data == nil {
		return "", nil // nothing a resume could replay (a partial filled in place)
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	name := strings.Replace(st.partPattern(), "*", hex.EncodeToString(b[:]), 1)
	if err := os.Link(data.Name(), filepath.Join(st.dir, name)); err != nil {
		return "", nil
	}
	return name, nil
}

// checkpoint makes the verified Data.db prefix of in durable and records it, atomically, as
// the partial sstable of this request, replacing any earlier kept file.
//
// Crash argument: the data file is fsynced before the record naming its prefix is written,
// and the record is replaced atomically (save), so a record never names bytes that are not
// on disk; and the resumed session re-verifies every compressed chunk of the prefix as it
// copies it (replay). A kept file is created before any record names it and removed after
// the record stops naming it; one left unnamed by a crash in between is removed by the next
// Fetch of the same request (sweep). data is the installer's Data.db, or nil once the
// installer is gone (a rows sstable whose Finish failed): then the kept name is synced, the
// same inode.
func (st *resumeState) checkpoint(in *Incoming, data Writable, part string) error {
	p, ok := st.prefix(in, part)
	if !ok {
		return nil
	}
	var err error
	if data != nil {
		err = data.Sync()
	} else {
		err = syncFile(filepath.Join(st.dir, part))
	}
	if err != nil {
		return err
	}
	return st.record(p)
}

// prefix is the record of in's verified prefix kept in part, as a checkpoint now would write
// it; false when none is worth writing.
func (st *resumeState) prefix(in *Incoming, part string) (*partialState, bool) {
	chunks, off, ok := in.CheckpointAt(len(st.pending))
	if !ok {
		return nil, false
	}
	var fill *slice.FillState
	if in.fillClean != nil {
		// Filled in place: the last point the fill can take up again, before the verified
		// chunks (its bytes are written too; what follows may wait on later chunks).
		fs, ok := in.fillClean()
		if !ok {
			return nil, false
		}
		chunks, off, fill = uint64(fs.Chunks), fs.Bytes, &fs
	}
	return &partialState{ID: in.ID, Path: part, VerifiedChunks: chunks, Bytes: off, Manifest: in.manifestHash(), Fill: fill}, true
}

// record writes p, whose bytes are durable, as the partial sstable of this request,
// replacing any earlier kept file.
func (st *resumeState) record(p *partialState) error {
	old := st.Partial
	st.Partial = p
	if err := st.save(); err != nil {
		return err
	}
	if old != nil && old.Path != p.Path {
		return removeIfExists(filepath.Join(st.dir, old.Path))
	}
	return nil
}

// unnamed reports whether part is a kept file the record does not name.
func (st *resumeState) unnamed(part string) bool {
	return part != "" && (st.Partial == nil || st.Partial.Path != part)
}

// drop forgets the kept prefix of sstable id, which failed for good, and removes part, its
// kept file in this session.
func (st *resumeState) drop(id, part string) error {
	var errs []error
	if p := st.Partial; p != nil && p.ID == id {
		st.Partial = nil
		errs = append(errs, st.save(), removeIfExists(filepath.Join(st.dir, p.Path)))
	}
	if part != "" {
		errs = append(errs, removeIfExists(filepath.Join(st.dir, part)))
	}
	return errors.Join(errs...)
}

// publishing names sstables about to be committed, sender ID to the local TOC name, before
// their commit: loadState keeps an entry only while its TOC exists, so a crash before the
// commit fetches them again and one after it does not (recorded after the commit, they
// would be installed twice).
func (st *resumeState) publishing(tocs map[string]string) error {
	for id, toc := range tocs {
		st.Installed[id] = toc
	}
	return st.save()
}

// unpublished forgets sstables whose commit failed or will not happen.
func (st *resumeState) unpublished(ids ...string) error {
	for _, id := range ids {
		delete(st.Installed, id)
	}
	return st.save()
}

// installed notes that sstable id is installed: the record stops naming its kept prefix,
// and part, the kept file, goes (if its removal is lost, the next Fetch's sweep removes it).
func (st *resumeState) installed(id, part string) error {
	if p := st.Partial; p != nil && p.ID == id {
		st.Partial = nil
		if err := st.save(); err != nil {
			return err
		}
	}
	if part != "" {
		os.Remove(filepath.Join(st.dir, part))
	}
	return nil
}

// syncFile fsyncs the file at path.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
