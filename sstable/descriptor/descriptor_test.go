package descriptor

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/version"
)

func TestParseNames(t *testing.T) {
	cases := []struct {
		in      string
		prefix  string
		comp    Component
		version string
	}{
		{"/d/nb-1-big-Data.db", "/d/nb-1-big", Data, "nb-big"},
		{"/d/da-12-bti-Partitions.db", "/d/da-12-bti", Partitions, "da-bti"},
		{"/d/oa-3gll_1kke_3qdyo2i4kzfpt3cqcy-big-TOC.txt", "/d/oa-3gll_1kke_3qdyo2i4kzfpt3cqcy-big", TOC, "oa-big"},
		{"rel/nc-7-big", "rel/nc-7-big", "", "nc-big"},
	}
	for _, c := range cases {
		d, comp, err := Parse(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if d.Prefix() != c.prefix || comp != c.comp || d.Version.String() != c.version {
			t.Errorf("%s: got %s %q %s", c.in, d.Prefix(), comp, d.Version)
		}
	}
	for _, bad := range []string{"/d/Data.db", "/d/ka-1-big-Data.db", "/d/nb-x-big-Data.db", "/d/nb-1-foo-Data.db", "/d/nb-0-big"} {
		if _, _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestTOCOfEveryFixtureRoundTripsAsASet(t *testing.T) {
	for _, f := range fixtures.All(t) {
		raw := f.Read(t, "TOC.txt")
		cs, err := ParseTOC(raw)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if got := AppendTOC(nil, cs); !bytes.Equal(got, raw) {
			t.Errorf("%s: TOC round trip differs:\n%q\n%q", f.Name, got, raw)
		}
		d, _, err := Parse(f.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		want := map[Component]bool{}
		for _, c := range Components(d.Version.Format, f.Has("CompressionInfo.db")) {
			want[c] = true
		}
		for _, c := range cs {
			if !want[c] {
				t.Errorf("%s: TOC lists %s, not in the %s component set", f.Name, c, d.Version.Format)
			}
			if _, err := os.Stat(d.Path(c)); err != nil {
				t.Errorf("%s: TOC lists missing %s", f.Name, c)
			}
		}
	}
}

func TestTableDirAndGenerations(t *testing.T) {
	ks, tb, id, ok := TableDir("/data/spark_test/testtable-0123456789abcdef0123456789abcdef")
	if !ok || ks != "spark_test" || tb != "testtable" || id != "0123456789abcdef0123456789abcdef" {
		t.Errorf("TableDir = %q %q %q %v", ks, tb, id, ok)
	}
	if _, _, _, ok := TableDir("/tmp/foo"); ok {
		t.Error("non-layout dir accepted")
	}
	dir := t.TempDir()
	for _, n := range []string{"nb-3-big-Data.db", ".sluice-tmp-9-nb-7-big-Data.db", "junk"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if g, err := NextGeneration(dir); err != nil || g != 8 {
		t.Errorf("NextGeneration = %d, %v; want 8 (the temporary file's 7 counts)", g, err)
	}
	if ds, err := List(dir); err != nil || len(ds) != 1 || ds[0].Version != (version.Version{Format: version.Big, Name: "nb"}) {
		t.Errorf("List = %v, %v", ds, err)
	}
}
