package fsxtest

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMounts: each helper returns a writable mount of the promised type, and SharedBytes sees
// no sharing in a plain file.
func TestMounts(t *testing.T) {
	for name, tc := range map[string]struct {
		mount func(testing.TB, string) string
		size  string
		magic int64
	}{
		"xfs":  {MountXFS, "300M", unix.XFS_SUPER_MAGIC},
		"ext4": {MountSmallFS, "4M", unix.EXT4_SUPER_MAGIC},
	} {
		t.Run(name, func(t *testing.T) {
			dir := tc.mount(t, tc.size)
			var st unix.Statfs_t
			if err := unix.Statfs(dir, &st); err != nil {
				t.Fatal(err)
			}
			if st.Type != tc.magic {
				t.Fatalf("file system type %#x, want %#x", st.Type, tc.magic)
			}
			path := filepath.Join(dir, "f")
			if err := os.WriteFile(path, make([]byte, 8192), 0o644); err != nil {
				t.Fatal(err)
			}
			if name == "xfs" {
				if n := SharedBytes(t, path); n != 0 {
					t.Fatalf("a plain file has %d shared bytes", n)
				}
			}
		})
	}
}
