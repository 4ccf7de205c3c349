package fsx

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx/fsxtest"
)

// TestEvictPageCache: a freshly written file is resident; after EvictPageCache nothing is;
// reading part of it back brings at least that part in and the read shows in ProcIO's
// read_bytes (it came from the device). Run on the XFS loop mount and on the temp directory.
func TestEvictPageCache(t *testing.T) {
	dirs := map[string]func(t *testing.T) string{
		"tempdir": func(t *testing.T) string { return t.TempDir() },
		"xfs":     func(t *testing.T) string { return fsxtest.MountXFS(t, "300M") },
	}
	for name, mkdir := range dirs {
		t.Run(name, func(t *testing.T) {
			const size = 8<<20 + 100
			f := writeFile(t, mkdir(t), "f", randomBytes(40, size))
			if r, err := ResidentBytes(f); err != nil || r != size {
				t.Fatalf("ResidentBytes after writing = %d, %v; want %d", r, err, size)
			}
			if err := EvictPageCache(f); err != nil {
				t.Fatal(err)
			}
			if r, err := ResidentBytes(f); err != nil || r != 0 {
				t.Fatalf("ResidentBytes after eviction = %d, %v; want 0", r, err)
			}
			before, err := ProcIO()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(io.NewSectionReader(f, 0, 1<<20), make([]byte, 1<<20)); err != nil {
				t.Fatal(err)
			}
			after, err := ProcIO()
			if err != nil {
				t.Fatal(err)
			}
			if r, err := ResidentBytes(f); err != nil || r < 1<<20 || r > size {
				t.Fatalf("ResidentBytes after reading 1 MiB = %d, %v", r, err)
			}
			if d := after.Sub(before); d.ReadBytes < 1<<20 || d.RChar < 1<<20 {
				t.Fatalf("reading 1 MiB cold: %+v", d)
			}
		})
	}
}

func TestResidentBytesEmpty(t *testing.T) {
	f := writeFile(t, t.TempDir(), "empty", nil)
	if r, err := ResidentBytes(f); err != nil || r != 0 {
		t.Fatalf("ResidentBytes(empty) = %d, %v", r, err)
	}
}

func TestResidentBytesWriteOnly(t *testing.T) {
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "w"), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := ResidentBytes(f); err == nil {
		t.Fatal("ResidentBytes of a write-only file succeeded")
	}
}

// TestResidentBytesWindows: pages on both sides of the 1 GiB mapping window and a partial last
// page are counted, holes are not.
func TestResidentBytesWindows(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Skip("the expected counts assume 4 KiB pages")
	}
	f := writeFile(t, t.TempDir(), "sparse", nil)
	const size = residentWindow + 8192 + 100
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		off int64
		n   int
	}{{0, 4096}, {residentWindow + 4096, 4096}, {residentWindow + 8192, 100}} {
		if _, err := f.WriteAt(randomBytes(41, w.n), w.off); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := ResidentBytes(f); err != nil || r != 4096+4096+100 {
		t.Fatalf("ResidentBytes = %d, %v; want %d", r, err, 4096+4096+100)
	}
}

// Reopen gives a second open file of the same inode, even once the name points elsewhere.
func TestReopenIsTheSameInodeNotTheName(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	if err := os.WriteFile(p, []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(p, filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Reopen(f)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ReadExactly(g)
	b := make([]byte, 5)
	if _, err := g.ReadAt(b, 0); err != nil || string(b) != "first" {
		t.Fatalf("reopened file reads %q, %v", b, err)
	}
}
