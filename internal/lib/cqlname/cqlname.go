// Package cqlname checks keyspace and table names against Cassandra's rule for them
// (SchemaConstants.isValidName): 1 to 48 characters of [A-Za-z0-9_]. Every place a name
// enters sluice — the command line, the admin API, a peer call, a StreamRequest — checks it
// before the name reaches a path, so no name can climb out of a data directory.
package cqlname

import (
	"errors"
	"fmt"
)

// MaxLength is Cassandra's SchemaConstants.NAME_LENGTH.
const MaxLength = 48

// ErrInvalid reports a name outside the rule.
var ErrInvalid = errors.New("invalid name")

// Check returns nil when name is a valid keyspace or table name; what is "keyspace" or
// "table", for the message.
func Check(what, name string) error {
	if name == "" || len(name) > MaxLength {
		return fmt.Errorf("%w: %s %q: want 1 to %d characters of [A-Za-z0-9_]", ErrInvalid, what, name, MaxLength)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("%w: %s %q: character %q at %d is not in [A-Za-z0-9_]", ErrInvalid, what, name, c, i)
		}
	}
	return nil
}

// CheckTable checks a keyspace and a table name.
func CheckTable(keyspace, table string) error {
	if err := Check("keyspace", keyspace); err != nil {
		return err
	}
	return Check("table", table)
}
