package fsx

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames without replacing an existing target (renameat2 RENAME_NOREPLACE).
// File systems without the flag (EINVAL) get a check-then-rename, which is racy but only
// against another writer choosing the same final name, which sstable generations rule out.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errnoIn(err, unix.EINVAL, unix.ENOSYS) {
		if _, serr := os.Lstat(to); serr == nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
		} else if !errors.Is(serr, fs.ErrNotExist) {
			return serr
		}
		return os.Rename(from, to)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// syncFS flushes every dirty page and the journal of the file system holding dir in one call
// (syncfs). For many small files it is one device flush where per-file fsyncs are many.
func syncFS(dir string) (bool, error) {
	d, err := os.Open(dir)
	if err != nil {
		return true, err
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return true, &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return true, nil
}

// renamesDurableInOrder reports whether dir's file system makes its directory operations
// durable in the order they were made: XFS, which logs every rename as a transaction, writes
// transactions to its log in commit order and replays the log in order up to the first
// incomplete record, so a rename that is durable implies that every rename made before it is.
// Ext4 (jbd2) behaves alike, but shares its magic number with ext2, which has no journal;
// other file systems are not assumed to.
func renamesDurableInOrder(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.XFS_SUPER_MAGIC
}

// lockedUnnamed makes an owner lock file already locked when it gets its name: an unnamed
// file in dir (O_TMPFILE), flocked, then linked as final. errors.ErrUnsupported when the file
// system has no unnamed files or /proc is not mounted (the caller makes it the other way).
func lockedUnnamed(dir, final string) (*os.File, error) {
	f, err := openUnnamed(dir)
	if err != nil {
		return nil, errors.ErrUnsupported
	}
	if err := lockOwner(f); err != nil {
		f.Close()
		return nil, err
	}
	proc := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, final, unix.AT_SYMLINK_FOLLOW); err != nil {
		f.Close()
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EXDEV) {
			if _, serr := os.Stat(proc); serr != nil {
				return nil, errors.ErrUnsupported
			}
		}
		return nil, &os.LinkError{Op: "link", Old: proc, New: final, Err: err}
	}
	return f, nil
}

// lockOwner takes an exclusive flock on f, held until f is closed or the process ends: the
// kernel releases it when its owner dies, however it dies.
func lockOwner(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }

// ownerAlive reports whether another open file holds the owner lock at path: the install it
// names is in flight. A lock file nobody holds (its owner died) or that is gone says no.
func ownerAlive(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return false
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}
