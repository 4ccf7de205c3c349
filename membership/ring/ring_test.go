package ring

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

const (
	min64 = math.MinInt64
	max64 = math.MaxInt64
)

func TestNodeStateStringAndParse(t *testing.T) {
	for st := Joining; st <= Left; st++ {
		got, err := ParseNodeState(st.String())
		if err != nil || got != st {
			t.Errorf("ParseNodeState(%q) = %v, %v", st.String(), got, err)
		}
	}
	if got, err := ParseNodeState("leaving"); err != nil || got != Leaving {
		t.Errorf("ParseNodeState is case-insensitive: got %v, %v", got, err)
	}
	for _, bad := range []string{"", "BOOT", "NORMALX"} {
		if _, err := ParseNodeState(bad); !errors.Is(err, ErrUnknownState) {
			t.Errorf("ParseNodeState(%q) error = %v, want ErrUnknownState", bad, err)
		}
	}
	if got := NodeState(0).String(); got != "NodeState(0)" {
		t.Errorf("zero state prints %q", got)
	}
}

func TestNewRingValidates(t *testing.T) {
	bytesTok := token.Token{Kind: token.KindBytes, Bytes: []byte{1}}
	cases := []struct {
		name    string
		members []Member
		want    error
	}{
		{"empty ring is valid", nil, nil},
		{"left member needs no tokens", []Member{normal("a", 0), {Node: nd("b"), State: Left}}, nil},
		{"left member's stale tokens do not conflict", []Member{normal("a", 0), {Node: nd("b"), State: Left, Tokens: toks(0)}}, nil},
		{"empty name", []Member{normal("", 0)}, ErrInvalidNode},
		{"duplicate name", []Member{normal("a", 0), normal("a", 1)}, ErrDuplicateNode},
		{"two nodes on one token", []Member{normal("a", 0), normal("b", 0)}, ErrTokenConflict},
		{"one node twice on a token", []Member{normal("a", 5, 5)}, ErrTokenConflict},
		{"joining onto an owned token", []Member{normal("a", 0), {Node: nd("b"), State: Joining, Tokens: toks(0)}}, ErrTokenConflict},
		{"normal without tokens", []Member{{Node: nd("a"), State: Normal}}, ErrNoTokens},
		{"joining without tokens", []Member{{Node: nd("a"), State: Joining}}, ErrNoTokens},
		{"byte-ordered token", []Member{{Node: nd("a"), State: Normal, Tokens: []token.Token{bytesTok}}}, ErrUnsupportedToken},
		{"zero state", []Member{{Node: nd("a"), Tokens: toks(1)}}, ErrUnknownState},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewRing(c.members...)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("NewRing error = %v, want %v", err, c.want)
			}
		})
	}
}

func TestRingIsAnImmutableValue(t *testing.T) {
	in := []Member{normal("b", 100), normal("a", 200, -100)}
	r := mustRing(t, in...)
	in[1].Tokens[0] = tok(7) // the caller's slices are copied
	ms := r.Members()
	if ms[0].Node.Name != "a" || ms[0].Tokens[0].Long != -100 || ms[0].Tokens[1].Long != 200 {
		t.Fatalf("Members = %+v, want a first with sorted tokens [-100 200]", ms)
	}
	ms[0].Tokens[0] = tok(9)
	if m, _ := r.Member("a"); m.Tokens[0].Long != -100 {
		t.Error("Members returned the ring's own slice")
	}
	r2, err := r.With(normal("c", 0))
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 3 || r2.Len() != 4 {
		t.Errorf("Len = %d then %d, want 3 then 4", r.Len(), r2.Len())
	}
	if r3 := r2.Without("b"); r3.Len() != 3 || r2.Len() != 4 {
		t.Errorf("Without changed the receiver or missed: %d %d", r3.Len(), r2.Len())
	}
	if _, err := r.With(normal("c", 100)); !errors.Is(err, ErrTokenConflict) {
		t.Errorf("With onto a taken token: %v", err)
	}
}

func TestOwnerAndPrimaryRanges(t *testing.T) {
	// a holds -100 and 200, b 0, c 100; a Joining node's token is not on the ring yet.
	r := mustRing(t, normal("a", 200, -100), normal("b", 0), normal("c", 100),
		Member{Node: nd("j"), State: Joining, Tokens: toks(50)})
	if got := fmt.Sprint(longs(r.Sorted())); got != "[-100 0 100 200]" {
		t.Errorf("Sorted = %v, want [-100 0 100 200]", got)
	}
	owners := []struct {
		t    int64
		want string
	}{
		{-100, "a"}, {-99, "b"}, {0, "b"}, {50, "c"}, {100, "c"}, {150, "a"}, {200, "a"},
		{201, "a"}, {max64, "a"}, {min64, "a"}, {-101, "a"},
	}
	for _, c := range owners {
		if n, ok := r.Owner(tok(c.t)); !ok || n.Name != c.want {
			t.Errorf("Owner(%d) = %v %v, want %s", c.t, n.Name, ok, c.want)
		}
	}
	prim := []struct{ node, want string }{
		{"a", "(200,-100],(100,200]"},
		{"b", "(-100,0]"},
		{"c", "(0,100]"},
		{"j", ""},
		{"nobody", ""},
	}
	for _, c := range prim {
		if got := r.PrimaryRanges(c.node).String(); got != c.want {
			t.Errorf("PrimaryRanges(%s) = %s, want %s", c.node, got, c.want)
		}
	}
	var empty Ring
	if _, ok := empty.Owner(tok(0)); ok {
		t.Error("empty ring has an owner")
	}
	if _, ok := r.Owner(token.Token{Kind: token.KindBytes}); ok {
		t.Error("a byte-ordered token has an owner")
	}
}

func TestSingleNodeOwnsTheWholeRing(t *testing.T) {
	r := mustRing(t, normal("a", 5))
	s := SimpleStrategy{RF: 3}
	for _, v := range []int64{min64, 4, 5, 6, max64} {
		if got := names(s.Replicas(r, tok(v))); got != "a" {
			t.Errorf("Replicas(%d) = %s, want a", v, got)
		}
	}
	if got := r.PrimaryRanges("a").String(); got != "(5,5]" {
		t.Errorf("PrimaryRanges = %s, want the full ring (5,5]", got)
	}
	if got := ReplicaRanges(r, s, "a").String(); got != "(-9223372036854775808,-9223372036854775808]" {
		t.Errorf("ReplicaRanges = %s, want (Min,Min]", got)
	}
	ro := RangeOwners(r, s)
	if len(ro) != 1 || ro[0].Range.String() != "(5,5]" || names(ro[0].Replicas) != "a" {
		t.Errorf("RangeOwners = %+v", ro)
	}
	if own := Ownership(r, s); own["a"] != 1 {
		t.Errorf("Ownership = %v, want a:1", own)
	}
}

func TestMinTokenAsANodeToken(t *testing.T) {
	// A token at MinToken closes the wrapping range (0, Min] without splitting it.
	r := mustRing(t, normal("a", min64), normal("b", 0))
	s := SimpleStrategy{RF: 1}
	cases := []struct{ node, want string }{
		{"a", "(0,-9223372036854775808]"},
		{"b", "(-9223372036854775808,0]"},
	}
	for _, c := range cases {
		if got := ReplicaRanges(r, s, c.node).String(); got != c.want {
			t.Errorf("ReplicaRanges(%s) = %s, want %s", c.node, got, c.want)
		}
	}
	if n, _ := r.Owner(tok(min64)); n.Name != "a" {
		t.Errorf("Owner(Min) = %s, want a", n.Name)
	}
	if n, _ := r.Owner(tok(1)); n.Name != "a" {
		t.Errorf("Owner(1) = %s, want a", n.Name)
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"(300,-200]", "(-9223372036854775808,-200],(300,-9223372036854775808]"},
		{"(5,5]", "(-9223372036854775808,-9223372036854775808]"},
		{"(-100,0],(0,100]", "(-100,100]"},
		{"(0,100],(-100,50]", "(-100,100]"},
		{"(-100,0],(10,20]", "(-100,0],(10,20]"},
		{"(100,-9223372036854775808],(-9223372036854775808,-100]", "(-9223372036854775808,-100],(100,-9223372036854775808]"},
		{"(0,-9223372036854775808],(-9223372036854775808,0]", "(-9223372036854775808,-9223372036854775808]"},
		{"(10,20],(300,-200],(-300,15]", "(-9223372036854775808,20],(300,-9223372036854775808]"},
	}
	for _, c := range cases {
		rs, err := token.ParseRanges(token.Murmur3, c.in)
		if err != nil {
			t.Fatal(err)
		}
		got := Normalize(rs)
		if got.String() != c.want {
			t.Errorf("Normalize(%s) = %s, want %s", c.in, got, c.want)
		}
		for _, r := range got {
			if u := r.Unwrap(token.Murmur3.MinToken()); len(u) != 1 {
				t.Errorf("Normalize(%s) kept wrapping range %v", c.in, r)
			}
		}
	}
	if Normalize(nil) != nil {
		t.Error("Normalize(nil) != nil")
	}
}

func TestSize(t *testing.T) {
	q := int64(1) << 62
	cases := []struct {
		l, r int64
		want float64
	}{
		{0, q, 0.25},
		{q, 0, 0.75},
		{7, 7, 1},
		{min64, max64, 1 - 1.0/(1<<64)},
		{max64, min64, 1.0 / (1 << 64)},
	}
	for _, c := range cases {
		if got := Size(token.Range{Left: tok(c.l), Right: tok(c.r)}); got != c.want {
			t.Errorf("Size((%d,%d]) = %v, want %v", c.l, c.r, got, c.want)
		}
	}
}
