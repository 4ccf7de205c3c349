package stream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// markLegacyCounterShards rewrites the Statistics.db of the sstable at prefix (a test copy)
// to say it holds legacy counter shards, which slice.Refusal refuses for zero-copy.
func markLegacyCounterShards(t testing.TB, prefix string) {
	t.Helper()
	d, _, err := descriptor.Parse(prefix + "-" + string(descriptor.TOC))
	if err != nil {
		t.Fatal(err)
	}
	p := d.Path(descriptor.Statistics)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := stats.Parse(raw, d.Version)
	if err != nil {
		t.Fatal(err)
	}
	st.Stats.HasLegacyCounterShards = true
	if err := os.WriteFile(p, st.Append(nil, d.Version), 0o644); err != nil {
		t.Fatal(err)
	}
}

// leftovers lists what a fetch left in dir besides published sstables and its resume record:
// install temporaries, kept prefixes, rows scratch directories.
func leftovers(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), statePrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// An sstable with legacy counter shards travels as rows: shipped like a partial child,
// rewritten row by row at the receiver, published under a fresh generation, and it holds
// exactly the parent's partitions in the ranges, byte for byte.
func TestFetchRows(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	tables := map[string]genSpec{
		"big_lz4":  {version: "oa", compression: "lz4", seeds: []uint64{21}},
		"nb_none":  {version: "nb", compression: "none", seeds: []uint64{22}},
		"bti_lz4":  {version: "da", compression: "lz4", seeds: []uint64{23}},
		"bti_none": {version: "da", compression: "none", seeds: []uint64{24}},
	}
	parents := map[string][]string{}
	for name, s := range tables {
		parents[name] = genTable(t, root, name, s)
		for _, p := range parents[name] {
			markLegacyCounterShards(t, p)
		}
	}
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	for name := range tables {
		for _, spec := range []string{"(-4000000000000000000,3000000000000000000]", "(0,0]", "(5000000000000000000,-6000000000000000000]"} {
			t.Run(name+spec, func(t *testing.T) {
				ranges, _ := token.ParseRanges(token.Murmur3, spec)
				dir := t.TempDir()
				res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
					FetchRequest{Peer: addr, Keyspace: "ks", Table: name, Ranges: ranges, Dir: dir}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.SSTables) == 0 {
					t.Fatal("nothing fetched")
				}
				for _, f := range res.SSTables {
					if f.Kind != "rows" {
						t.Errorf("%s: kind %s, want rows", f.SSTable, f.Kind)
					}
					if filepath.Dir(f.Path) != dir {
						t.Errorf("%s installed at %s, outside %s", f.SSTable, f.Path, dir)
					}
				}
				checkFetched(t, parents[name], ranges, res)
				if l := leftovers(t, dir); len(l) != 0 {
					t.Errorf("left behind: %v", l)
				}
			})
		}
	}
}

// A rows sstable whose bytes fail their checksum leaves nothing: no sstable, no scratch.
func TestFetchRowsCorruptLeavesNothing(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	p := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{25}})[0]
	markLegacyCounterShards(t, p)
	b, err := os.ReadFile(p + "-Data.db")
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(p+"-Data.db", b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	ranges, _ := token.ParseRanges(token.Murmur3, "(0,0]")
	dir := t.TempDir()
	res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
		FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}, nil)
	if !errors.Is(err, ErrChecksum) || len(res.SSTables) != 0 {
		t.Fatalf("corrupt rows sstable: %v, %+v", err, res)
	}
	if v := visible(t, dir); len(v) != 0 {
		t.Errorf("visible: %v", v)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

// Rows of an md sstable cannot be rewritten (the writer writes nb and later): the receiver
// refuses that sstable with a Failure that says so, and installs nothing.
func TestFetchRowsRefusesUnwritableVersion(t *testing.T) {
	var src fixtures.SSTable
	for _, f := range fixtures.All(t) {
		if f.Version == "md" && strings.HasPrefix(f.Name, "sstable-to-arrow/") {
			src = f
		}
	}
	if src.Prefix == "" {
		t.Fatal("no Murmur3 md fixture")
	}
	root := t.TempDir()
	tdir := gen.TableDir(root, "ks", "iris")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(src.Prefix + "-*")
	for _, m := range matches {
		if strings.HasSuffix(m, "-keys.tsv") {
			continue
		}
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tdir, filepath.Base(m)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prefix := filepath.Join(tdir, filepath.Base(src.Prefix))
	markLegacyCounterShards(t, prefix)
	ca := newTestCA(t)
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	ranges, _ := token.ParseRanges(token.Murmur3, "(-4000000000000000000,6000000000000000000]")
	dir := t.TempDir()
	res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
		FetchRequest{Peer: addr, Keyspace: "ks", Table: "iris", Ranges: ranges, Dir: dir}, nil)
	var se *SSTableError
	if !errors.As(err, &se) || se.Code != wire.CodeRefused || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("md rows: err = %v", err)
	}
	if !strings.Contains(err.Error(), "md") || !strings.Contains(err.Error(), "legacy counter shards") {
		t.Errorf("the failure does not say why: %v", err)
	}
	if len(res.SSTables) != 0 {
		t.Errorf("installed %+v", res.SSTables)
	}
	if v := visible(t, dir); len(v) != 0 {
		t.Errorf("visible: %v", v)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

func TestReceiverRowsNeedsAWritableVersion(t *testing.T) {
	partial, _ := manifests(t, "lz4")
	for _, tc := range []struct {
		version string
		ok      bool
	}{{"oa", true}, {"me", false}, {"md", false}} {
		m := clone(partial)
		m.Kind, m.Version = wire.KindRows, tc.version
		r := session(t, m)
		st, err := r.Step(m)
		if err != nil {
			t.Fatal(err)
		}
		if tc.ok {
			if st.Receive == nil || st.Receive.Kind != wire.KindRows {
				t.Errorf("%s rows not received: %+v", tc.version, st)
			}
			continue
		}
		if st.Discard != m.SSTableID || len(st.Send) == 0 {
			t.Fatalf("%s rows accepted: %+v", tc.version, st)
		}
		if f := st.Send[0].(*wire.Failure); f.Code != wire.CodeRefused || !strings.Contains(f.Reason, tc.version) {
			t.Errorf("%s rows: %+v", tc.version, f)
		}
	}
}
