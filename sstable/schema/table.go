package schema

import (
	"bytes"
	"fmt"
)

// Table is a Header compiled for the row codec: every type parsed once, with the facts the
// codec consults per value. It is immutable and safe to share between goroutines.
type Table struct {
	Header *Header

	Key        *Type
	Clustering []*Type
	// ClusteringWidths[i] is Clustering[i].ValueLengthIfFixed(): -1 for vint-length values.
	ClusteringWidths []int

	// Static and Regular are in header order, which is the order Cassandra serializes them
	// in (Columns iteration order: simple columns, then complex ones, each sorted by name).
	Static  []ColumnInfo
	Regular []ColumnInfo
}

// ColumnInfo describes one static or regular column.
type ColumnInfo struct {
	Index   int // position in Table.Static or Table.Regular
	Name    []byte
	Type    *Type
	Static  bool
	Complex bool // multi-cell: cells carry a CellPath, the column may carry a complex deletion
	Counter bool
	// Width is Type.ValueLengthIfFixed(): cell values of fixed-width types carry no length.
	Width int
}

// Columns returns the static or the regular columns.
func (t *Table) Columns(static bool) []ColumnInfo {
	if static {
		return t.Static
	}
	return t.Regular
}

// HasStatic reports whether rows of this table carry a static row: Cassandra writes one in
// every partition (possibly empty) exactly when the header lists static columns.
func (t *Table) HasStatic() bool { return len(t.Static) > 0 }

// Compile parses every type of h. The returned Table keeps h.
func Compile(h *Header) (*Table, error) {
	t := &Table{Header: h}
	var err error
	if t.Key, err = ParseType(h.KeyType); err != nil {
		return nil, fmt.Errorf("%w: key type: %w", ErrBadHeader, err)
	}
	t.Clustering = make([]*Type, len(h.ClusteringTypes))
	t.ClusteringWidths = make([]int, len(h.ClusteringTypes))
	for i, s := range h.ClusteringTypes {
		if t.Clustering[i], err = ParseType(s); err != nil {
			return nil, fmt.Errorf("%w: clustering type %d: %w", ErrBadHeader, i, err)
		}
		t.ClusteringWidths[i] = t.Clustering[i].ValueLengthIfFixed()
	}
	if t.Static, err = compileColumns(h.StaticColumns, true); err != nil {
		return nil, err
	}
	if t.Regular, err = compileColumns(h.RegularColumns, false); err != nil {
		return nil, err
	}
	return t, nil
}

func compileColumns(cols []Column, static bool) ([]ColumnInfo, error) {
	out := make([]ColumnInfo, len(cols))
	for i, c := range cols {
		typ, err := ParseType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("%w: column %q: %w", ErrBadHeader, c.Name, err)
		}
		for j := 0; j < i; j++ {
			if bytes.Equal(cols[j].Name, c.Name) {
				return nil, fmt.Errorf("%w: duplicate column %q", ErrBadHeader, c.Name)
			}
		}
		out[i] = ColumnInfo{
			Index: i, Name: c.Name, Type: typ, Static: static,
			Complex: typ.MultiCell(), Counter: typ.IsCounter(), Width: typ.ValueLengthIfFixed(),
		}
	}
	return out, nil
}
