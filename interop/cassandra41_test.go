package interop

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/sluicedb/sluice/sstable/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cassandra41 is the 4.1 release whose own sstabledump reads sluice's nb files (4.1 runs on
// Java 17 with its jvm11 flags; 3.11 does not run on Java 17 or 25 at all: see docs/INTEROP.md).
const cassandra41 = "4.1.10"

// sstabledump41 runs Cassandra 4.1's sstabledump (SSTableExport) and returns, by partition key
// (as sstabledump prints it), the partition's JSON with every "position" field removed.
func sstabledump41(t *testing.T, path string) (map[string]string, []string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(repo, "interop", "cassandra.sh"), "tool", "org.apache.cassandra.tools.SSTableExport", path)
	cmd.Env = append(os.Environ(), "CASSANDRA_VERSION="+cassandra41)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = tail(string(ee.Stderr), 1500)
		}
		return nil, nil, fmt.Errorf("sstabledump (Cassandra %s) %s: %v: %s", cassandra41, path, err, msg)
	}
	var parts []map[string]any
	if err := json.Unmarshal(out, &parts); err != nil {
		return nil, nil, fmt.Errorf("sstabledump (Cassandra %s) %s printed no JSON array: %v: %s", cassandra41, path, err, tail(string(out), 800))
	}
	m := map[string]string{}
	var order []string
	for _, p := range parts {
		stripPositions(p)
		key := fmt.Sprint(p["partition"].(map[string]any)["key"])
		b, _ := json.Marshal(p)
		m[key] = string(b)
		order = append(order, key)
	}
	return m, order, nil
}

func stripPositions(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "position")
		for _, e := range x {
			stripPositions(e)
		}
	case []any:
		for _, e := range x {
			stripPositions(e)
		}
	}
}

// Cassandra 4.1's own sstabledump reads sluice's nb output: `sstable gen` (LZ4 and none), the
// children of every split mode of the LZ4 one and its zero-copy slices by eight ranges. Every partition sluice's index lists is dumped, in
// its order, and the union of the children's partitions is the parent's, field by field; the
// children's filler partitions are dumped too, empty.
func TestCassandra41ReadsNB(t *testing.T) {
	need(t)
	var parents []genCase
	for _, g := range generated(t) {
		if g.Version == "nb" {
			parents = append(parents, g)
		}
	}
	for _, g := range parents {
		t.Run(g.Name, func(t *testing.T) {
			want, order, err := sstabledump41(t, g.Path)
			if err != nil {
				t.Fatal(err)
			}
			keys := sluiceKeys(t, g.Path)
			if len(keys) != len(order) {
				t.Fatalf("sluice lists %d partitions, Cassandra %s dumps %d", len(keys), cassandra41, len(order))
			}
			for i, k := range keys {
				b, _ := hex.DecodeString(k.Key)
				if order[i] != "["+string(b)+"]" {
					t.Fatalf("partition %d: sluice has key %q, Cassandra %s %s", i, b, cassandra41, order[i])
				}
			}
			if g.Compression != "lz4" {
				return
			}
			// Every split mode's children hold all of the parent; slices of eight vnode-like
			// ranges (filler partitions between their runs) the parent's partitions in them.
			vnodes, err := token.ParseRanges(token.Murmur3, vnodeSpec)
			if err != nil {
				t.Fatal(err)
			}
			tokenOf := map[string]token.Token{}
			for _, k := range keys {
				b, _ := hex.DecodeString(k.Key)
				tokenOf["["+string(b)+"]"] = token.Murmur3.Token(b)
			}
			all := want
			for _, mode := range []string{"copy", "rechunk", "rewrite", "slice-copy", "slice-auto"} {
				out := filepath.Join(work, "split41", g.Name, mode)
				args := []string{"sstable", "split", g.Path, "--out", out, "--ways", "3", "--mode", mode}
				want = all
				if m, ok := strings.CutPrefix(mode, "slice-"); ok {
					args = []string{"sstable", "slice", g.Path, "--out", out, "--ranges", vnodeSpec, "--mode", m}
					want = map[string]string{}
					for k, v := range all {
						if vnodes.Contains(tokenOf[k]) {
							want[k] = v
						}
					}
				}
				if _, err := sluice(t, args...); err != nil {
					t.Fatal(err)
				}
				got := map[string]string{}
				for _, c := range dataFiles(t, out) {
					m, _, err := sstabledump41(t, c)
					if err != nil {
						t.Errorf("%s child: %v", mode, err)
						continue
					}
					// Filler partitions are dumped like the index lists them: empty.
					fillers := map[string]bool{}
					for k := range fillersOf(t, c) {
						b, _ := hex.DecodeString(k)
						fillers["["+string(b)+"]"] = true
					}
					for k, v := range m {
						if fillers[k] {
							var p map[string]any
							if err := json.Unmarshal([]byte(v), &p); err != nil || len(fmt.Sprint(p["rows"])) > 2 {
								t.Errorf("%s child %s: filler partition %q dumped with content: %s", mode, c, k, v)
							}
							delete(fillers, k)
							continue
						}
						got[k] = v
					}
					if len(fillers) > 0 {
						t.Errorf("%s child %s: %d filler partitions not dumped", mode, c, len(fillers))
					}
				}
				var bad []string
				for k, v := range want {
					if got[k] != v {
						bad = append(bad, k)
					}
				}
				if len(bad) > 0 || len(got) != len(want) {
					t.Errorf("%s children: Cassandra %s dumps %d partitions, %d differ from the parent's %d (%s)", mode, cassandra41, len(got), len(bad), len(want), strings.Join(bad[:min(3, len(bad))], " "))
				}
			}
		})
	}
}
