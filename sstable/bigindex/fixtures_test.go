package bigindex

import (
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// bigFixtures is every BIG-format fixture sstable; each has Index.db and Summary.db.
func bigFixtures(t testing.TB) []fixtures.SSTable {
	t.Helper()
	var out []fixtures.SSTable
	for _, s := range fixtures.All(t) {
		if s.Format == "big" {
			out = append(out, s)
		}
	}
	if len(out) < 30 {
		t.Fatalf("found %d BIG fixtures, want the full set", len(out))
	}
	return out
}

func fixtureVersion(t testing.TB, s fixtures.SSTable) version.Version {
	t.Helper()
	v, err := version.Parse(version.Big, s.Version)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fixturePartitioner hard-codes what the fixture README states: every apache-legacy sstable
// uses ByteOrderedPartitioner, the others Murmur3Partitioner.
func fixturePartitioner(s fixtures.SSTable) token.Partitioner {
	if strings.HasPrefix(s.Name, "apache-legacy/") {
		return token.ByteOrdered
	}
	return token.Murmur3
}

// collect drains a source into copies of its entries.
func collect(t testing.TB, src Source) []Entry {
	t.Helper()
	var out []Entry
	for src.Next() {
		e := *src.Entry()
		e.Key = append([]byte(nil), e.Key...)
		e.Promoted = append([]byte(nil), e.Promoted...)
		out = append(out, e)
	}
	if err := src.Err(); err != nil {
		t.Fatalf("iterating: %v", err)
	}
	return out
}
