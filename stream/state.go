package stream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sluicedb/sluice/internal/fsx"
	"github.com/sluicedb/sluice/sstable/descriptor"
)

// fetchState is the resume record a Fetch keeps in its target directory: which of the
// sender's sstables it already installed, and under which local name. It is rewritten
// atomically (temporary name under fsx.TempPrefix, fsync, rename, directory fsync) after
// every install and removed when a session completes with nothing failed.
type fetchState struct {
	Peer      string            `json:"peer"`
	Keyspace  string            `json:"keyspace"`
	Table     string            `json:"table"`
	Ranges    string            `json:"ranges"`
	Installed map[string]string `json:"installed"` // sender's sstable ID -> local TOC file name
	path      string
}

// statePath names the record of one (peer, table, ranges) request; another request into
// the same directory keeps its own.
func statePath(dir, peer, keyspace, table, ranges string) string {
	h := sha256.Sum256([]byte(peer + "\x00" + keyspace + "\x00" + table + "\x00" + ranges))
	return filepath.Join(dir, ".sluice-fetch-"+hex.EncodeToString(h[:8])+".json")
}

// loadState reads the record, keeping only entries whose sstable is still installed.
// A missing or unreadable record is an empty one.
func loadState(dir, peer, keyspace, table, ranges string, resume bool) *fetchState {
	st := &fetchState{Peer: peer, Keyspace: keyspace, Table: table, Ranges: ranges, Installed: map[string]string{},
		path: statePath(dir, peer, keyspace, table, ranges)}
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
		if d, c, err := descriptor.Parse(filepath.Join(dir, toc)); err == nil && c == descriptor.TOC {
			if _, err := os.Stat(d.Path(descriptor.TOC)); err == nil {
				st.Installed[id] = toc
			}
		}
	}
	return st
}

func (st *fetchState) save() error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	dir := filepath.Dir(st.path)
	f, err := os.CreateTemp(dir, fsx.TempPrefix+"fetch-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), st.path); err != nil {
		return err
	}
	return syncDir(dir)
}

func (st *fetchState) remove() error {
	if err := os.Remove(st.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Dir(st.path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
