package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// liveYAML is a single node on loopback with its own ports, data under dir.
func liveYAML(dir string, storage, native int) string {
	return cassandraConf{Cluster: "sluice-interop", Dir: dir, Storage: storage, Native: native, NumTokens: 1, InitialToken: "0"}.yaml()
}

// A live single-node Cassandra 5.0 (CassandraDaemon from the same jars, 1 GiB heap, loopback,
// started and stopped here). For four fixture tables (BIG and BTI; wide partitions; statics and
// DESC clustering; a UDT; a table of five sstables with every kind of deletion) it creates the
// table over CQL, `nodetool import`s (NodeTool's class, its default verify) the original
// sstables into one table and each split mode's children into another, SELECTs every row of each,
// runs `nodetool compact`, SELECTs, `nodetool cleanup`, SELECTs again. Every import succeeds and
// every SELECT equals the original's; compaction and cleanup succeed for every mode's children
// (a zero-copy child's filler partitions are read and dropped) and the rows read the same after.
func TestLiveNodeImportsSluiceOutput(t *testing.T) {
	need(t)
	if os.Getenv("SLUICE_INTEROP_LIVE") == "0" {
		t.Skip("not-run: SLUICE_INTEROP_LIVE=0")
	}
	fs := fixtures(t)
	_, tables := byTable(fs)
	schema, types := fixtureSchemas(t)
	dir := filepath.Join(work, "live")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	storage, native, jmx := freePort(t, "tcp"), freePort(t, "tcp"), freePort(t, "tcp")
	node := startCassandra(t, dir, liveYAML(dir, storage, native), native, jmx)

	for _, name := range []string{"wide_big_lz4", "statics_bti_lz4", "collections_bti_deflate", "deletions_big_none"} {
		t.Run(name, func(t *testing.T) {
			fx := tables[name]
			if len(fx) == 0 {
				t.Fatalf("no fixture %s", name)
			}
			args := []string{"live", "--port", fmt.Sprint(native), "--jmx", fmt.Sprint(jmx), "--schema", schema[name]}
			for _, ty := range types[name] {
				args = append(args, "--type", ty)
			}
			args = append(args, "--table", name+"_orig="+filepath.Dir(fx[0].Path))
			var tables []string
			for _, mode := range []string{"rewrite", "rechunk", "copy"} {
				var dirs []string
				for i, f := range fx {
					out := filepath.Join(work, "live-split", name, mode, fmt.Sprint(i))
					if _, err := sluice(t, "sstable", "split", f.Path, "--out", out, "--ways", "3", "--mode", mode); err != nil {
						t.Fatal(err)
					}
					dirs = append(dirs, out)
				}
				args = append(args, "--table", name+"_"+mode+"="+strings.Join(dirs, ","))
				tables = append(tables, name+"_"+mode)
			}
			liveCheck(t, args, name+"_orig", tables, false)
		})
	}
	// Zero-copy slices of text-keyed parents (filler partitions between their runs) by eight
	// vnode-like ranges, in every zero-copy mode, against the rechunked slice of the same ranges.
	for _, g := range generated(t) {
		if g.Compression != "lz4" || (g.Version != "oa" && g.Version != "da") {
			continue
		}
		name := "gen_" + g.Version
		t.Run(name, func(t *testing.T) {
			args := []string{"live", "--port", fmt.Sprint(native), "--jmx", fmt.Sprint(jmx),
				"--schema", "CREATE TABLE sluice.stress (key text, c text, value blob, PRIMARY KEY (key, c))"}
			var tables []string
			fillers := 0
			for _, mode := range []string{"rechunk", "copy", "auto"} {
				out := filepath.Join(work, "live-slice", name, mode)
				if _, err := sluice(t, "sstable", "slice", g.Path, "--ranges", vnodeSpec, "--out", out, "--mode", mode); err != nil {
					t.Fatal(err)
				}
				for _, f := range dataFiles(t, out) {
					if mode != "rechunk" {
						fillers += len(fillersOf(t, f))
					}
				}
				args = append(args, "--table", name+"_"+mode+"="+out)
				tables = append(tables, name+"_"+mode)
			}
			if fillers == 0 {
				t.Errorf("no zero-copy slice of %s has a filler partition: the test proves nothing", g.Path)
			}
			liveCheck(t, args, name+"_rechunk", tables[1:], true)
		})
	}
	if s := node.logs.String(); strings.Contains(s, "CorruptSSTableException") {
		i := strings.Index(s, "CorruptSSTableException")
		t.Logf("Cassandra logged: %s", strings.SplitN(s[i:], "\n", 3)[0]+" / "+strings.SplitN(s[i:], "\n", 3)[1])
	}
}

// fixtureSchemas returns the CREATE TABLE and CREATE TYPE statements of the fixture tables,
// from the lines the harness printed while writing them.
func fixtureSchemas(t *testing.T) (map[string]string, map[string][]string) {
	t.Helper()
	fixtures(t)
	return fixSchema, fixTypes
}

// liveCheck runs the live harness (args) and holds every table to the reference table ref: the
// import succeeds, and SELECT * equals ref's after the import, after nodetool compact and after
// nodetool cleanup, both of which succeed.
//
// With fillers (the tables hold filler partitions and the reference none), the partition
// estimates also show the fillers: above the reference's after the import, equal to it after the
// compaction, which dropped them.
func liveCheck(t *testing.T, args []string, ref string, tables []string, fillers bool) {
	t.Helper()
	out, err := harness(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	res := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.SplitN(line, " ", 3); len(f) == 3 {
			res[f[0]+" "+f[1]] = f[2]
		}
	}
	want := res["ROWS "+ref]
	if want == "" || strings.HasPrefix(want, "fail") || strings.HasPrefix(want, "0 ") {
		t.Fatalf("the reference %s did not import and read: %q\n%s", ref, want, out)
	}
	for _, tb := range tables {
		if imp := res["IMPORT "+tb]; !strings.HasPrefix(imp, "0") {
			t.Errorf("nodetool import of %s: %s", tb, imp)
		}
		for _, step := range []string{"ROWS", "COMPACTED", "CLEANED"} {
			if got := res[step+" "+tb]; got != want {
				t.Errorf("SELECT over %s (%s): %s, the reference %s: %s", tb, step, got, ref, want)
			}
		}
		for _, step := range []string{"COMPACT", "CLEANUP"} {
			if fail := res[step+" "+tb]; fail != "" {
				t.Errorf("nodetool %s over %s: %s", strings.ToLower(step), tb, fail)
			}
		}
		// Compaction dropped every filler partition: the compacted table's partition estimate
		// (the cardinality of its keys) is the reference's.
		if got, want := res["PARTITIONS "+tb], res["PARTITIONS "+ref]; got == "" || got != want {
			t.Errorf("after nodetool compact %s estimates %q partitions, the reference %s %q", tb, got, ref, want)
		}
		if imported, want := res["IMPORTED "+tb], res["IMPORTED "+ref]; fillers && imported == want {
			t.Errorf("after the import %s estimates %q partitions like the reference %s: its fillers do not show, the compaction check proves nothing", tb, imported, ref)
		}
	}
}
