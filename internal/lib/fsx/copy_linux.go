package fsx

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// maxChunk caps one copy_file_range or sendfile call; the kernel clamps to about 2 GiB anyway.
const maxChunk = 1 << 30

func cloneRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) error {
	return control2(src, dst, func(sfd, dfd int) error {
		arg := unix.FileCloneRange{
			Src_fd:      int64(sfd),
			Src_offset:  uint64(srcOff),
			Src_length:  uint64(n),
			Dest_offset: uint64(dstOff),
		}
		for {
			err := unix.IoctlFileCloneRange(dfd, &arg)
			switch {
			case err == unix.EINTR:
				// Cloning the same range again is idempotent.
				continue
			case err != nil && cloneUnsupported(err):
				return fmt.Errorf("%w: %w", ErrCloneUnsupported, err)
			}
			return err
		}
	})
}

// copyFileRange copies with copy_file_range(2), which takes explicit offsets and so moves no
// file position. It stops early, without error, on a zero count (the kernel gave up, or src
// ended) or on an errno that means this pair cannot use it: ENOSYS (old kernel), EXDEV (file
// systems it will not copy across), EINVAL (unsupported file type or flags), EOPNOTSUPP, and
// EPERM (seccomp filters in containers). The caller falls back for the rest.
func copyFileRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (int64, error) {
	var done int64
	err := control2(src, dst, func(sfd, dfd int) error {
		for done < n {
			so, do := srcOff+done, dstOff+done
			k, err := unix.CopyFileRange(sfd, &so, dfd, &do, int(min(n-done, maxChunk)), 0)
			switch {
			case err == unix.EINTR:
				continue
			case err != nil && errnoIn(err, unix.ENOSYS, unix.EXDEV, unix.EINVAL, unix.EOPNOTSUPP, unix.EPERM):
				return nil
			case err != nil:
				return err
			case k == 0:
				return nil
			}
			done += int64(k)
		}
		return nil
	})
	return done, err
}

// sendfileRange copies with sendfile(2). The source offset is explicit, but sendfile writes at
// dst's file offset, so it seeks dst first (see CopyRange). It stops early, without error, on
// a zero count or on EINVAL/ENOSYS/EOPNOTSUPP (a pair sendfile does not handle, such as an
// O_APPEND destination).
func sendfileRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (int64, error) {
	var done int64
	err := control2(src, dst, func(sfd, dfd int) error {
		if _, err := unix.Seek(dfd, dstOff, io.SeekStart); err != nil {
			return err
		}
		off := srcOff
		for done < n {
			k, err := unix.Sendfile(dfd, sfd, &off, int(min(n-done, maxChunk)))
			switch {
			case err == unix.EINTR:
				continue
			case err != nil && errnoIn(err, unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP):
				return nil
			case err != nil:
				return err
			case k == 0:
				return nil
			}
			done += int64(k)
		}
		return nil
	})
	return done, err
}

// reflinkPlatform says whether this platform has FICLONERANGE at all.
const reflinkPlatform = true

// statDevSize returns the device holding f and f's size.
func statDevSize(f *os.File) (dev uint64, size int64, err error) {
	var st unix.Stat_t
	err = control(f, func(fd int) error { return unix.Fstat(fd, &st) })
	if err != nil {
		return 0, 0, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return st.Dev, st.Size, nil
}

// fsBlockSize returns the block size of the file system holding f: the granularity that
// FICLONERANGE offsets and lengths must respect.
func fsBlockSize(f *os.File) (int64, error) {
	var st unix.Statfs_t
	if err := control(f, func(fd int) error { return unix.Fstatfs(fd, &st) }); err != nil {
		return 0, &os.PathError{Op: "fstatfs", Path: f.Name(), Err: err}
	}
	return st.Bsize, nil
}
