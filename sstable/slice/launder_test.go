package slice

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
)

// copyPrefix copies every component of the sstable at prefix into a new temporary directory
// and returns the copy's prefix.
func copyPrefix(t *testing.T, prefix string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(prefix + "-*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no components at %s: %v", prefix, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, filepath.Base(prefix))
}

func visibleFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// Finding 1 of issue 10: an uncompressed parent whose Data.db is corrupt must not split into
// children whose fresh CRC.db and Digest.crc32 vouch for the corruption. Every byte flip of
// Data.db fails the split, in every mode, with ErrCorrupt naming the parent's damaged CRC.db
// slice, and nothing is visible in the output directory. The real Cassandra md fixture (CRC.db
// written by Cassandra) and a generated nb parent with a short last slice are both covered.
func TestSplitNeverLaundersCorruptUncompressedParent(t *testing.T) {
	nb, _ := version.ParseWritable("nb")
	g, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: nb, Partitions: 80, PartitionSize: 3 << 10,
		RowSize: 700, Compression: "none", Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	for _, parent := range []string{fixture(t, "sstable-to-arrow/md/datasets.iris/md-1-big").Prefix, g.Desc.Prefix()} {
		src := copyPrefix(t, parent)
		data := src + "-Data.db"
		orig, err := os.ReadFile(data)
		if err != nil {
			t.Fatal(err)
		}
		const flips = 12
		for i := 0; i < flips; i++ {
			off := int64(i) * int64(len(orig)-1) / (flips - 1)
			b := append([]byte(nil), orig...)
			b[off] ^= 0x10
			if err := os.WriteFile(data, b, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, m := range []Mode{ModeCopy, ModeRechunk, ModeAuto, ModeRewrite} {
				if m == ModeRewrite && strings.Contains(filepath.Base(src), "md-") {
					continue // sluice writes nb and later only
				}
				t.Run(fmt.Sprintf("%s/flip@%d/%s", filepath.Base(parent), off, m), func(t *testing.T) {
					p := openTable(t, src)
					ranges, err := EqualRanges(p, 2)
					if err != nil {
						t.Fatal(err)
					}
					out := filepath.Join(t.TempDir(), "out")
					res, err := Split(context.Background(), p, ranges, out, Options{Mode: m})
					if err == nil {
						t.Fatalf("split of a parent with Data.db byte %d flipped succeeded: %d children", off, len(res.Children))
					}
					if m != ModeRewrite && !errors.Is(err, ErrCorrupt) {
						t.Errorf("err = %v, want ErrCorrupt", err)
					}
					if !strings.Contains(err.Error(), "Data.db") {
						t.Errorf("error does not name Data.db: %v", err)
					}
					if v := visibleFiles(t, out); len(v) != 0 {
						t.Errorf("visible after a failed split: %v", v)
					}
				})
			}
		}
		if err := os.WriteFile(data, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// An uncompressed parent without CRC.db is proven against its Digest.crc32 before anything is
// written, and refused when it has neither.
func TestSplitUncompressedWithoutCRC(t *testing.T) {
	nb, _ := version.ParseWritable("nb")
	g, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: nb, Partitions: 30, PartitionSize: 2 << 10,
		RowSize: 500, Compression: "none", Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	src := copyPrefix(t, g.Desc.Prefix())
	d, _, _ := descriptor.Parse(src + "-TOC.txt")
	dropComponent(t, d, descriptor.CRC)
	split := func() error {
		p := openTable(t, src)
		_, err = Split(context.Background(), p, everything, t.TempDir(), Options{Mode: ModeCopy})
		return err
	}
	if err := split(); err != nil {
		t.Fatalf("intact parent proven by its digest: %v", err)
	}
	b, _ := os.ReadFile(src + "-Data.db")
	b[len(b)/3] ^= 1
	os.WriteFile(src+"-Data.db", b, 0o644)
	if err := split(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt parent without CRC.db: %v, want ErrCorrupt", err)
	}
	dropComponent(t, d, descriptor.Digest)
	if err := split(); !errors.Is(err, ErrUnverifiable) {
		t.Fatalf("parent with neither CRC.db nor digest: %v, want ErrUnverifiable", err)
	}
}

func dropComponent(t *testing.T, d descriptor.Descriptor, c descriptor.Component) {
	t.Helper()
	if err := os.Remove(d.Path(c)); err != nil {
		t.Fatal(err)
	}
	toc, err := os.ReadFile(d.Path(descriptor.TOC))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(string(toc)), "\n") {
		if l != string(c) {
			keep = append(keep, l)
		}
	}
	if err := os.WriteFile(d.Path(descriptor.TOC), []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A compressed parent's chunks travel with their inline CRCs. A byte flip in Data.db either
// fails the split (the modes that read the bytes prove every chunk: rechunk, rewrite, and copy
// when it digests the child's bytes) or, where the digest is derived from the stored CRCs
// without reading, leaves a child whose chunk CRC and digest both disagree with its bytes, so
// verify reports it. No child ever passes verify with the damaged byte.
func TestSplitCompressedCorruptionStaysDetectable(t *testing.T) {
	oa, _ := version.ParseWritable("oa")
	g, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: oa, Partitions: 80, PartitionSize: 3 << 10,
		RowSize: 700, Compression: "lz4", ChunkLength: 4 << 10, Seed: 13})
	if err != nil {
		t.Fatal(err)
	}
	src := copyPrefix(t, g.Desc.Prefix())
	data := src + "-Data.db"
	orig, _ := os.ReadFile(data)
	for i := 1; i < 6; i++ {
		off := int64(i) * int64(len(orig)) / 6
		b := append([]byte(nil), orig...)
		b[off] ^= 0x08
		if err := os.WriteFile(data, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, m := range []Mode{ModeCopy, ModeRechunk, ModeAuto, ModeRewrite} {
			t.Run(fmt.Sprintf("flip@%d/%s", off, m), func(t *testing.T) {
				p := openTable(t, src)
				out := filepath.Join(t.TempDir(), "out")
				res, err := Split(context.Background(), p, everything, out, Options{Mode: m})
				if err != nil {
					if v := visibleFiles(t, out); len(v) != 0 {
						t.Errorf("visible after a failed split: %v", v)
					}
					return
				}
				for _, c := range res.Children {
					rep, err := sstable.Verify(c.Desc.Prefix(), sstable.VerifyOptions{Extended: true})
					if err == nil && rep.OK {
						t.Errorf("mode %s: child %s of a parent with byte %d flipped passes verify", res.Mode, c.Desc, off)
					}
				}
			})
		}
	}
}

// A split into more children than one install batch proves the parent's range before the first
// child is published: a damaged chunk near the end leaves nothing visible, not the first batches.
func TestSplitManyChildrenOfCorruptParentLeavesNothing(t *testing.T) {
	nb, _ := version.ParseWritable("nb")
	g, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: nb, Partitions: 120, PartitionSize: 2 << 10,
		RowSize: 500, Compression: "none", Seed: 14})
	if err != nil {
		t.Fatal(err)
	}
	src := copyPrefix(t, g.Desc.Prefix())
	b, _ := os.ReadFile(src + "-Data.db")
	b[len(b)-100] ^= 0x02 // in the last children, well after the first batch
	os.WriteFile(src+"-Data.db", b, 0o644)
	p := openTable(t, src)
	ranges, err := EqualRanges(p, 3*installBatch) // more children than one install batch
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := Split(context.Background(), p, ranges, out, Options{Mode: ModeCopy}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("split of a damaged parent into %d ranges: %v, want ErrCorrupt", len(ranges), err)
	}
	if v := visibleFiles(t, out); len(v) != 0 {
		t.Errorf("visible after a failed split: %d files, e.g. %s", len(v), v[0])
	}
}
