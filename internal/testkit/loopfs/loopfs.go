// Package loopfs makes loop-mounted file systems for tests and benchmarks that need a real one
// (a reflink-capable XFS, a tiny ext4 to fill): a sparse image, mkfs, mount -o loop, and an
// unmount that cleans up. It needs root and the mkfs tools, and says so when they are missing.
package loopfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrUnavailable reports that a loop-mounted file system cannot be made here: not root,
// the mkfs tool is missing, or the kernel refused the mount. Tests skip on it; benchmarks say
// so and stop.
var ErrUnavailable = errors.New("loop-mounted file system unavailable")

// Mount creates a sparse image of size bytes in base, formats it with mkfs (args before the
// image path) and loop-mounts it at base/mnt. unmount detaches it (lazily if something is still
// open) and removes the image. pkg names the Debian package that provides mkfs, for the error.
func Mount(base string, size int64, mkfs, pkg string, args ...string) (mnt string, unmount func() error, err error) {
	if os.Geteuid() != 0 {
		return "", nil, fmt.Errorf("%w: mounting a %s loop file system needs root", ErrUnavailable, mkfs)
	}
	mkfsPath, err := exec.LookPath(mkfs)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %s not found (install the Debian package %s)", ErrUnavailable, mkfs, pkg)
	}
	img := filepath.Join(base, "fs.img")
	f, err := os.Create(img)
	if err != nil {
		return "", nil, err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(img)
		return "", nil, err
	}
	if out, err := exec.Command(mkfsPath, append(args, img)...).CombinedOutput(); err != nil {
		os.Remove(img)
		return "", nil, fmt.Errorf("%s %s: %v\n%s", mkfs, img, err, out)
	}
	mnt = filepath.Join(base, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		os.Remove(img)
		return "", nil, err
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		os.Remove(img)
		return "", nil, fmt.Errorf("%w: the kernel refused to loop-mount a %s image: %v\n%s", ErrUnavailable, mkfs, err, out)
	}
	unmount = func() error {
		var errs []error
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("umount %s: %v\n%s(detaching lazily)", mnt, err, out))
			if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("umount -l %s: %v\n%s", mnt, err, out))
			}
		}
		errs = append(errs, os.Remove(img), os.Remove(mnt))
		return errors.Join(errs...)
	}
	return mnt, unmount, nil
}

// MountXFS loop-mounts a reflink-capable XFS (mkfs.xfs -m reflink=1, from xfsprogs).
func MountXFS(base string, size int64) (string, func() error, error) {
	return Mount(base, size, "mkfs.xfs", "xfsprogs", "-q", "-m", "reflink=1")
}
