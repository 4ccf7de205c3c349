package stats

import (
	"bytes"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable/version"
)

func fixtureVersion(t testing.TB, f fixtures.SSTable) version.Version {
	t.Helper()
	format, err := version.ParseFormat(f.Format)
	if err != nil {
		t.Fatal(err)
	}
	v, err := version.Parse(format, f.Version)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRoundTripEveryFixture(t *testing.T) {
	for _, f := range fixtures.All(t) {
		t.Run(f.Name, func(t *testing.T) {
			b := f.Read(t, "Statistics.db")
			v := fixtureVersion(t, f)
			s, err := Parse(b, v)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Append(nil, v); !bytes.Equal(got, b) {
				t.Fatalf("Append differs from the file (%d vs %d bytes)", len(got), len(b))
			}
			if p := Check(b, v); len(p) != 0 {
				t.Fatalf("Check: %v", p)
			}
		})
	}
}
