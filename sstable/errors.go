package sstable

import (
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// ErrMissingComponent reports a component the format requires that is not on disk.
var ErrMissingComponent = errors.New("missing component")

// ErrCorrupt reports a component whose contents contradict the format or another component.
var ErrCorrupt = errors.New("corrupt")

// fileErr names the component file err belongs to (encoding.InFile): the innermost file is the
// one to blame, so a Rows.db failure found while walking Partitions.db stays a Rows.db failure.
func fileErr(file string, err error) error { return encoding.InFile(file, err) }

func fileErrf(file string, format string, args ...any) error {
	return encoding.InFile(file, fmt.Errorf(format, args...))
}
