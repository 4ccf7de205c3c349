package stream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/wire"
)

// fetchState is the resume record a Fetch keeps in its target directory: which of the
// sender's sstables it already installed, and under which local name, and the verified
// Data.db prefix of the one it was receiving. It is rewritten atomically (temporary name
// under fsx.TempPrefix, fsync, rename, directory fsync) after every install and checkpoint.
// When a session completes with nothing failed the record keeps only what it installed: a
// repeated Fetch of the same request with Resume then skips all of it, so repeating a fetch
// ends with the same partitions, each once.
type fetchState struct {
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

// partPattern and scratchPattern are os.CreateTemp / MkdirTemp patterns for this request.
func (st *fetchState) partPattern() string    { return partPrefix + st.key + "-*" }
func (st *fetchState) scratchPattern() string { return scratchPrefix + st.key + "-*" }

// manifestHash identifies a manifest for partialState.Manifest.
func manifestHash(m *wire.Manifest) string {
	h := sha256.Sum256(m.Append(nil))
	return hex.EncodeToString(h[:])
}

// loadState reads the record, keeping only entries whose sstable is still installed and a
// partial whose kept file still holds its prefix. A missing or unreadable record is an
// empty one; without resume the record is always empty (and the next save replaces it).
func loadState(dir, peer, keyspace, table, ranges string, resume bool) *fetchState {
	st := &fetchState{Peer: peer, Keyspace: keyspace, Table: table, Ranges: ranges, Installed: map[string]string{},
		dir: dir, key: stateKey(peer, keyspace, table, ranges), path: statePath(dir, peer, keyspace, table, ranges)}
	if !resume {
		return st
	}
	b, err := os.ReadFile(st.path)
	if err != nil {
		return st
	}
	var old fetchState
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
		if fi, err := os.Lstat(filepath.Join(dir, p.Path)); err == nil && fi.Mode().IsRegular() && fi.Size() >= p.Bytes {
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
func (st *fetchState) ownsPart(name string) bool {
	return strings.HasPrefix(name, partPrefix+st.key+"-") && filepath.Base(name) == name
}

// sweep removes what earlier Fetches of this same request left in the directory and the
// record does not name: kept Data.db files other than the record's partial (a crash
// between creating one and recording it, or a record that was dropped) and rows scratch
// directories (a crashed rewrite). Files of other requests, of installs and of anyone
// else are left alone: only names carrying this request's key are touched. It must run
// before this Fetch creates any file of its own.
func (st *fetchState) sweep() error {
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

func (st *fetchState) save() error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(st.path, b, 0o644)
}

// complete drops the kept file of a partial and saves the record of what is installed.
func (st *fetchState) complete() error {
	if st.Partial != nil {
		if err := removeIfExists(filepath.Join(st.dir, st.Partial.Path)); err != nil {
			return err
		}
		st.Partial = nil
	}
	return st.save()
}
