package ring

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

func toks(vs ...int64) []token.Token {
	out := make([]token.Token, len(vs))
	for i, v := range vs {
		out[i] = tok(v)
	}
	return out
}

// nd makes a node in dc1/r1 unless dc and rack are given as "name@dc/rack".
func nd(spec string) Node {
	name, loc, ok := strings.Cut(spec, "@")
	if !ok {
		return Node{Name: name, DC: "dc1", Rack: "r1"}
	}
	dc, rack, _ := strings.Cut(loc, "/")
	return Node{Name: name, DC: dc, Rack: rack}
}

func normal(spec string, vs ...int64) Member {
	return Member{Node: nd(spec), State: Normal, Tokens: toks(vs...)}
}

func mustRing(t testing.TB, ms ...Member) Ring {
	t.Helper()
	r, err := NewRing(ms...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func names(ns []Node) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = n.Name
	}
	return strings.Join(parts, ",")
}

func planText(p StreamPlan) string {
	var b strings.Builder
	for _, tr := range p.Transfers {
		fmt.Fprintln(&b, tr)
	}
	return b.String()
}
