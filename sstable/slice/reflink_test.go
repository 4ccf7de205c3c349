package slice

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sluicedb/sluice/internal/fsx/fsxtest"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
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
		res, err := gen.Generate(context.Background(), filepath.Join(mnt, vn), gen.Options{Version: v, Size: 32 << 20, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
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
