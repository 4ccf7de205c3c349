package slice

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx/fsxtest"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
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

// A multi-run slice on XFS clones every run: the head pad aligns the first, and each chunk
// re-encoded at a run's edge is re-encoded longer by the bytes that put the next run's chunks at
// their parent offsets modulo the block size. By four and by 33 ranges it clones at least 99%
// of the bytes its runs' whole chunks hold, verifies and holds exactly the partitions.
func TestSliceReflinkOnXFS(t *testing.T) {
	mnt := fsxtest.MountXFS(t, "1G")
	v, _ := version.ParseWritable("oa")
	res := generate(t, filepath.Join(mnt, "oa"), gen.Options{Version: v, Size: 64 << 20, Seed: 6})
	parent, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	eq, err := EqualRanges(parent, 66)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{4, 33} {
		var ranges token.RangeSet
		for i := 0; i < 2*n; i += 2 {
			ranges = append(ranges, eq[i])
		}
		r := checkSlice(t, res.Desc.Prefix(), ranges, ModeReflink, Options{}, filepath.Join(mnt, fmt.Sprint("slice", n)))
		c := r.Children[0]
		if r.Mode != ModeReflink || c.Runs != n || c.Cloned == 0 {
			t.Fatalf("%d ranges: mode %s, %d runs, %d cloned", n, r.Mode, c.Runs, c.Cloned)
		}
		if shared := fsxtest.SharedBytes(t, c.Desc.Path("Data.db")); shared < c.Cloned {
			t.Errorf("%d ranges: %d shared bytes, cloned %d", n, shared, c.Cloned)
		}
		// The bytes of the runs' whole chunks, less a block at each end of each run (a clone
		// shares whole blocks only).
		whole := c.DataFileLength - c.EncodedBytes - int64(2*n)*4096
		if float64(c.Cloned) < 0.99*float64(whole) {
			t.Errorf("%d ranges: cloned %d of the %d bytes its runs' whole chunks hold", n, c.Cloned, whole)
		}
		t.Logf("%d ranges: cloned %d of %d bytes; %d re-encoded, %d filler bytes in %d fillers", n, c.Cloned, c.DataFileLength, c.EncodedBytes, c.FillerBytes, c.FillerPartitions)
	}
	parent.Close()
}

// DigestAuto (split's and slice's default on the command line) leaves a cloned child without
// Digest.crc32, neither on disk nor in its TOC, and the child still verifies strictly (every
// chunk's CRC); a copied child, and every child with DigestAlways, keeps its digest.
func TestDigestAutoLeavesOnlyClonedChildrenWithoutDigest(t *testing.T) {
	mnt := fsxtest.MountXFS(t, "1G")
	v, _ := version.ParseWritable("oa")
	res := generate(t, filepath.Join(mnt, "p"), gen.Options{Version: v, Size: 16 << 20, Seed: 6})
	parent, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	ranges, err := EqualRanges(parent, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode   Mode
		policy DigestPolicy
		digest bool
	}{
		{ModeReflink, DigestAuto, false},
		{ModeAuto, DigestAuto, false},
		{ModeCopy, DigestAuto, true},
		{ModeReflink, DigestAlways, true},
		{ModeCopy, DigestNever, false},
	} {
		out := filepath.Join(mnt, fmt.Sprintf("%s-%s", tc.mode, tc.policy))
		r, err := Split(t.Context(), parent, ranges, out, Options{Mode: tc.mode, Digest: tc.policy})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Children {
			_, statErr := os.Stat(c.Desc.Path(descriptor.Digest))
			toc, _ := os.ReadFile(c.Desc.Path(descriptor.TOC))
			listed := strings.Contains(string(toc), "Digest.crc32")
			if c.Digest != tc.digest || (statErr == nil) != tc.digest || listed != tc.digest {
				t.Errorf("%s/%q: child %s: Digest %v, on disk %v, in TOC %v; want %v", tc.mode, tc.policy, c.Desc, c.Digest, statErr == nil, listed, tc.digest)
			}
			rep, err := sstable.Verify(c.Desc.Prefix(), sstable.VerifyOptions{Strict: true})
			if err != nil || !rep.OK || rep.Chunks == 0 {
				t.Errorf("%s/%q: child %s does not verify: %v %+v", tc.mode, tc.policy, c.Desc, err, rep)
			}
		}
	}
}
