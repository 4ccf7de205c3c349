package stats

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/sstable/encoding"
)

// BoundKind is a ClusteringPrefix.Kind ordinal.
type BoundKind uint8

const (
	ExclEndBound              BoundKind = 0
	InclStartBound            BoundKind = 1
	ExclEndInclStartBoundary  BoundKind = 2
	StaticClustering          BoundKind = 3
	Clustering                BoundKind = 4
	InclEndExclStartBoundary  BoundKind = 5
	InclEndBound              BoundKind = 6
	ExclStartBound            BoundKind = 7
	maxBoundKind                        = ExclStartBound
	clusteringHeaderBatchSize           = 32
)

// ClusteringBound is one end of a Slice as ClusteringBound.Serializer writes it:
// `u8 kind, u16 size`, then the values in batches of 32, each batch preceded by an unsigned
// vint header holding two bits per value (bit 2i: empty, bit 2i+1: null). Null and empty
// values are not written; a value of a fixed-width type is written raw, any other with an
// unsigned-vint length.
//
// In Values a nil element is a null value and a non-nil empty slice an empty value.
type ClusteringBound struct {
	Kind   BoundKind
	Values [][]byte
}

// Slice is the covered clustering range of an sstable (StatsMetadata.coveredClustering).
type Slice struct {
	Start, End ClusteringBound
}

// AllSlice is Slice.ALL, Cassandra's default covered clustering: an empty inclusive start
// bound and an empty inclusive end bound.
func AllSlice() Slice {
	return Slice{Start: ClusteringBound{Kind: InclStartBound}, End: ClusteringBound{Kind: InclEndBound}}
}

const marshalPrefix = "org.apache.cassandra.db.marshal."

// fixedWidths are AbstractType.valueLengthIfFixed for the Cassandra 5.0 marshal types that
// override it. Every other type (text, blob, varint, decimal, inet, duration, tinyint,
// smallint, date, time, collections, tuples, UDTs, composites) is variable-width. Counter
// columns cannot be clustering columns, so CounterColumnType is not listed.
var fixedWidths = map[string]int{
	"BooleanType":     1,
	"Int32Type":       4,
	"FloatType":       4,
	"LongType":        8,
	"DoubleType":      8,
	"DateType":        8,
	"TimestampType":   8,
	"UUIDType":        16,
	"TimeUUIDType":    16,
	"LexicalUUIDType": 16,
	"EmptyType":       0,
}

// valueWidth is valueLengthIfFixed for a marshal type string: the fixed width in bytes, or -1
// for a variable-width type. ReversedType(x) has x's width; VectorType(x,n) of a fixed-width
// x has n times x's width.
func valueWidth(t string) (int, error) {
	t = strings.TrimSpace(t)
	name, args, hasArgs := strings.Cut(strings.TrimPrefix(t, marshalPrefix), "(")
	if !hasArgs {
		if w, ok := fixedWidths[name]; ok {
			return w, nil
		}
		return -1, nil
	}
	if !strings.HasSuffix(args, ")") {
		return 0, fmt.Errorf("%w: unbalanced parameters in %q", ErrUnsupportedType, t)
	}
	args = args[:len(args)-1]
	switch name {
	case "ReversedType":
		return valueWidth(args)
	case "VectorType":
		comma := lastTopLevelComma(args)
		if comma < 0 {
			return 0, fmt.Errorf("%w: %q", ErrUnsupportedType, t)
		}
		dim, err := strconv.Atoi(strings.TrimSpace(args[comma+1:]))
		if err != nil || dim < 0 {
			return 0, fmt.Errorf("%w: vector dimension in %q", ErrUnsupportedType, t)
		}
		w, err := valueWidth(args[:comma])
		if err != nil || w < 0 {
			return w, err
		}
		return w * dim, nil
	}
	return -1, nil
}

func lastTopLevelComma(s string) int {
	depth, at := 0, -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				at = i
			}
		}
	}
	return at
}

// valueWidths resolves the width of every clustering type.
func valueWidths(types []string) ([]int, error) {
	w := make([]int, len(types))
	for i, t := range types {
		var err error
		if w[i], err = valueWidth(t); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func parseBound(r *encoding.Reader, widths []int) ClusteringBound {
	if p := r.Rest(); len(p) > 0 && BoundKind(p[0]) > maxBoundKind {
		r.Failf("clustering bound kind %d", p[0])
		return ClusteringBound{}
	}
	b := ClusteringBound{Kind: BoundKind(r.U8())}
	size := int(r.U16())
	if r.Err() != nil || size == 0 {
		return b
	}
	// Each batch of up to 32 values costs at least its 1-byte header.
	if size > r.Len()*clusteringHeaderBatchSize {
		r.Fail(fmt.Sprintf("clustering bound of %d values", size), encoding.ErrTruncated)
		return b
	}
	b.Values = make([][]byte, size)
	for off := 0; off < size && r.Err() == nil; {
		limit := min(size, off+clusteringHeaderBatchSize)
		header := readUVint(r)
		if used := uint(2 * (limit - off)); used < 64 && header>>used != 0 {
			r.Fail("clustering header: bits beyond its values", ErrNonCanonical)
			return b
		}
		for ; off < limit && r.Err() == nil; off++ {
			shift := uint(2 * (off % clusteringHeaderBatchSize))
			null, empty := header>>(shift+1)&1 == 1, header>>shift&1 == 1
			switch {
			case null && empty:
				r.Fail("clustering header: value both null and empty", ErrNonCanonical)
			case null:
			case empty:
				b.Values[off] = []byte{}
			case off >= len(widths):
				r.Failf("clustering value %d has no type (%d types)", off, len(widths))
			case widths[off] >= 0:
				if widths[off] == 0 {
					r.Fail("zero-width clustering value not marked empty", ErrNonCanonical)
					break
				}
				if p := r.Bytes(widths[off]); p != nil {
					b.Values[off] = append([]byte{}, p...)
				}
			default:
				p := readVintBytes(r)
				if r.Err() == nil && len(p) == 0 {
					r.Fail("empty clustering value not marked empty", ErrNonCanonical)
				}
				b.Values[off] = p
			}
		}
	}
	return b
}

// appendBound writes b. A value of a fixed-width type is written raw whatever its length,
// so callers must supply values of the right width, as Cassandra asserts.
func appendBound(dst []byte, b ClusteringBound, widths []int) []byte {
	dst = append(dst, byte(b.Kind))
	dst = encoding.AppendU16(dst, uint16(len(b.Values)))
	for off := 0; off < len(b.Values); {
		limit := min(len(b.Values), off+clusteringHeaderBatchSize)
		var header uint64
		for i := off; i < limit; i++ {
			shift := uint(2 * (i % clusteringHeaderBatchSize))
			switch v := b.Values[i]; {
			case v == nil:
				header |= 1 << (shift + 1)
			case len(v) == 0:
				header |= 1 << shift
			}
		}
		dst = encoding.AppendUVint(dst, header)
		for ; off < limit; off++ {
			v := b.Values[off]
			if len(v) == 0 {
				continue
			}
			if off < len(widths) && widths[off] >= 0 {
				dst = append(dst, v...)
			} else {
				dst = encoding.AppendVintBytes(dst, v)
			}
		}
	}
	return dst
}

// parseImprovedMinMax reads the clustering type list (AbstractTypeSerializer.serializeList:
// uvint count, then vint-length type strings) and the covered Slice that follows it.
func parseImprovedMinMax(r *encoding.Reader) ([]string, Slice) {
	n := readUVintCount(r, "clustering types", 1)
	if n < 0 {
		return nil, Slice{}
	}
	types := make([]string, n)
	for i := range types {
		types[i] = string(readVintBytes(r))
	}
	if r.Err() != nil {
		return nil, Slice{}
	}
	widths, err := valueWidths(types)
	if err != nil {
		r.Fail("clustering types", err)
		return nil, Slice{}
	}
	var s Slice
	s.Start = parseBound(r, widths)
	s.End = parseBound(r, widths)
	return types, s
}

func appendImprovedMinMax(b []byte, types []string, s Slice) []byte {
	b = encoding.AppendUVint(b, uint64(len(types)))
	for _, t := range types {
		b = encoding.AppendVintBytes(b, []byte(t))
	}
	// Append cannot fail; an unsizable type falls back to vint-length values, which Parse
	// would then reject rather than misread.
	widths, _ := valueWidths(types)
	b = appendBound(b, s.Start, widths)
	return appendBound(b, s.End, widths)
}
