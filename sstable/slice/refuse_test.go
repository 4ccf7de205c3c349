package slice

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/lib/fsx/fsxtest"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

var everything = token.RangeSet{{Left: token.Murmur3.MinToken(), Right: token.Murmur3.MinToken()}}

// A destination too small for the children is refused before anything is written.
func TestSplitRefusesTooLittleSpace(t *testing.T) {
	small := fsxtest.MountSmallFS(t, "8M")
	v, _ := version.ParseWritable("oa")
	res := generate(t, t.TempDir(), gen.Options{Version: v, Size: 48 << 20, Seed: 2})
	parent := openTable(t, res.Desc.Prefix())
	out := filepath.Join(small, "kids")
	_, err := Split(context.Background(), parent, everything, out, Options{Mode: ModeCopy})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("split into 8 MiB: %v, want ErrRefused", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("refused split left %d files", len(ents))
	}
}

// Legacy counter shards: zero-copy modes refuse with the reason; auto falls back to the rewrite
// and says why.
func TestSplitLegacyCounterShards(t *testing.T) {
	v, _ := version.ParseWritable("nb")
	res := generate(t, t.TempDir(), gen.Options{Version: v, Partitions: 50, PartitionSize: 4 << 10, RowSize: 1 << 10, Seed: 4})
	p := res.Desc.Path(descriptor.Statistics)
	raw, _ := os.ReadFile(p)
	st, err := stats.Parse(raw, v)
	if err != nil {
		t.Fatal(err)
	}
	st.Stats.HasLegacyCounterShards = true
	if err := os.WriteFile(p, st.Append(nil, v), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := openTable(t, res.Desc.Prefix())
	if _, err := Split(context.Background(), parent, everything, t.TempDir(), Options{Mode: ModeReflink}); !errors.Is(err, ErrRefused) {
		t.Errorf("reflink of a parent with legacy counter shards: %v, want ErrRefused", err)
	}
	r, err := Split(context.Background(), parent, everything, t.TempDir(), Options{Mode: ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != ModeRewrite || r.Reason != "legacy counter shards" || len(r.Children) != 1 {
		t.Errorf("auto: mode %s reason %q children %d", r.Mode, r.Reason, len(r.Children))
	}
}

// Finding 7 of issue 10: an explicit --mode reflink where the file system cannot clone fails
// with the reason before writing anything; auto copies and says why in Reason.
func TestSplitExplicitReflinkFailsWhereCloningCannot(t *testing.T) {
	v, _ := version.ParseWritable("oa")
	res := generate(t, t.TempDir(), gen.Options{Version: v, Partitions: 40, PartitionSize: 4 << 10, RowSize: 1 << 10, Seed: 6})
	parent := openTable(t, res.Desc.Prefix())
	// The test's temporary directory is on ext4 or tmpfs here; where it can clone (XFS,
	// btrfs) the reflink path is TestSplitReflinkOnXFS's.
	m, _ := fsx.NewMover(fsx.Config{})
	out := filepath.Join(t.TempDir(), "kids")
	os.MkdirAll(out, 0o755)
	if m.ProbeReflink(out, parent.DataFile()) == nil {
		t.Skip("the temporary directory's file system clones")
	}
	_, err := Split(context.Background(), parent, everything, out, Options{Mode: ModeReflink})
	if !errors.Is(err, ErrRefused) || !errors.Is(err, fsx.ErrCloneUnsupported) {
		t.Fatalf("explicit reflink: %v, want ErrRefused wrapping the clone failure", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("refused reflink left %d files", len(ents))
	}
	r, err := Split(context.Background(), parent, everything, out, Options{Mode: ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != ModeCopy || !strings.Contains(r.Reason, "reflink unavailable") {
		t.Errorf("auto: mode %s, reason %q", r.Mode, r.Reason)
	}
}
