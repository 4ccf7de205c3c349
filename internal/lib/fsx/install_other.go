//go:build !linux

package fsx

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
)

// renameNoReplace checks, then renames: portable, and racy only against another writer
// choosing the same final name.
func renameNoReplace(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(from, to)
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// syncFS is unavailable here; callers fsync file by file.
func syncFS(dir string) (bool, error) { return false, nil }

// renamesDurableInOrder is not assumed on this platform.
func renamesDurableInOrder(dir string) bool { return false }

// openUnnamed has no O_TMPFILE here; Scratch falls back to a removed temporary file.
func openUnnamed(string) (*os.File, error) { return nil, errors.ErrUnsupported }

// lockedUnnamed has no unnamed files here: the owner lock is made under a second name.
func lockedUnnamed(string, string) (*os.File, error) { return nil, errors.ErrUnsupported }

// lockOwner has no flock here: every install's leftovers count as its owner's gone.
func lockOwner(*os.File) error { return nil }

// ownerAlive cannot tell here: no owner is known alive.
func ownerAlive(string) bool { return false }
