package rows

import (
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/schema"
)

// AppendClusteringPrefix appends a ClusteringPrefix as ClusteringPrefix.Serializer writes it
// inside BIG promoted-index IndexInfo entries: the kind's ordinal byte, then for a bound or
// boundary (any kind but CLUSTERING, 4) a u16 value count, then the values with their 2-bit
// null/empty headers per 32 values. values must match t's clustering widths.
func AppendClusteringPrefix(dst []byte, t *schema.Table, kind uint8, values [][]byte) []byte {
	dst = append(dst, kind)
	if kind != clusteringKind {
		dst = encoding.AppendU16(dst, uint16(len(values)))
	}
	return appendClusteringValues(dst, t.ClusteringWidths, values)
}

// appendClusteringValues is ClusteringPrefix.Serializer.serializeValuesWithoutSize.
func appendClusteringValues(dst []byte, widths []int, values [][]byte) []byte {
	for i, v := range values {
		if i%32 == 0 {
			dst = encoding.AppendUVint(dst, clusteringHeader(values, i))
		}
		if len(v) == 0 {
			continue
		}
		if widths[i] < 0 {
			dst = encoding.AppendUVint(dst, uint64(len(v)))
		}
		dst = append(dst, v...)
	}
	return dst
}

// ReadClusteringPrefix reads what AppendClusteringPrefix writes, appending the values (which
// alias b; nil for null) to dst. It returns the kind, the values and the bytes consumed.
func ReadClusteringPrefix(b []byte, t *schema.Table, dst [][]byte) (kind uint8, values [][]byte, n int, err error) {
	r := encoding.NewReader(b)
	kind = r.U8()
	count := len(t.ClusteringWidths)
	if kind != clusteringKind {
		count = int(r.U16())
		if r.Err() == nil && (kind > maxBoundKind || kind == staticClusteringKind || count > len(t.ClusteringWidths)) {
			r.Failf("clustering bound of kind %d with %d values for %d clustering columns", kind, count, len(t.ClusteringWidths))
		}
	}
	var header uint64
	for i := 0; i < count && r.Err() == nil; i++ {
		if i%32 == 0 {
			header = r.UVint()
		}
		switch (header >> (2 * uint(i%32))) & 3 {
		case 1:
			dst = append(dst, b[r.Offset():r.Offset()])
		case 2, 3: // isNull is tested first (ClusteringPrefix.Serializer)
			dst = append(dst, nil)
		default:
			w := t.ClusteringWidths[i]
			if w < 0 {
				dst = append(dst, r.VintBytes())
			} else {
				dst = append(dst, r.Bytes(w))
			}
		}
	}
	if err := r.Err(); err != nil {
		return 0, dst, 0, err
	}
	return kind, dst, r.Offset(), nil
}
