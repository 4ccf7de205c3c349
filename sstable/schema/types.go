package schema

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// MarshalPackage is the Java package of Cassandra's built-in types. A type name without a dot
// is resolved inside it, as Cassandra's TypeParser does.
const MarshalPackage = "org.apache.cassandra.db.marshal."

// MaxTypeDepth bounds the nesting of type parameters; real schemas nest a handful of levels,
// and the bound keeps hostile strings from exhausting the stack.
const MaxTypeDepth = 64

// maxVectorDimension bounds VectorType dimensions so fixed widths cannot overflow.
const maxVectorDimension = 1 << 20

// Kind classifies a marshal type by what the row codec must know about it.
type Kind uint8

const (
	// KindScalar is a built-in type without parameters (UTF8Type, Int32Type, ...).
	KindScalar Kind = iota + 1
	// KindCounter is CounterColumnType: cells hold a variable-length counter context.
	KindCounter
	// KindReversed is ReversedType(base): same bytes as base, inverted order.
	KindReversed
	KindList
	KindSet
	KindMap
	KindTuple
	// KindUDT is UserType(keyspace, hexName, hexField:type, ...).
	KindUDT
	KindComposite
	KindDynamicComposite
	// KindVector is VectorType(element, dimension) (Cassandra 5.0).
	KindVector
	// KindCustom is a class outside the marshal package, or a built-in whose parameters the
	// codec does not interpret (PartitionerDefinedOrder, ColumnToCollectionType). Its values
	// are variable-length, the default of Cassandra's AbstractType.
	KindCustom
)

var kindNames = [...]string{
	KindScalar: "scalar", KindCounter: "counter", KindReversed: "reversed", KindList: "list",
	KindSet: "set", KindMap: "map", KindTuple: "tuple", KindUDT: "udt", KindComposite: "composite",
	KindDynamicComposite: "dynamic-composite", KindVector: "vector", KindCustom: "custom",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Type is a parsed marshal type string. Types are immutable once parsed and may be shared.
type Type struct {
	// Name is the class name as written ("org.apache.cassandra.db.marshal.Int32Type" or "Int32Type").
	Name string
	Kind Kind
	// Params are the parameter types: [element] for lists, sets, vectors and ReversedType,
	// [key, value] for maps, the components of tuples and composites, the field types of a
	// UDT (parallel to FieldNames), the aliased types of a DynamicCompositeType (parallel to
	// Aliases), and whatever a KindCustom type was given.
	Params []*Type
	// FieldNames are a UDT's decoded field names; Keyspace and UDTName name the UDT.
	FieldNames [][]byte
	Keyspace   string
	UDTName    []byte
	// Aliases are a DynamicCompositeType's one-byte aliases.
	Aliases []byte
	// Dimension is a VectorType's element count.
	Dimension int
	// Frozen is set for types inside FrozenType(...), including everything nested in them.
	Frozen bool

	fixed int    // valueLengthIfFixed, -1 for variable-length values
	src   string // the exact text this type was parsed from
	word  bool   // a bare word (keyspace, hex name, dimension), not a type
}

// String returns the exact text the type was parsed from.
func (t *Type) String() string { return t.src }

// ValueLengthIfFixed mirrors AbstractType.valueLengthIfFixed: the byte length of every value,
// or -1 when values are variable-length (and so carry a vint length prefix in Data.db).
func (t *Type) ValueLengthIfFixed() int { return t.fixed }

// MultiCell reports whether a column of this type is complex: a non-frozen collection or UDT,
// stored as one cell per element with a CellPath.
func (t *Type) MultiCell() bool {
	switch t.Kind {
	case KindList, KindSet, KindMap, KindUDT:
		return !t.Frozen
	}
	return false
}

// ShortName is a built-in type's class name without the marshal package ("UTF8Type"), or ""
// for a class outside it.
func (t *Type) ShortName() string {
	if t.Kind == KindCustom {
		return ""
	}
	return strings.TrimPrefix(t.Name, MarshalPackage)
}

// IsCounter reports CounterColumnType.
func (t *Type) IsCounter() bool { return t.Kind == KindCounter }

// Base unwraps ReversedType.
func (t *Type) Base() *Type {
	for t.Kind == KindReversed {
		t = t.Params[0]
	}
	return t
}

// Shared descriptions of cell paths whose type is not one of the collection's parameters.
var (
	listPath = &Type{Name: MarshalPackage + "TimeUUIDType", Kind: KindScalar, fixed: 16, src: MarshalPackage + "TimeUUIDType"}
	udtPath  = &Type{Name: MarshalPackage + "ShortType", Kind: KindScalar, fixed: -1, src: MarshalPackage + "ShortType"}
)

// CellPath describes the CellPath of a multi-cell type's cells: a timeuuid for lists, the
// element for sets, the key for maps, and the field index as a 2-byte short for UDTs. On disk
// every path is stored as vint-length bytes (CollectionType.CellPathSerializer). It returns
// nil for types that are not multi-cell.
func (t *Type) CellPath() *Type {
	if !t.MultiCell() {
		return nil
	}
	switch t.Kind {
	case KindList:
		return listPath
	case KindSet, KindMap:
		return t.Params[0]
	default:
		return udtPath
	}
}

var fixedScalars = map[string]int{
	"BooleanType": 1, "Int32Type": 4, "LongType": 8, "FloatType": 4, "DoubleType": 8,
	"DateType": 8, "TimestampType": 8, "UUIDType": 16, "TimeUUIDType": 16,
	"LexicalUUIDType": 16, "LegacyTimeUUIDType": 16, "EmptyType": 0,
}

// Variable-length scalars. ShortType, ByteType, SimpleDateType and TimeType are variable in
// Cassandra (they do not override valueLengthIfFixed) although their values have one size.
var variableScalars = map[string]bool{
	"UTF8Type": true, "AsciiType": true, "BytesType": true, "IntegerType": true,
	"DecimalType": true, "InetAddressType": true, "ShortType": true, "ByteType": true,
	"SimpleDateType": true, "TimeType": true, "DurationType": true,
}

// ParseType parses a marshal type string as Cassandra's TypeParser does: `Name` or
// `Name(param, ...)`, names without a dot resolved in MarshalPackage, UDT parameters
// `keyspace,hexName,hexField:type,...`, DynamicCompositeType parameters `a=>type,...`,
// VectorType parameters `type,dimension`; FrozenType(x) marks x and everything in it frozen.
func ParseType(s string) (*Type, error) {
	p := typeParser{s: s}
	t, err := p.node(0)
	if err != nil {
		return nil, err
	}
	if t.word {
		return nil, fmt.Errorf("%w: %s", ErrUnknownType, t.Name)
	}
	p.blank()
	if p.pos != len(s) {
		return nil, p.errf("unexpected %q after the type", s[p.pos:])
	}
	return t, nil
}

type typeParser struct {
	s   string
	pos int
}

type typeArg struct {
	label string // UDT field name (hex) or DynamicComposite alias
	sep   string // ":" or "=>" when labelled
	t     *Type
}

func (p *typeParser) errf(format string, args ...any) error {
	return fmt.Errorf("%w: %q at %d: %s", ErrBadType, p.s, p.pos, fmt.Sprintf(format, args...))
}

func (p *typeParser) blank() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\n') {
		p.pos++
	}
}

// isIdentChar matches TypeParser.isIdentifierChar.
func isIdentChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
		c == '-' || c == '+' || c == '.' || c == '_' || c == '&'
}

func (p *typeParser) ident() string {
	start := p.pos
	for p.pos < len(p.s) && isIdentChar(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *typeParser) node(depth int) (*Type, error) {
	if depth > MaxTypeDepth {
		return nil, p.errf("nested deeper than %d", MaxTypeDepth)
	}
	p.blank()
	start := p.pos
	name := p.ident()
	if name == "" {
		return nil, p.errf("expected a type name")
	}
	var args []typeArg
	hasParams := false
	save := p.pos
	p.blank()
	if p.pos < len(p.s) && p.s[p.pos] == '(' {
		hasParams = true
		var err error
		if args, err = p.args(depth); err != nil {
			return nil, err
		}
	} else {
		p.pos = save
	}
	t, err := build(name, args, hasParams)
	if err != nil {
		return nil, fmt.Errorf("%w (in %q)", err, p.s)
	}
	t.src = p.s[start:p.pos]
	return t, nil
}

func (p *typeParser) args(depth int) ([]typeArg, error) {
	p.pos++ // '('
	var args []typeArg
	p.blank()
	if p.pos < len(p.s) && p.s[p.pos] == ')' {
		p.pos++
		return args, nil
	}
	for {
		a, err := p.arg(depth)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		p.blank()
		if p.pos >= len(p.s) {
			return nil, p.errf("unterminated parameter list")
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case ')':
			p.pos++
			return args, nil
		default:
			return nil, p.errf("expected ',' or ')'")
		}
	}
}

func (p *typeParser) arg(depth int) (typeArg, error) {
	p.blank()
	start := p.pos
	label := p.ident()
	p.blank()
	sep := ""
	switch {
	case label != "" && strings.HasPrefix(p.s[p.pos:], "=>"):
		sep = "=>"
	case label != "" && p.pos < len(p.s) && p.s[p.pos] == ':':
		sep = ":"
	}
	if sep == "" {
		p.pos = start
		t, err := p.node(depth + 1)
		return typeArg{t: t}, err
	}
	p.pos += len(sep)
	t, err := p.node(depth + 1)
	return typeArg{label: label, sep: sep, t: t}, err
}

func freeze(t *Type) {
	t.Frozen = true
	for _, c := range t.Params {
		freeze(c)
	}
}

// typeParam checks that a parameter is a type, not a bare word.
func typeParam(t *Type) (*Type, error) {
	if t.word {
		return nil, fmt.Errorf("%w: %s", ErrUnknownType, t.Name)
	}
	return t, nil
}

func plain(args []typeArg) ([]*Type, error) {
	ts := make([]*Type, len(args))
	for i, a := range args {
		if a.sep != "" {
			return nil, fmt.Errorf("%w: unexpected labelled parameter %s%s", ErrBadType, a.label, a.sep)
		}
		t, err := typeParam(a.t)
		if err != nil {
			return nil, err
		}
		ts[i] = t
	}
	return ts, nil
}

// bare reports a parameter that is a bare word (a keyspace, hex name or number).
func bare(a typeArg) (string, bool) {
	if a.sep != "" || !a.t.word {
		return "", false
	}
	return a.t.Name, true
}

func build(name string, args []typeArg, hasParams bool) (*Type, error) {
	short := name
	if strings.Contains(name, ".") {
		short = strings.TrimPrefix(name, MarshalPackage)
		if short == name || strings.Contains(short, ".") {
			short = ""
		}
	}
	t := &Type{Name: name, fixed: -1}
	if short == "" {
		// A class outside the marshal package: Cassandra's AbstractType default applies.
		t.Kind = KindCustom
		for _, a := range args {
			t.Params = append(t.Params, a.t)
		}
		return t, nil
	}
	if n, ok := fixedScalars[short]; ok || variableScalars[short] || short == "CounterColumnType" {
		if hasParams {
			return nil, fmt.Errorf("%w: %s takes no parameters", ErrBadType, short)
		}
		t.Kind = KindScalar
		if ok {
			t.fixed = n
		}
		if short == "CounterColumnType" {
			t.Kind = KindCounter
		}
		return t, nil
	}
	if !strings.Contains(name, ".") && !hasParams && isBareWord(name) {
		// Bare words appear as parameters (keyspaces, hex names, dimensions); they are only
		// valid where the enclosing type expects them, which build checks for each parent.
		t.Kind, t.word = KindCustom, true
		return t, nil
	}
	want := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("%w: %s takes %d parameter(s), got %d", ErrBadType, short, n, len(args))
		}
		return nil
	}
	var err error
	switch short {
	case "FrozenType":
		if err = want(1); err != nil {
			return nil, err
		}
		if args[0].sep != "" {
			return nil, fmt.Errorf("%w: FrozenType of a labelled parameter", ErrBadType)
		}
		inner, err := typeParam(args[0].t)
		if err != nil {
			return nil, err
		}
		freeze(inner)
		return inner, nil
	case "ReversedType":
		t.Kind = KindReversed
		if err = want(1); err != nil {
			return nil, err
		}
		if t.Params, err = plain(args); err != nil {
			return nil, err
		}
		t.fixed = t.Params[0].fixed
	case "ListType", "SetType":
		t.Kind = KindList
		if short == "SetType" {
			t.Kind = KindSet
		}
		if err = want(1); err != nil {
			return nil, err
		}
		t.Params, err = plain(args)
	case "MapType":
		t.Kind = KindMap
		if err = want(2); err != nil {
			return nil, err
		}
		t.Params, err = plain(args)
	case "TupleType", "CompositeType":
		t.Kind = KindTuple
		if short == "CompositeType" {
			t.Kind = KindComposite
		}
		if len(args) == 0 {
			return nil, fmt.Errorf("%w: %s needs parameters", ErrBadType, short)
		}
		t.Params, err = plain(args)
	case "UserType":
		t.Kind = KindUDT
		err = buildUDT(t, args)
	case "DynamicCompositeType":
		t.Kind = KindDynamicComposite
		for _, a := range args {
			if a.sep != "=>" || len(a.label) != 1 {
				return nil, fmt.Errorf("%w: DynamicCompositeType parameters are x=>type", ErrBadType)
			}
			p, err := typeParam(a.t)
			if err != nil {
				return nil, err
			}
			t.Aliases = append(t.Aliases, a.label[0])
			t.Params = append(t.Params, p)
		}
	case "VectorType":
		t.Kind = KindVector
		err = buildVector(t, args)
	case "PartitionerDefinedOrder", "ColumnToCollectionType":
		t.Kind = KindCustom
		for _, a := range args {
			t.Params = append(t.Params, a.t)
		}
	default:
		return nil, fmt.Errorf("%w: %s", ErrUnknownType, name)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

func isBareWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}

func buildUDT(t *Type, args []typeArg) error {
	if len(args) < 2 {
		return fmt.Errorf("%w: UserType needs a keyspace and a name", ErrBadType)
	}
	ks, ok1 := bare(args[0])
	name, ok2 := bare(args[1])
	if !ok1 || !ok2 {
		return fmt.Errorf("%w: UserType keyspace and name must be bare words", ErrBadType)
	}
	udt, err := hex.DecodeString(name)
	if err != nil {
		return fmt.Errorf("%w: UserType name %q is not hex", ErrBadType, name)
	}
	t.Keyspace, t.UDTName = ks, udt
	for _, a := range args[2:] {
		if a.sep != ":" {
			return fmt.Errorf("%w: UserType fields are hexName:type", ErrBadType)
		}
		f, err := hex.DecodeString(a.label)
		if err != nil {
			return fmt.Errorf("%w: UserType field name %q is not hex", ErrBadType, a.label)
		}
		p, err := typeParam(a.t)
		if err != nil {
			return err
		}
		t.FieldNames = append(t.FieldNames, f)
		t.Params = append(t.Params, p)
	}
	return nil
}

func buildVector(t *Type, args []typeArg) error {
	if len(args) != 2 || args[0].sep != "" {
		return fmt.Errorf("%w: VectorType takes (type, dimension)", ErrBadType)
	}
	elem, err := typeParam(args[0].t)
	if err != nil {
		return err
	}
	d, ok := bare(args[1])
	n, err := strconv.Atoi(d)
	if !ok || err != nil || n <= 0 || n > maxVectorDimension {
		return fmt.Errorf("%w: VectorType dimension %q", ErrBadType, d)
	}
	t.Params = []*Type{elem}
	t.Dimension = n
	// VectorType.valueLengthIfFixed: dimension * element width when the element is fixed.
	if e := args[0].t.fixed; e >= 0 {
		t.fixed = e * n
	}
	return nil
}
