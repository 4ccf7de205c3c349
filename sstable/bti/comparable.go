package bti

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/sluicedb/sluice/sstable/token"
)

// ByteSource constants (utils/bytecomparable/ByteSource.java, OSS50).
const (
	byteEscape        = 0x00
	byteEscaped0Cont  = 0xFE
	byteEscaped0Done  = 0xFF
	byteNextComponent = 0x40
	byteNextNull      = 0x3F
	// byteNextEmptyReversed is NEXT_COMPONENT_EMPTY_REVERSED: an empty value of a reversed type.
	byteNextEmptyReversed = 0x41
	byteTerminator        = 0x38
	byteLTNextComponent   = 0x20
	byteGTNextComponent   = 0x60
	byteExcluded          = 0x18
)

// AppendDecoratedKey appends the OSS50 ByteComparable form of the decorated key (t, key):
// 0x40, the token, 0x40, the escaped key, 0x38 (DecoratedKey.asComparableBytes). A Murmur3
// token is 8 big-endian bytes of Long^0x8000000000000000 (ByteSource.of(long)); any other
// token is its escaped Bytes (BytesToken). It allocates nothing when dst has room.
func AppendDecoratedKey(dst []byte, t token.Token, key []byte) []byte {
	dst = append(dst, byteNextComponent)
	if t.Kind == token.KindMurmur3 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(t.Long)^(1<<63))
	} else {
		dst = appendEscaped(dst, t.Bytes)
	}
	dst = append(dst, byteNextComponent)
	dst = appendEscaped(dst, key)
	return append(dst, byteTerminator)
}

// byteAfterToken follows the token in AppendTokenBound: above the 0x40 that follows it in a
// key's form, below every byte that continues a longer escaped token.
const byteAfterToken = byteNextComponent + 1

// AppendTokenBound appends the ByteComparable position between the forms of the decorated
// keys whose token is at most t and the forms of those whose token is greater: 0x40, t as
// AppendDecoratedKey writes it, 0x41. No key's form equals it (a key has 0x40 there), so a
// key's form is above it exactly when the key's token is above t.
func AppendTokenBound(dst []byte, t token.Token) []byte {
	dst = append(dst, byteNextComponent)
	if t.Kind == token.KindMurmur3 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(t.Long)^(1<<63))
	} else {
		dst = appendEscaped(dst, t.Bytes)
	}
	return append(dst, byteAfterToken)
}

// ComparePrefix places the keys whose ByteComparable form begins with prefix (a trie path)
// against bound (AppendTokenBound): -1 when they all sort below it, +1 above it, and 0 when
// prefix is too short to say (it is a proper prefix of bound): then only the key itself can.
func ComparePrefix(prefix, bound []byte) int {
	n := min(len(prefix), len(bound))
	for i := range n {
		if prefix[i] != bound[i] {
			if prefix[i] < bound[i] {
				return -1
			}
			return 1
		}
	}
	if len(prefix) < len(bound) {
		return 0
	}
	// The form continues bound (only a damaged trie gets here: a key has 0x40 where bound
	// has 0x41), so it sorts above it.
	return 1
}

// appendEscaped appends b in the weakly prefix-free escaped form of
// ByteSource.AbstractReinterpreter (OSS50): a 0x00 is written as is and opens an escape; a
// further 0x00 becomes 0xFE, any other byte is preceded by 0xFF; the value ends with 0x00,
// or with 0xFE when it ended inside an escape.
func appendEscaped(dst, b []byte) []byte {
	for {
		// A run without 0x00 is written as is.
		i := bytes.IndexByte(b, byteEscape)
		if i < 0 {
			return append(append(dst, b...), byteEscape)
		}
		dst = append(dst, b[:i+1]...) // the 0x00 opens an escape
		b = b[i+1:]
		for len(b) > 0 && b[0] == byteEscape {
			dst = append(dst, byteEscaped0Cont)
			b = b[1:]
		}
		if len(b) == 0 {
			return append(dst, byteEscaped0Cont)
		}
		dst = append(dst, byteEscaped0Done)
	}
}

// ClusteringKind is Cassandra's ClusteringPrefix.Kind, numbered by its ordinal.
type ClusteringKind uint8

const (
	ExclEndBound ClusteringKind = iota
	InclStartBound
	ExclEndInclStartBoundary
	StaticClustering
	Clustering
	InclEndExclStartBoundary
	InclEndBound
	ExclStartBound
)

// terminator is Kind.asByteComparableValue(OSS50).
func (k ClusteringKind) terminator() (byte, bool) {
	switch k {
	case ExclEndBound, InclStartBound, ExclEndInclStartBoundary:
		return byteLTNextComponent, true
	case StaticClustering:
		return byteExcluded, true
	case Clustering:
		return byteTerminator, true
	case InclEndExclStartBoundary, InclEndBound, ExclStartBound:
		return byteGTNextComponent, true
	}
	return 0, false
}

// AppendClusteringComparable appends the OSS50 ByteComparable form of a clustering prefix
// (ClusteringComparator.asByteComparable): for each component 0x40 and its type's
// ByteComparable form (0x3F alone for a nil component), then the kind's terminator.
// types are the clustering types as Cassandra names them (e.g.
// "org.apache.cassandra.db.marshal.UTF8Type"); values may be fewer than types for bounds.
// Supported: byte-order types (UTF8Type, AsciiType, BytesType, whose form is the escaped
// value), the fixed-length signed numbers (Int32Type, ShortType, ByteType: the sign bit
// flipped) and ReversedType of any of them (every byte inverted); any other type yields
// ErrUnsupportedType.
func AppendClusteringComparable(dst []byte, types []string, values [][]byte, kind ClusteringKind) ([]byte, error) {
	term, ok := kind.terminator()
	if !ok {
		return dst, fmt.Errorf("%w: clustering kind %d", ErrInvalid, kind)
	}
	if len(values) > len(types) {
		return dst, fmt.Errorf("%w: %d clustering values for %d types", ErrInvalid, len(values), len(types))
	}
	for i, v := range values {
		inner, reversed := unwrapReversed(types[i])
		fixed, known := fixedSignedLength(inner)
		if !known && !byteOrderType(inner) {
			return dst, fmt.Errorf("%w: %s", ErrUnsupportedType, types[i])
		}
		if v == nil {
			dst = append(dst, byteNextNull)
			continue
		}
		if known && len(v) == 0 {
			// An empty fixed-length number has no ByteSource: the separator says so.
			if reversed {
				dst = append(dst, byteNextEmptyReversed)
			} else {
				dst = append(dst, byteNextNull)
			}
			continue
		}
		dst = append(dst, byteNextComponent)
		start := len(dst)
		if known {
			if len(v) != fixed {
				return dst, fmt.Errorf("%w: %d-byte value of %s", ErrInvalid, len(v), inner)
			}
			// ByteSource.signedFixedLengthNumber: the sign bit flipped.
			dst = append(dst, v[0]^0x80)
			dst = append(dst, v[1:]...)
		} else {
			dst = appendEscaped(dst, v)
		}
		if reversed {
			// ReversedType.asComparableBytes inverts every byte of its base type's form.
			for j := start; j < len(dst); j++ {
				dst[j] = ^dst[j]
			}
		}
	}
	return append(dst, term), nil
}

// unwrapReversed strips ReversedType(...) (a DESC clustering column).
func unwrapReversed(t string) (string, bool) {
	const p = "org.apache.cassandra.db.marshal.ReversedType("
	if strings.HasPrefix(t, p) && strings.HasSuffix(t, ")") {
		return t[len(p) : len(t)-1], true
	}
	return t, false
}

// fixedSignedLength reports the types whose ByteComparable form (OSS50) is
// ByteSource.optionalSignedFixedLengthNumber: the value with its sign bit flipped.
func fixedSignedLength(t string) (int, bool) {
	switch strings.TrimPrefix(t, "org.apache.cassandra.db.marshal.") {
	case "Int32Type":
		return 4, true
	case "ShortType":
		return 2, true
	case "ByteType":
		return 1, true
	}
	return 0, false
}

// byteOrderType reports whether t's ByteComparable form is ByteSource.of(value): the types
// whose comparison is plain unsigned byte order.
func byteOrderType(t string) bool {
	switch strings.TrimPrefix(t, "org.apache.cassandra.db.marshal.") {
	case "UTF8Type", "AsciiType", "BytesType":
		return true
	}
	return false
}
