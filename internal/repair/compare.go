package repair

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
)

// valueCmp orders two non-empty values of one type.
type valueCmp func(a, b []byte) int

// signedCmp orders fixed-width two's-complement big-endian integers: the sign bit flipped,
// then unsigned bytes. Values of unexpected width fall back to bytes, as nothing valid has them.
func signedCmp(a, b []byte) int {
	if len(a) != len(b) || len(a) == 0 {
		return bytes.Compare(a, b)
	}
	if a[0] != b[0] {
		if int8(a[0]) < int8(b[0]) {
			return -1
		}
		return 1
	}
	return bytes.Compare(a[1:], b[1:])
}

// timeOrder is the byte order of a version 1 UUID's timestamp: time_hi (with the version),
// time_mid, time_low.
var timeOrder = [8]int{6, 7, 4, 5, 0, 1, 2, 3}

func timestampCmp(a, b []byte) int {
	for _, i := range timeOrder {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// uuidCmp is UUIDType: the version, the timestamp when both are version 1, then unsigned bytes.
func uuidCmp(a, b []byte) int {
	if len(a) != 16 || len(b) != 16 {
		return bytes.Compare(a, b)
	}
	if va, vb := a[6]>>4, b[6]>>4; va != vb {
		if va < vb {
			return -1
		}
		return 1
	}
	if a[6]>>4 == 1 {
		if c := timestampCmp(a, b); c != 0 {
			return c
		}
	}
	return bytes.Compare(a, b)
}

// timeUUIDCmp is TimeUUIDType: the timestamp, then the clock sequence and node as signed bytes.
func timeUUIDCmp(a, b []byte) int {
	if len(a) != 16 || len(b) != 16 {
		return bytes.Compare(a, b)
	}
	if c := timestampCmp(a, b); c != 0 {
		return c
	}
	for i := 8; i < 16; i++ {
		if a[i] != b[i] {
			if int8(a[i]) < int8(b[i]) {
				return -1
			}
			return 1
		}
	}
	return 0
}

// scalarCmps are the clustering types whose order is known, by unqualified class name.
var scalarCmps = map[string]valueCmp{
	"UTF8Type": bytes.Compare, "AsciiType": bytes.Compare, "BytesType": bytes.Compare,
	"BooleanType": bytes.Compare, "InetAddressType": bytes.Compare,
	"Int32Type": signedCmp, "LongType": signedCmp, "ShortType": signedCmp, "ByteType": signedCmp,
	"TimestampType": signedCmp, "TimeType": signedCmp, "SimpleDateType": bytes.Compare,
	"UUIDType": uuidCmp, "TimeUUIDType": timeUUIDCmp, "LexicalUUIDType": bytes.Compare,
}

// component orders one clustering column's values, reversed for ReversedType.
type component struct {
	cmp      valueCmp
	reversed bool
}

// comparator orders clusterings, rows and range tombstone bounds of one table as Cassandra's
// ClusteringComparator does.
type comparator []component

func newComparator(types []*schema.Type) (comparator, error) {
	out := make(comparator, len(types))
	for i, t := range types {
		base := t.Base()
		c, ok := scalarCmps[strings.TrimPrefix(base.Name, schema.MarshalPackage)]
		if !ok || base.Kind != schema.KindScalar {
			return nil, fmt.Errorf("%w: clustering column %d is %s", ErrUnsupportedClustering, i, t)
		}
		out[i] = component{cmp: c, reversed: t.Kind == schema.KindReversed}
	}
	return out, nil
}

// value orders one component: a null (nil) first, then an empty value, then by type.
func (c component) value(a, b []byte) int {
	var r int
	switch {
	case a == nil || b == nil:
		return boolCmp(a != nil, b != nil) // nulls only occur in bounds; never reversed
	case len(a) == 0 || len(b) == 0:
		r = boolCmp(len(a) != 0, len(b) != 0)
	default:
		r = c.cmp(a, b)
	}
	if c.reversed {
		return -r
	}
	return r
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// position is where a row or bound sits among clusterings: its values and, for bounds, the
// side of equal-prefix clusterings it lies on (-1 before, +1 after; 0 for a row).
type position struct {
	values [][]byte
	side   int
}

// sideOf is ClusteringPrefix.Kind.comparedToClustering.
func sideOf(k rows.BoundKind) int {
	switch k {
	case rows.ExclEndBound, rows.InclStartBound, rows.ExclEndInclStartBoundary:
		return -1
	}
	return 1
}

// compare orders positions as ClusteringComparator.compare orders prefixes.
func (c comparator) compare(a, b position) int {
	n := min(len(a.values), len(b.values))
	for i := 0; i < n && i < len(c); i++ {
		if r := c[i].value(a.values[i], b.values[i]); r != 0 {
			return r
		}
	}
	switch {
	case len(a.values) == len(b.values):
		return a.side - b.side
	case len(a.values) < len(b.values):
		if a.side == 0 {
			return -1
		}
		return a.side
	default:
		if b.side == 0 {
			return 1
		}
		return -b.side
	}
}
