package slice

import (
	"path/filepath"
	"testing"

	"github.com/sluicedb/sluice/internal/fsx/fsxtest"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// On a reflink-capable XFS the children share the parent's extents: reflink mode clones the
// block-aligned middle of every chunk run, the children verify, and most of their Data.db bytes
// are shared extents. Skips (with the reason) only where the kernel or permissions refuse a
// loop-mounted XFS.
func TestSplitReflinkOnXFS(t *testing.T) {
	mnt := fsxtest.MountXFS(t, "1G")
	for _, vn := range []string{"oa", "da"} {
		v, _ := version.ParseWritable(vn)
		res := generate(t, filepath.Join(mnt, vn), gen.Options{Version: v, Size: 32 << 20, Seed: 5})
		parent, err := sstable.Open(res.Desc.Prefix())
		if err != nil {
			t.Fatal(err)
		}
		ranges, err := EqualRanges(parent, 4)
		parent.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []Mode{ModeReflink, ModeAuto} {
			r := checkSplit(t, res.Desc.Prefix(), ranges, m, false, filepath.Join(mnt, vn, "children-"+string(m)))
			if r.Mode != ModeReflink {
				t.Fatalf("%s/%s: mode used %s, want reflink", vn, m, r.Mode)
			}
			for _, c := range r.Children {
				if c.Cloned < c.DataFileLength/2 {
					t.Errorf("%s: child %s cloned %d of %d bytes", vn, c.Desc, c.Cloned, c.DataFileLength)
				}
				if shared := fsxtest.SharedBytes(t, c.Desc.Path("Data.db")); shared < c.Cloned {
					t.Errorf("%s: child %s has %d shared bytes, cloned %d", vn, c.Desc, shared, c.Cloned)
				}
			}
		}
	}
}

// A multi-run slice on XFS clones the runs whose offsets allow it (the first, behind its head
// pad, always) and copies the rest; it verifies and holds exactly the partitions.
func TestSliceReflinkOnXFS(t *testing.T) {
	mnt := fsxtest.MountXFS(t, "1G")
	v, _ := version.ParseWritable("oa")
	res := generate(t, filepath.Join(mnt, "oa"), gen.Options{Version: v, Size: 32 << 20, Seed: 6})
	parent, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	eq, err := EqualRanges(parent, 8)
	parent.Close()
	if err != nil {
		t.Fatal(err)
	}
	ranges := token.RangeSet{eq[0], eq[2], eq[4], eq[6]}
	r := checkSlice(t, res.Desc.Prefix(), ranges, ModeReflink, Options{}, filepath.Join(mnt, "slice"))
	c := r.Children[0]
	if r.Mode != ModeReflink || c.Runs != 4 || c.Cloned == 0 {
		t.Fatalf("mode %s, %d runs, %d cloned", r.Mode, c.Runs, c.Cloned)
	}
	if shared := fsxtest.SharedBytes(t, c.Desc.Path("Data.db")); shared < c.Cloned {
		t.Errorf("%d shared bytes, cloned %d", shared, c.Cloned)
	}
	t.Logf("cloned %d of %d bytes over %d runs", c.Cloned, c.DataFileLength, c.Runs)
}
