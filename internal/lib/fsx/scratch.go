package fsx

import (
	"os"
)

// Scratch opens a new file in dir that has no name: it holds spilled working state (a
// builder's samples too many to keep in memory) and vanishes when closed, or when the process
// dies, without anything for CleanLeftovers to find. On Linux it is an O_TMPFILE; elsewhere,
// or where the filesystem refuses O_TMPFILE, a TempPrefix file removed as soon as it is open.
func Scratch(dir string) (*os.File, error) {
	if f, err := openUnnamed(dir); err == nil {
		return f, nil
	}
	f, err := os.CreateTemp(dir, TempPrefix+"scratch-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}
