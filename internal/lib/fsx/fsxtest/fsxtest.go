// Package fsxtest mounts small loop-device file systems for tests of package fsx and its users:
// an XFS with reflink for clone tests and a tiny ext4 for disk-full tests. It runs mkfs and
// mount(8) and so needs root; a test that cannot have them is skipped with a message naming
// what is missing, never failed. It never installs packages.
//
// It imports loopfs (whose Mount it wraps) and must not be imported by non-test code.
package fsxtest

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/loopfs"
)

// MountXFS creates a sparse image of size bytes ("300M", "1G", or a plain byte count; XFS
// needs at least 300 MiB, which costs only the few MiB mkfs writes), formats it with
// `mkfs.xfs -m reflink=1` and loop-mounts it. It returns the mount point, which t.Cleanup
// unmounts before removing the image. Files the test opened there must be closed by then.
//
// It skips the test when not root, when mkfs.xfs is missing (Debian package xfsprogs), or when
// the kernel refuses the loop mount or XFS.
func MountXFS(t testing.TB, size string) string {
	t.Helper()
	return mount(t, size, "mkfs.xfs", "xfsprogs", "-q", "-m", "reflink=1")
}

// MountSmallFS is MountXFS for a small ext4 (at least "2M") without reserved blocks, so that a
// test can fill it and see ENOSPC even as root. ext4 has no reflink. mkfs.ext4 comes from the
// Debian package e2fsprogs.
func MountSmallFS(t testing.TB, size string) string {
	t.Helper()
	return mount(t, size, "mkfs.ext4", "e2fsprogs", "-q", "-F", "-m", "0")
}

func mount(t testing.TB, size, mkfs, pkg string, mkfsArgs ...string) string {
	t.Helper()
	n, err := parseSize(size)
	if err != nil {
		t.Fatalf("fsxtest: %v", err)
	}
	mnt, unmount, err := loopfs.Mount(t.TempDir(), n, mkfs, pkg, mkfsArgs...)
	if errors.Is(err, loopfs.ErrUnavailable) {
		t.Skipf("fsxtest: %v", err)
	}
	if err != nil {
		t.Fatalf("fsxtest: %v", err)
	}
	// Registered after t.TempDir's own cleanup, so it runs first.
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Errorf("fsxtest: %v", err)
		}
	})
	return mnt
}

// parseSize reads a byte count with an optional K, M or G suffix (powers of 1024).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	num := s
	if len(s) > 0 {
		switch s[len(s)-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		}
		if mult > 1 {
			num = s[:len(s)-1]
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v <= 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q: want a positive byte count with an optional K, M or G", s)
	}
	return v * mult, nil
}

// SharedBytes returns how many bytes of the file at path lie in extents the file system
// reports as shared (FIEMAP_EXTENT_SHARED), using `xfs_io -c "fiemap -v"`: x/sys/unix has no
// FIEMAP wrapper, and xfs_io comes with mkfs.xfs. It skips the test when xfs_io is missing.
func SharedBytes(t testing.TB, path string) int64 {
	t.Helper()
	xfsIO, err := exec.LookPath("xfs_io")
	if err != nil {
		t.Skipf("fsxtest: xfs_io not found (install the Debian package xfsprogs): %v", err)
	}
	// fiemap on a file with dirty pages syncs it first (FIEMAP_FLAG_SYNC is xfs_io's default).
	out, err := exec.Command(xfsIO, "-r", "-c", "fiemap -v", path).CombinedOutput()
	if err != nil {
		t.Fatalf("fsxtest: xfs_io fiemap %s: %v\n%s", path, err, out)
	}
	n, err := parseFiemap(out)
	if err != nil {
		t.Fatalf("fsxtest: xfs_io fiemap %s: %v\n%s", path, err, out)
	}
	return n
}

// fiemapShared is FIEMAP_EXTENT_SHARED from linux/fiemap.h.
const fiemapShared = 0x2000

// parseFiemap sums the lengths of shared extents in `xfs_io -c "fiemap -v"` output, whose extent
// lines read "   0: [0..2047]:   192..2239   2048 0x2001": index, file range and disk range in
// 512-byte units, length in units, flags in hex. Holes ("hole" instead of a disk range) are
// not extents and are skipped.
func parseFiemap(out []byte) (int64, error) {
	var shared int64
	for _, line := range bytes.Split(out, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) != 5 || !strings.HasSuffix(f[0], ":") || !strings.HasPrefix(f[1], "[") {
			continue
		}
		units, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("extent length %q: %v", f[3], err)
		}
		flags, err := strconv.ParseUint(strings.TrimPrefix(f[4], "0x"), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("extent flags %q: %v", f[4], err)
		}
		if flags&fiemapShared != 0 {
			shared += units * 512
		}
	}
	return shared, nil
}
