package sstable

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
)

var update = flag.Bool("update", false, "rewrite testdata/campaign.golden from this run")

// mutation is one damage done to one component of a fixture copy.
type mutation struct {
	kind string // flip, trunc, empty, missing, toc-lies
	off  int64
	mask byte
}

// outcome tallies what verify made of the mutations of one kind on one component.
type outcome struct {
	n, caught, blamed, noOffset, worst int
}

func (o outcome) String() string {
	return fmt.Sprintf("%d/%d caught, %d blamed right, worst %d lines, %d without offset", o.caught, o.n, o.blamed, o.worst, o.noOffset)
}

// TestCorruptionCampaign is issue 10's corruption campaign as a specification: every fixture,
// every component, byte flips at spread positions, truncations, an empty file, a missing file
// and a TOC that lies, each checked with an extended verify. The tallies are compared with
// testdata/campaign.golden, so any change in what is caught, what is blamed, how many lines a
// single damage costs, or how many lines lack an offset shows as a diff. Regenerate with
//
//	go test ./sstable/ -run TestCorruptionCampaign -update
//
// and review the diff: a number may only move toward "all caught, all blamed, one line, no
// line without an offset" unless the change says why.
func TestCorruptionCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("the campaign verifies a few thousand damaged copies")
	}
	var out bytes.Buffer
	out.WriteString("# fixture component kind: caught/total, blamed on the damaged component, worst problem count, problem lines without offset\n")
	total := map[string]*outcome{}
	all := fixtures.All(t)
	// Fixtures run in parallel, each on its own copy; their lines are joined in order after.
	lines := make([][]string, len(all))
	tallies := make([]map[string]*outcome, len(all))
	t.Run("fixtures", func(t *testing.T) {
		for i, f := range all {
			t.Run(f.Name, func(t *testing.T) {
				t.Parallel()
				lines[i], tallies[i] = campaignFixture(t, f)
			})
		}
	})
	for i := range all {
		for _, l := range lines[i] {
			out.WriteString(l)
		}
		for k, o := range tallies[i] {
			if total[k] == nil {
				total[k] = &outcome{}
			}
			s := total[k]
			s.n, s.caught, s.blamed, s.noOffset = s.n+o.n, s.caught+o.caught, s.blamed+o.blamed, s.noOffset+o.noOffset
			s.worst = max(s.worst, o.worst)
		}
	}
	out.WriteString("\n# totals by component and kind\n")
	keys := make([]string, 0, len(total))
	for k := range total {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&out, "%s: %s\n", k, total[k])
	}
	golden := filepath.Join("testdata", "campaign.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, out.Bytes()) {
		t.Errorf("campaign differs from %s (run with -update and review the diff):\n%s", golden, lineDiff(string(want), out.String()))
	}
}

// campaignFixture damages every component of a copy of f in turn and returns its summary
// lines and its tallies by "component kind".
func campaignFixture(t *testing.T, f fixtures.SSTable) ([]string, map[string]*outcome) {
	var lines []string
	tally := map[string]*outcome{}
	prefix := copyFixture(t, f)
	comps, _ := filepath.Glob(prefix + "-*")
	sort.Strings(comps)
	for _, path := range comps {
		comp := strings.TrimPrefix(filepath.Base(path), filepath.Base(prefix)+"-")
		if comp == "keys.tsv" {
			continue
		}
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		byKind := map[string]*outcome{}
		var kinds []string
		for _, m := range mutations(comp, int64(len(orig)), f.Name) {
			o := byKind[m.kind]
			if o == nil {
				o = &outcome{}
				byKind[m.kind] = o
				kinds = append(kinds, m.kind)
			}
			rep := applyAndVerify(t, prefix, path, comp, orig, m)
			o.n++
			if !rep.OK {
				o.caught++
			}
			named := false
			for _, p := range rep.Problems {
				// A missing file is blamed on the TOC that lists it, naming it.
				if strings.HasSuffix(p.File, comp) || (m.kind == "missing" && strings.Contains(p.Message, comp)) {
					named = true
				}
				if p.Offset < 0 {
					o.noOffset++
				}
			}
			if named {
				o.blamed++
			}
			o.worst = max(o.worst, len(rep.Problems))
		}
		for _, k := range kinds {
			lines = append(lines, fmt.Sprintf("%s %s %s: %s\n", f.Name, comp, k, byKind[k]))
			tally[comp+" "+k] = byKind[k]
		}
	}
	return lines, tally
}

// mutations lists the damage done to one component: flips at 5 spread positions (the mask
// from a generator seeded by the fixture and component, so the campaign is the same every
// run), truncations to 1 byte and to half, an empty file, the file missing, and
// for TOC.txt a listing of a component that is not there.
func mutations(comp string, size int64, fixture string) []mutation {
	var seed uint64
	for _, c := range fixture + comp {
		seed = seed*131 + uint64(c)
	}
	rng := rand.New(rand.NewPCG(seed, 10))
	var ms []mutation
	if size > 0 {
		const flips = 5
		for i := int64(0); i < flips; i++ {
			off := i * (size - 1) / (flips - 1)
			if size < flips {
				off = i % size
			}
			mask := byte(1 + rng.IntN(255))
			if comp == "TOC.txt" || comp == "Digest.crc32" {
				mask = 1 << rng.IntN(3) // keep text text-like: a content change, not garbage
			}
			ms = append(ms, mutation{kind: "flip", off: off, mask: mask})
		}
		for _, cut := range []int64{1, size / 2} {
			if cut > 0 && cut < size {
				ms = append(ms, mutation{kind: "trunc", off: cut})
			}
		}
		ms = append(ms, mutation{kind: "empty"})
	}
	ms = append(ms, mutation{kind: "missing"})
	if comp == "TOC.txt" {
		ms = append(ms, mutation{kind: "toc-lies"})
	}
	return ms
}

// applyAndVerify damages path as m says, runs an extended verify, and restores the file.
func applyAndVerify(t *testing.T, prefix, path, comp string, orig []byte, m mutation) *Report {
	t.Helper()
	var err error
	switch m.kind {
	case "flip":
		b := append([]byte(nil), orig...)
		b[m.off] ^= m.mask
		err = os.WriteFile(path, b, 0o644)
	case "trunc":
		err = os.WriteFile(path, orig[:m.off], 0o644)
	case "empty":
		err = os.WriteFile(path, nil, 0o644)
	case "missing":
		err = os.Remove(path)
	case "toc-lies":
		// List a component that is not there.
		lie := "CRC.db\n"
		if _, err := os.Stat(prefix + "-CRC.db"); err == nil {
			lie = "CompressionInfo.db\n"
		}
		err = os.WriteFile(path, append(append([]byte(nil), orig...), lie...), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}()
	rep, err := Verify(prefix, VerifyOptions{Extended: true})
	if err != nil {
		t.Fatalf("%s %s %v: %v", prefix, comp, m, err)
	}
	return rep
}

// lineDiff lists the lines only in want (-) and only in got (+), in order.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	inW, inG := map[string]bool{}, map[string]bool{}
	for _, l := range w {
		inW[l] = true
	}
	for _, l := range g {
		inG[l] = true
	}
	var b strings.Builder
	for _, l := range w {
		if !inG[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if !inW[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
