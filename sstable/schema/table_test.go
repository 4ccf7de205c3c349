package schema

import (
	"errors"
	"testing"
)

func TestCompile(t *testing.T) {
	h := &Header{
		KeyType:         m + "CompositeType(" + m + "UTF8Type," + m + "Int32Type)",
		ClusteringTypes: []string{m + "Int32Type", m + "ReversedType(" + m + "UTF8Type)", m + "ReversedType(" + m + "TimestampType)"},
		StaticColumns:   []Column{{Name: []byte("s"), Type: m + "SetType(" + m + "UTF8Type)"}},
		RegularColumns: []Column{
			{Name: []byte("n"), Type: m + "CounterColumnType"},
			{Name: []byte("v"), Type: m + "FloatType"},
			{Name: []byte("l"), Type: m + "FrozenType(" + m + "ListType(" + m + "Int32Type))"},
			{Name: []byte("m"), Type: m + "MapType(" + m + "UTF8Type," + m + "Int32Type)"},
		},
	}
	tb, err := Compile(h)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Header != h || tb.Key.Kind != KindComposite || !tb.HasStatic() {
		t.Fatalf("table %+v", tb)
	}
	if got := tb.ClusteringWidths; len(got) != 3 || got[0] != 4 || got[1] != -1 || got[2] != 8 {
		t.Errorf("clustering widths %v", got)
	}
	want := []struct {
		name                     string
		static, complex, counter bool
		width                    int
	}{
		{"s", true, true, false, -1},
		{"n", false, false, true, -1},
		{"v", false, false, false, 4},
		{"l", false, false, false, -1},
		{"m", false, true, false, -1},
	}
	cols := append(append([]ColumnInfo{}, tb.Columns(true)...), tb.Columns(false)...)
	for i, w := range want {
		c := cols[i]
		idx := i
		if !w.static {
			idx = i - 1
		}
		if string(c.Name) != w.name || c.Index != idx || c.Static != w.static || c.Complex != w.complex ||
			c.Counter != w.counter || c.Width != w.width {
			t.Errorf("column %d: %+v", i, c)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	ok := func() *Header {
		return &Header{KeyType: m + "UTF8Type", RegularColumns: []Column{{Name: []byte("a"), Type: m + "UTF8Type"}}}
	}
	cases := []struct {
		name  string
		edit  func(*Header)
		cause error
	}{
		{"key type", func(h *Header) { h.KeyType = "Nope" }, ErrUnknownType},
		{"clustering type", func(h *Header) { h.ClusteringTypes = []string{"ListType("} }, ErrBadType},
		{"static column type", func(h *Header) { h.StaticColumns = []Column{{Name: []byte("s"), Type: ""}} }, ErrBadType},
		{"regular column type", func(h *Header) { h.RegularColumns[0].Type = m + "Missing" }, ErrUnknownType},
		{"duplicate column", func(h *Header) { h.RegularColumns = append(h.RegularColumns, h.RegularColumns[0]) }, ErrBadHeader},
	}
	for _, tc := range cases {
		h := ok()
		tc.edit(h)
		_, err := Compile(h)
		if !errors.Is(err, ErrBadHeader) || !errors.Is(err, tc.cause) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if _, err := Compile(ok()); err != nil {
		t.Errorf("valid header: %v", err)
	}
}
