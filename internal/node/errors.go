package node

import (
	"errors"
	"fmt"
)

// ErrUnknownTable reports a Hold of a keyspace.table that has no directory in any data
// directory.
var ErrUnknownTable = errors.New("node: unknown table")

// ErrAmbiguousTable reports a keyspace.table with live sstables under more than one table id
// (a table dropped and re-created while the old directory kept its files): the node cannot
// tell which one is current without the schema.
var ErrAmbiguousTable = errors.New("node: table has live sstables under several table ids")

// ErrUnstableTable reports a Hold that kept finding sstables deleted between listing and
// linking them (a compaction storm) and gave up.
var ErrUnstableTable = errors.New("node: table changed during every snapshot attempt")

// ErrAlreadyRun reports a second call to Node.Run.
var ErrAlreadyRun = errors.New("node: Run called twice")

// ConfigError names the configuration field that failed validation, with its YAML path
// (e.g. "throughput.inbound_bytes_per_second").
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config: %s: %s", e.Field, e.Reason) }

func configErrorf(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
