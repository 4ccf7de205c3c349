package slice

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
)

// Cell-sized filler partitions, for partition keys of a fixed shape (int, bigint, uuid,
// timeuuid, compound keys, ...): a key cannot take the length a region needs, so the
// partition holds one row whose only cell is expired, with a value of the length that makes the
// partition exactly the region's size. The cell is written at sstable.FillerTimestamp, below
// any real write, so it never shadows a real cell whatever partition it meets, and it expired
// long ago (sstable.FillerDeletionTime), so compaction and repair validation purge it and the
// partition with it; reads return nothing for it. Its key is searched for (fixed shapes leave no
// block to solve) among values of the key type with a token inside the window before the run.

// cellSearchBudget bounds the keys tried for one cell-sized filler (each one Murmur3 hash of a
// short key): enough while the window before a run holds one token in 2^23 of the ring.
const cellSearchBudget = 1 << 23

// keyByte is a byte of a key template that a search may vary: all 8 bits, or (ascii) the low
// 4 bits over 'a'.
type keyByte struct {
	at    int
	ascii bool
}

// cellShape is how a table's cell-sized fillers are made.
type cellShape struct {
	key        []byte // key template
	free       []keyByte
	static     bool // the padding column is static
	column     int  // index into Table.Regular or Table.Static
	clustering [][]byte
	ttls       []int32 // TTLs whose deltas take 1, 2 and 3 bytes
	ldt        int64
}

// newCellShape finds how t's cell-sized fillers are made, or says why they cannot be.
func newCellShape(t *schema.Table) (*cellShape, string) {
	key, free, ok := keyShape(t.Key)
	if !ok || len(free) < 4 {
		return nil, "its values have no free bytes to search"
	}
	sh := &cellShape{key: key, free: free, ldt: sstable.FillerDeletionTime}
	sh.column = paddingColumn(t.Regular)
	if sh.column >= 0 {
		for _, c := range t.Clustering {
			v, ok := clusteringValue(c)
			if !ok {
				sh.column = -1
				break
			}
			sh.clustering = append(sh.clustering, v)
		}
	}
	if sh.column < 0 {
		if sh.column = paddingColumn(t.Static); sh.column < 0 {
			return nil, "no text or blob column to size a filler with"
		}
		sh.static, sh.clustering = true, nil
	}
	base := int32(max(1, t.Header.MinTTL))
	sh.ttls = []int32{base, base + 200, base + 40000}
	return sh, ""
}

// keyShape is a template for values of type t and its bytes a search may vary.
func keyShape(t *schema.Type) ([]byte, []keyByte, bool) {
	all := func(n int, from int) []keyByte {
		f := make([]keyByte, 0, n)
		for i := from; i < from+n; i++ {
			f = append(f, keyByte{at: i})
		}
		return f
	}
	switch t.Kind {
	case schema.KindScalar:
		switch t.ShortName() {
		case "Int32Type", "LongType", "ShortType", "ByteType", "UUIDType", "LexicalUUIDType", "TimestampType",
			"DateType", "SimpleDateType", "DoubleType", "FloatType", "IntegerType":
			n := t.ValueLengthIfFixed()
			if n <= 0 {
				n = 8 // IntegerType, LexicalUUIDType: any 8 bytes are a value
				if t.ShortName() == "LexicalUUIDType" {
					n = 16
				}
			}
			return make([]byte, n), all(n, 0), true
		case "InetAddressType":
			return make([]byte, 4), all(4, 0), true
		case "TimeType": // nanoseconds of the day: the low 32 bits stay under a day
			return make([]byte, 8), all(4, 4), true
		case "TimeUUIDType": // version 1, variant bits: the rest is free
			b := make([]byte, 16)
			b[6], b[8] = 0x10, 0x80
			return b, append(all(6, 0), all(7, 9)...), true
		case "UTF8Type", "AsciiType", "BytesType":
			b := bytes.Repeat([]byte{'a'}, 16)
			f := make([]keyByte, 16)
			for i := range f {
				f[i] = keyByte{at: i, ascii: true}
			}
			return b, f, true
		}
	case schema.KindComposite:
		var out []byte
		var free []keyByte
		for _, p := range t.Params {
			v, f, ok := keyShape(p)
			if !ok {
				return nil, nil, false
			}
			base := len(out) + 2
			out = binary.BigEndian.AppendUint16(out, uint16(len(v)))
			out = append(out, v...)
			out = append(out, 0)
			for _, k := range f {
				free = append(free, keyByte{at: base + k.at, ascii: k.ascii})
			}
		}
		return out, free, len(t.Params) > 0
	}
	return nil, nil, false
}

// paddingColumn is the first simple column whose values take any length of ASCII, or -1.
func paddingColumn(cols []schema.ColumnInfo) int {
	for i, c := range cols {
		if c.Complex || c.Counter || c.Type.Kind != schema.KindScalar {
			continue
		}
		switch c.Type.ShortName() {
		case "UTF8Type", "AsciiType", "BytesType":
			return i
		}
	}
	return -1
}

// clusteringValue is a valid value of clustering type t: zeros of a fixed width (a version-1
// time UUID), the empty value of a type that allows it.
func clusteringValue(t *schema.Type) ([]byte, bool) {
	t = t.Base()
	if t.Kind != schema.KindScalar {
		return nil, false
	}
	switch t.ShortName() {
	case "TimeUUIDType":
		b := make([]byte, 16)
		b[6], b[8] = 0x10, 0x80
		return b, true
	case "UTF8Type", "AsciiType", "BytesType":
		return []byte{}, true
	}
	if n := t.ValueLengthIfFixed(); n > 0 {
		return make([]byte, n), true
	}
	return nil, false
}

// keyTemplate is the c-th candidate key.
func (sh *cellShape) keyTemplate(c uint64) []byte {
	k := append([]byte(nil), sh.key...)
	for _, f := range sh.free {
		if f.ascii {
			k[f.at] = 'a' + byte(c&15)
			c >>= 4
		} else {
			k[f.at] = byte(c)
			c >>= 8
		}
	}
	return k
}

// cellPartition is a cell-sized filler partition with key, a padding value of v bytes and ttl.
func (m *fillerMaker) cellPartition(key []byte, v int, ttl int32) ([]byte, error) {
	sh := m.cell
	dst, err := m.w.BeginPartition(nil, key, rows.Live)
	if err != nil {
		return nil, err
	}
	row := rows.Row{Static: sh.static, Clustering: sh.clustering, Liveness: rows.EmptyLiveness, Deletion: rows.Live,
		Columns: []rows.ColumnData{{Column: sh.column, Deletion: rows.Live, Cells: []rows.Cell{{
			Timestamp: sstable.FillerTimestamp, LocalDeletionTime: sh.ldt, TTL: ttl, Value: bytes.Repeat([]byte{'f'}, v)}}}}}
	if sh.static {
		dst, err = m.w.AppendStatic(dst, &row)
	} else {
		dst, err = m.w.AppendRow(dst, &row)
	}
	if err == nil {
		dst, err = m.w.EndPartition(dst)
	}
	return dst, err
}

// cellRegion is one cell-sized filler partition of exactly size bytes before the run's first
// partition (tok, first), its key's token inside (lower, tok].
func (m *fillerMaker) cellRegion(size int64, lower, tok token.Token, first []byte) ([]byte, []fillerKey, error) {
	var key []byte
	var kt token.Token
	for i := 0; ; i++ {
		if i == cellSearchBudget {
			return nil, nil, fmt.Errorf("%w: no key of type %s with a token in (%s, %s] among %d tried", errNoFiller, m.t.Key, lower, tok, cellSearchBudget)
		}
		m.seed++
		key = m.cell.keyTemplate(m.seed)
		kt = m.p.Token(key)
		if kt.Compare(lower) > 0 && token.CompareKeys(kt, key, tok, first) < 0 {
			break
		}
	}
	for _, ttl := range m.cell.ttls {
		b, err := m.cellPartition(key, 0, ttl)
		if err != nil {
			return nil, nil, err
		}
		// The value's length and the row's size carry vint lengths: a few bytes more than v.
		base := int(size) - len(b)
		for v := max(base-6, 0); v <= base; v++ {
			if b, err = m.cellPartition(key, v, ttl); err != nil {
				return nil, nil, err
			}
			if int64(len(b)) == size {
				return b, []fillerKey{{Key: key, Tok: kt}}, nil
			}
		}
	}
	return nil, nil, fmt.Errorf("%w: no cell-sized filler of exactly %d bytes", errNoFiller, size)
}
