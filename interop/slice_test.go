package interop

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

// sliceSpec is two disjoint ranges, so that a slice is several runs of the parent;
// vnodeSpec is eight vnode-like ranges, one of them wrapping the ring's end.
const (
	sliceSpec = "(-6000000000000000000,-2000000000000000000],(3000000000000000000,8000000000000000000]"
	vnodeSpec = "(-8500000000000000000,-8000000000000000000],(-6300000000000000000,-5200000000000000000]," +
		"(-4100000000000000000,-4000000000000000000],(-1000000000000000000,-100000000000000000]," +
		"(1500000000000000000,2500000000000000000],(4000000000000000000,4100000000000000000]," +
		"(6000000000000000000,7000000000000000000],(9000000000000000000,-9100000000000000000]"
)

// `sluice sstable slice PATH --ranges SPEC --out DIR`, in every mode that writes chunks (copy and
// reflink-or-copy auto are zero-copy, rechunk recompresses), over gen parents and
// Cassandra-written fixtures, by two and by eight ranges: every output is an ordinary sstable to
// every Cassandra reader (cassandraNative over the slice's ranges: index-driven and sequential
// reads agree, getScanner over each range returns exactly its partitions, sstableverify -e
// passes, filler partitions are empty wherever they are read), and the union of Cassandra's
// digests over the outputs equals the parent's in the ranges.
func TestSliceOutputsReadByCassandra(t *testing.T) {
	need(t)
	var parents []parent
	for _, g := range generated(t) {
		if g.Compression == "lz4" {
			parents = append(parents, parent{Name: "gen-" + g.Name, Path: g.Path})
		}
	}
	for _, f := range fixtures(t) {
		if strings.HasPrefix(f.Table, "wide_") || strings.HasPrefix(f.Table, "statics_") || strings.HasPrefix(f.Table, "testtable") {
			parents = append(parents, parent{Name: "cassandra-" + f.Table + "-" + strings.TrimSuffix(filepath.Base(f.Path), "-Data.db"), Path: f.Path})
		}
	}
	specs := map[string]string{"2": sliceSpec, "8": vnodeSpec}
	work := t.TempDir()
	type out struct {
		paths   []string
		fillers map[string]map[string]bool
		err     error
	}
	outs := map[string]*out{}
	paths := map[string]string{}
	for _, p := range parents {
		paths[p.Path] = ""
		for n, spec := range specs {
			for _, mode := range []string{"rechunk", "copy", "auto"} {
				name := p.Name + "/" + n + "/" + mode
				dir := filepath.Join(work, "slice", mode, n, p.Name)
				o := &out{fillers: map[string]map[string]bool{}}
				outs[name] = o
				if _, o.err = sluice(t, "sstable", "slice", p.Path, "--ranges", spec, "--out", dir, "--mode", mode, "--json"); o.err != nil {
					continue
				}
				o.paths = dataFiles(t, dir)
				for _, f := range o.paths {
					paths[f] = spec
					o.fillers[f] = fillersOf(t, f)
				}
			}
		}
	}
	views := cassandraEach(t, paths)
	for _, p := range parents {
		for n, spec := range specs {
			ranges, err := token.ParseRanges(token.Murmur3, spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []string{"rechunk", "copy", "auto"} {
				name := p.Name + "/" + n + "/" + mode
				t.Run(name, func(t *testing.T) {
					o := outs[name]
					if o.err != nil {
						t.Fatal(o.err)
					}
					var got []*view
					for _, f := range o.paths {
						v := views[f]
						got = append(got, v)
						for _, bad := range cassandraNative(t, v, f, ranges, o.fillers[f]) {
							t.Error(bad)
						}
						rowIndexOK(t, v)
					}
					sameDigests(t, "union of the slice outputs", inRanges(t, views[p.Path], ranges), digests(t, got...))
				})
			}
		}
	}
}
