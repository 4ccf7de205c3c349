package sstable

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// flipEveryByte flips each byte of one component of a fixture copy in turn (bit i%8 of byte
// i) and returns, per flipped offset, the extended verify's report.
func flipEveryByte(t *testing.T, fixture, comp string, fn func(off int, rep *Report)) {
	t.Helper()
	f := pick(t, []string{fixture})[0]
	prefix := copyFixture(t, f)
	path := prefix + "-" + comp
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := range orig {
		b := append([]byte(nil), orig...)
		b[off] ^= 1 << (off % 8)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Verify(prefix, VerifyOptions{Extended: true})
		if err != nil {
			t.Fatal(err)
		}
		fn(off, rep)
	}
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Finding 2 of issue 10: Rows.db is derived from Data.db, so an extended verify rebuilds each
// row index entry from the rows and compares. Every single-bit flip of a Cassandra-written
// Rows.db is caught and blamed on Rows.db.
func TestVerifyCatchesEveryRowsDBFlip(t *testing.T) {
	flipEveryByte(t, "apache-legacy/da/legacy_tables/legacy_da_clust/da-1-bti", "Rows.db", func(off int, rep *Report) {
		if rep.OK {
			t.Errorf("Rows.db bit flip at %d passes verify", off)
			return
		}
		if !named(rep, "Rows.db") {
			t.Errorf("Rows.db bit flip at %d blamed elsewhere: %v", off, rep.Problems)
		}
	})
}

func named(rep *Report, comp string) bool {
	for _, p := range rep.Problems {
		if strings.HasSuffix(p.File, comp) {
			return true
		}
	}
	return false
}

var _ = fmt.Sprint
