//go:build unix

package cassandra

import (
	"os"
	"syscall"
)

// device is the file system a file lives on; ok is false where it cannot be told.
func device(fi os.FileInfo) (dev uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true //nolint:unconvert // Dev is int32 on some unixes
}
