package fsx

import (
	"errors"
	"os"
	"path/filepath"
)

// This file is the one durable write of small files sluice keeps: node state, operation
// journals, fetch records. Sstables go through Install.

// SyncDir fsyncs a directory, making the creations, renames and removals in it durable.
// Windows cannot open a directory for syncing and makes renames durable on its own terms;
// there it does nothing.
func SyncDir(dir string) error { return syncDir(dir) }

// WriteFileAtomic replaces path with data durably: it writes a temporary file beside path
// (".<name>.tmp-*", which no sstable scan or CleanLeftovers touches, so a concurrent split in
// the same directory cannot pull it away), fsyncs and closes it, renames it over path and
// fsyncs the directory. A reader, or a restart after a crash at any point, sees the old file
// or the new one, never a mix; a crash may leave the small temporary behind.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return SyncDir(dir)
}

// CopyNew copies the file src to dst, which must not exist yet, with CopyRange (copy_file_range
// where the kernel can), and syncs dst. A dst left by a failure is the caller's to remove.
func CopyNew(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := CopyRange(out, 0, in, 0, fi.Size()); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
