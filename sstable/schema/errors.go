package schema

import "errors"

// ErrBadType reports a marshal type string that is not well formed (unbalanced parentheses,
// a missing parameter, a non-hex UDT field name, nesting deeper than MaxTypeDepth).
var ErrBadType = errors.New("malformed marshal type")

// ErrUnknownType reports a type class in org.apache.cassandra.db.marshal that sluice does not
// know. Guessing its value width would mis-read every row after it, so it is refused.
var ErrUnknownType = errors.New("unknown marshal type")

// ErrBadHeader reports a SerializationHeader that cannot describe rows: an unparsable column
// or clustering type, or a duplicate column name.
var ErrBadHeader = errors.New("unusable serialization header")
