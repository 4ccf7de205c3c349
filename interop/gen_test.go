package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// genCase is one `sluice sstable gen` output.
type genCase struct {
	Name, Version, Compression, Path string
}

var (
	genOnce  sync.Once
	genCases []genCase
	genErr   error
)

// generated runs `sluice sstable gen` once per writable version and compression, 240 partitions
// each with a different seed: with LZ4 small partitions (6 KiB, several per 16 KiB chunk), without
// compression 96 KiB partitions that carry a promoted index (BIG) or a row index (BTI).
func generated(t testing.TB) []genCase {
	t.Helper()
	genOnce.Do(func() {
		seed := 1
		for _, v := range []string{"nb", "nc", "oa", "da"} {
			for _, c := range []string{"lz4", "none"} {
				name := v + "-" + c
				out := filepath.Join(work, "gen", name)
				size, rows := "6KiB", "1KiB"
				if c == "none" {
					size, rows = "96KiB", "2KiB"
				}
				if _, err := sluice(t, "sstable", "gen", "--out", out, "--version", v, "--partitions", "240",
					"--partition-size", size, "--row-size", rows, "--compression", c, "--seed", fmt.Sprint(seed)); err != nil {
					genErr = err
					return
				}
				seed++
				files := dataFiles(t, out)
				if len(files) != 1 {
					genErr = fmt.Errorf("gen %s wrote %d sstables", name, len(files))
					return
				}
				genCases = append(genCases, genCase{Name: name, Version: v, Compression: c, Path: files[0]})
			}
		}
	})
	if genErr != nil {
		t.Fatal(genErr)
	}
	return genCases
}

// Every writable version x compression that `sstable gen` writes: Cassandra reads every
// partition (the same keys, in the same order, as sluice's index says), its metadata is
// consistent with the data, and both verifiers (sstableverify, sstableverify -e) accept it.
func TestGenReadByCassandra(t *testing.T) {
	need(t)
	cases := generated(t)
	var paths []string
	for _, c := range cases {
		paths = append(paths, c.Path)
	}
	// The control: a copy of the first with one byte of Data.db flipped must be rejected, so a
	// pass above means something.
	bad := corruptCopy(t, cases[0].Path)
	views := cassandra(t, append(paths, bad)...)
	t.Run("control-one-flipped-byte", func(t *testing.T) {
		v := views[bad]
		if strings.HasPrefix(v.Basic, "ok") && strings.HasPrefix(v.Extended, "ok") && v.scanAgrees() {
			t.Errorf("Cassandra accepted %s with a flipped Data.db byte: %s / %s", bad, v.Basic, v.Extended)
		} else {
			t.Logf("Cassandra on a flipped byte: sstableverify: %s", tail(v.Basic, 200))
		}
	})
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			v := views[c.Path]
			acceptedWhole(t, v)
			sameKeys(t, v, sluiceKeys(t, c.Path))
		})
	}
}

// acceptedWhole asserts Cassandra read the sstable through the index and sequentially (as
// compaction does) with the same result, found its metadata consistent and both verifiers passed.
func acceptedWhole(t *testing.T, v *view) {
	t.Helper()
	if !v.readOK() {
		t.Errorf("Cassandra could not read %s: %s", v.Path, v.Read)
	}
	rowIndexOK(t, v)
	if !v.scanAgrees() {
		t.Errorf("Cassandra's sequential read (compaction's) of %s differs from its index-driven read: %s / %s", v.Path, v.Scan, v.Read)
	}
	if !v.metaOK() {
		t.Errorf("Cassandra's metadata check of %s: %s", v.Path, v.Meta)
	}
	if !strings.HasPrefix(v.Basic, "ok") {
		t.Errorf("sstableverify rejects %s: %s", v.Path, v.Basic)
	}
	if !strings.HasPrefix(v.Extended, "ok") {
		t.Errorf("sstableverify -e rejects %s: %s", v.Path, v.Extended)
	}
}

// sameKeys compares the partitions Cassandra's scanner returned with sluice's index pass:
// same keys, same tokens, same order.
func sameKeys(t *testing.T, v *view, keys []keyLine) {
	t.Helper()
	if len(keys) != len(v.Parts) {
		t.Errorf("%s: sluice lists %d partitions, Cassandra reads %d", v.Path, len(keys), len(v.Parts))
		return
	}
	for i, k := range keys {
		if p := v.Parts[i]; p.Key != k.Key || p.Token != k.Token {
			t.Errorf("%s: partition %d: sluice has key %s token %s, Cassandra %s %s", v.Path, i, k.Key, k.Token, p.Key, p.Token)
			return
		}
	}
}

// corruptCopy copies an sstable's components to a new directory and flips one byte in the
// middle of its Data.db.
func corruptCopy(t *testing.T, dataPath string) string {
	t.Helper()
	dir := filepath.Join(work, "corrupt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimSuffix(filepath.Base(dataPath), "Data.db")
	ents, err := os.ReadDir(filepath.Dir(dataPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(filepath.Dir(dataPath), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), "Data.db") {
			b[len(b)/2] ^= 0x5a
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, filepath.Base(dataPath))
}
