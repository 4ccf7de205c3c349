package schema

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/encoding"
)

const m = MarshalPackage

func TestParseType(t *testing.T) {
	udt := m + "UserType(ks,61646472657373,737472656574:" + m + "UTF8Type,7a6970:" + m + "Int32Type)"
	cases := []struct {
		in       string
		kind     Kind
		width    int
		multi    bool
		frozen   bool
		counter  bool
		path     string // CellPath().Name's short form, "" when not multi-cell
		nParams  int
		baseKind Kind
	}{
		// The types in the fixtures' Statistics.db headers.
		{in: m + "UTF8Type", kind: KindScalar, width: -1},
		{in: m + "Int32Type", kind: KindScalar, width: 4},
		{in: m + "FloatType", kind: KindScalar, width: 4},
		{in: m + "CounterColumnType", kind: KindCounter, width: -1, counter: true},
		// Every scalar width (AbstractType.valueLengthIfFixed overrides).
		{in: "BooleanType", kind: KindScalar, width: 1},
		{in: "LongType", kind: KindScalar, width: 8},
		{in: "DoubleType", kind: KindScalar, width: 8},
		{in: "TimestampType", kind: KindScalar, width: 8},
		{in: "DateType", kind: KindScalar, width: 8},
		{in: "UUIDType", kind: KindScalar, width: 16},
		{in: "TimeUUIDType", kind: KindScalar, width: 16},
		{in: "LexicalUUIDType", kind: KindScalar, width: 16},
		{in: "EmptyType", kind: KindScalar, width: 0},
		{in: "ShortType", kind: KindScalar, width: -1},
		{in: "ByteType", kind: KindScalar, width: -1},
		{in: "SimpleDateType", kind: KindScalar, width: -1},
		{in: "TimeType", kind: KindScalar, width: -1},
		{in: "AsciiType", kind: KindScalar, width: -1},
		{in: "BytesType", kind: KindScalar, width: -1},
		{in: "DecimalType", kind: KindScalar, width: -1},
		{in: "IntegerType", kind: KindScalar, width: -1},
		{in: "InetAddressType", kind: KindScalar, width: -1},
		{in: "DurationType", kind: KindScalar, width: -1},
		// Wrappers and collections.
		{in: m + "ReversedType(" + m + "Int32Type)", kind: KindReversed, width: 4, nParams: 1, baseKind: KindScalar},
		{in: m + "ReversedType(" + m + "TimestampType)", kind: KindReversed, width: 8, nParams: 1, baseKind: KindScalar},
		{in: m + "ListType(" + m + "Int32Type)", kind: KindList, width: -1, multi: true, path: "TimeUUIDType", nParams: 1},
		{in: m + "SetType(" + m + "UTF8Type)", kind: KindSet, width: -1, multi: true, path: "UTF8Type", nParams: 1},
		{in: m + "MapType(" + m + "Int32Type," + m + "FrozenType(" + m + "SetType(" + m + "UTF8Type)))", kind: KindMap, width: -1, multi: true, path: "Int32Type", nParams: 2},
		{in: m + "FrozenType(" + m + "ListType(" + m + "Int32Type))", kind: KindList, width: -1, frozen: true, nParams: 1},
		{in: udt, kind: KindUDT, width: -1, multi: true, path: "ShortType", nParams: 2},
		{in: m + "FrozenType(" + udt + ")", kind: KindUDT, width: -1, frozen: true, nParams: 2},
		{in: m + "TupleType(" + m + "Int32Type," + m + "UTF8Type)", kind: KindTuple, width: -1, nParams: 2},
		{in: m + "CompositeType(" + m + "UTF8Type," + m + "Int32Type)", kind: KindComposite, width: -1, nParams: 2},
		{in: m + "DynamicCompositeType(a=>" + m + "UTF8Type,b=>" + m + "ReversedType(" + m + "Int32Type))", kind: KindDynamicComposite, width: -1, nParams: 2},
		{in: m + "VectorType(" + m + "FloatType,3)", kind: KindVector, width: 12, nParams: 1},
		{in: m + "VectorType(" + m + "UTF8Type,2)", kind: KindVector, width: -1, nParams: 1},
		{in: "com.example.GeoType", kind: KindCustom, width: -1},
		{in: m + "PartitionerDefinedOrder(org.apache.cassandra.dht.Murmur3Partitioner)", kind: KindCustom, width: -1, nParams: 1},
		// Blanks are allowed around names and parameters.
		{in: "ListType( Int32Type )", kind: KindList, width: -1, multi: true, path: "TimeUUIDType", nParams: 1},
	}
	for _, tc := range cases {
		typ, err := ParseType(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		path := ""
		if p := typ.CellPath(); p != nil {
			path = strings.TrimPrefix(p.Name, m)
		}
		baseKind := typ.Kind
		if tc.baseKind != 0 {
			baseKind = tc.baseKind
		}
		if typ.Kind != tc.kind || typ.ValueLengthIfFixed() != tc.width || typ.MultiCell() != tc.multi ||
			typ.Frozen != tc.frozen || typ.IsCounter() != tc.counter || path != tc.path ||
			len(typ.Params) != tc.nParams || typ.Base().Kind != baseKind {
			t.Errorf("%s: kind %v width %d multi %v frozen %v counter %v path %q params %d base %v",
				tc.in, typ.Kind, typ.ValueLengthIfFixed(), typ.MultiCell(), typ.Frozen, typ.IsCounter(), path, len(typ.Params), typ.Base().Kind)
		}
		if typ.String() != strings.TrimSpace(tc.in) {
			t.Errorf("%s: String() = %q", tc.in, typ.String())
		}
	}
}

func TestParseTypeDetails(t *testing.T) {
	udt, err := ParseType(m + "FrozenType(" + m + "UserType(ks,61646472657373,737472656574:" + m + "ListType(" + m + "UTF8Type),7a6970:" + m + "Int32Type))")
	if err != nil {
		t.Fatal(err)
	}
	if udt.Keyspace != "ks" || string(udt.UDTName) != "address" || len(udt.FieldNames) != 2 ||
		string(udt.FieldNames[0]) != "street" || string(udt.FieldNames[1]) != "zip" {
		t.Errorf("udt %q %q %q", udt.Keyspace, udt.UDTName, udt.FieldNames)
	}
	// Everything inside FrozenType is frozen, so the nested list is not multi-cell.
	if !udt.Params[0].Frozen || udt.Params[0].MultiCell() {
		t.Errorf("nested list frozen %v multi %v", udt.Params[0].Frozen, udt.Params[0].MultiCell())
	}
	dyn, err := ParseType("DynamicCompositeType(s=>UTF8Type,i=>Int32Type)")
	if err != nil || string(dyn.Aliases) != "si" {
		t.Errorf("aliases %q %v", dyn.Aliases, err)
	}
	vec, err := ParseType("VectorType(DoubleType, 1024)")
	if err != nil || vec.Dimension != 1024 || vec.ValueLengthIfFixed() != 8192 {
		t.Errorf("vector %+v %v", vec, err)
	}
}

func TestParseTypeErrors(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"", ErrBadType},
		{"   ", ErrBadType},
		{"Foo", ErrUnknownType},
		{m + "Foo", ErrUnknownType},
		{"Foo(Int32Type)", ErrUnknownType},
		{"ListType(", ErrBadType},
		{"ListType(Int32Type", ErrBadType},
		{"ListType()", ErrBadType},
		{"ListType(Int32Type,Int32Type)", ErrBadType},
		{"ListType(ks)", ErrUnknownType},
		{"MapType(Int32Type)", ErrBadType},
		{"Int32Type(UTF8Type)", ErrBadType},
		{"Int32Type)", ErrBadType},
		{"Int32Type UTF8Type", ErrBadType},
		{"ListType(Int32Type;)", ErrBadType},
		{"ListType(a:Int32Type)", ErrBadType},
		{"UserType(ks)", ErrBadType},
		{"UserType(ks,zz,61:Int32Type)", ErrBadType},
		{"UserType(ks,61,zz:Int32Type)", ErrBadType},
		{"UserType(ks,61,Int32Type)", ErrBadType},
		{"UserType(ks,61,62:Nope)", ErrUnknownType},
		{"DynamicCompositeType(Int32Type)", ErrBadType},
		{"DynamicCompositeType(ab=>Int32Type)", ErrBadType},
		{"VectorType(FloatType,0)", ErrBadType},
		{"VectorType(FloatType,x)", ErrBadType},
		{"VectorType(FloatType)", ErrBadType},
		{"TupleType()", ErrBadType},
		{"FrozenType(a=>Int32Type)", ErrBadType},
		{strings.Repeat("ListType(", 100) + "Int32Type" + strings.Repeat(")", 100), ErrBadType},
	}
	for _, tc := range cases {
		typ, err := ParseType(tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("%q: got %v (%v), want %v", tc.in, err, typ, tc.want)
		}
	}
}

// Every marshal type string stored in a fixture's Statistics.db (the SerializationHeader and,
// for nc+/da, the covered-clustering types) parses, and their widths are the known ones.
func TestFixtureTypeStrings(t *testing.T) {
	want := map[string]int{"UTF8Type": -1, "Int32Type": 4, "FloatType": 4, "CounterColumnType": -1}
	seen := map[string]bool{}
	for _, s := range fixtures.All(t) {
		b := s.Read(t, "Statistics.db")
		for _, str := range vintStrings(b, []byte(m)) {
			typ, err := ParseType(str)
			if err != nil {
				t.Errorf("%s: %q: %v", s.Name, str, err)
				continue
			}
			short := strings.TrimPrefix(typ.Name, m)
			w, ok := want[short]
			if !ok || typ.ValueLengthIfFixed() != w {
				t.Errorf("%s: %q: width %d", s.Name, str, typ.ValueLengthIfFixed())
			}
			seen[short] = true
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("%s not found in any fixture", k)
		}
	}
	// datasets.iris: sepal_length float PRIMARY KEY, sepal_width float, target int.
	cql, err := os.ReadFile(filepath.Join(fixtures.Root(t), "sstable-to-arrow/md/datasets.iris/datasets.cql"))
	if err != nil || !bytes.Contains(cql, []byte("sepal_width float")) || !bytes.Contains(cql, []byte("target int")) {
		t.Fatalf("datasets.cql: %v", err)
	}
}

// vintStrings finds every vint-length-prefixed string in b that starts with prefix.
func vintStrings(b, prefix []byte) []string {
	var out []string
	for i := 0; ; {
		j := bytes.Index(b[i:], prefix)
		if j < 0 {
			return out
		}
		at := i + j
		for width := 1; width <= 2 && at-width >= 0; width++ {
			n, w := encoding.UVint(b[at-width:])
			if w == width && at+int(n) <= len(b) && int(n) >= len(prefix) {
				out = append(out, string(b[at:at+int(n)]))
				break
			}
		}
		i = at + 1
	}
}

func FuzzParseType(f *testing.F) {
	for _, s := range []string{
		m + "UTF8Type", "Int32Type", m + "CounterColumnType",
		m + "MapType(" + m + "UTF8Type," + m + "FrozenType(" + m + "ListType(" + m + "Int32Type)))",
		m + "UserType(ks,61646472657373,737472656574:" + m + "UTF8Type,7a6970:" + m + "Int32Type)",
		"DynamicCompositeType(a=>UTF8Type,b=>ReversedType(Int32Type))", "VectorType(FloatType,3)",
		"TupleType(Int32Type,CompositeType(UTF8Type,BytesType))", "PartitionerDefinedOrder(x.Y)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		typ, err := ParseType(s)
		if err != nil {
			if !errors.Is(err, ErrBadType) && !errors.Is(err, ErrUnknownType) {
				t.Fatalf("%q: unclassified error %v", s, err)
			}
			return
		}
		again, err := ParseType(typ.String())
		if err != nil || again.String() != typ.String() || again.ValueLengthIfFixed() != typ.ValueLengthIfFixed() ||
			again.MultiCell() != typ.MultiCell() || again.Kind != typ.Kind {
			t.Fatalf("%q: reparsing %q: %v", s, typ.String(), err)
		}
	})
}
