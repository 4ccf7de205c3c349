package fsx

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx/fsxtest"
)

// TestNoSpace fills a small file system through an Install: each mechanism's ENOSPC comes back
// as an error naming the file and wrapping syscall.ENOSPC, the pre-flight check names the
// directory, and Abort leaves no final or temporary file.
func TestNoSpace(t *testing.T) {
	dir := fsxtest.MountSmallFS(t, "8M")
	const size = 16 << 20
	src := writeFile(t, t.TempDir(), "src", randomBytes(30, size))

	err := CheckFreeSpace(dir, size)
	var nse *NoSpaceError
	if !errors.As(err, &nse) || !errors.Is(err, ErrNoSpace) || nse.Dir != dir || nse.Need != size || nse.Free >= size {
		t.Fatalf("CheckFreeSpace: %v", err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Fatalf("error %q does not name %s", err, dir)
	}
	if err := CheckFreeSpace(dir, 1<<20); err != nil {
		t.Fatalf("1 MiB should fit: %v", err)
	}

	m := newMover(t, Config{})
	fill := map[string]func(f *os.File) error{
		"Move": func(f *os.File) error {
			_, err := m.Move(f, 0, src, 0, size, true)
			return err
		},
		"buffered": func(f *os.File) error {
			_, err := copyRange(f, 0, src, 0, size, MethodBuffered)
			return err
		},
		"sendfile": func(f *os.File) error {
			_, err := copyRange(f, 0, src, 0, size, MethodSendfile)
			return err
		},
		"SpliceToFile": func(f *os.File) error {
			r, w, err := os.Pipe()
			if err != nil {
				return err
			}
			defer r.Close()
			go func() {
				io.Copy(w, io.NewSectionReader(src, 0, size))
				w.Close()
			}()
			_, err = SpliceToFile(context.Background(), f, 0, r, size)
			return err
		},
	}
	for name, write := range fill {
		t.Run(name, func(t *testing.T) {
			in, err := NewInstall(dir, "nb-1-big-TOC.txt")
			if err != nil {
				t.Fatal(err)
			}
			f, err := in.Create("nb-1-big-Data.db")
			if err != nil {
				t.Fatal(err)
			}
			err = write(f)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("err = %v, want ENOSPC", err)
			}
			if !strings.Contains(err.Error(), "nb-1-big-Data.db") {
				t.Fatalf("error %q does not name the file", err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "nb-1-big-Data.db")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a final-named file exists after the failure: %v", err)
			}
			if err := in.Abort(); err != nil {
				t.Fatal(err)
			}
			if got := listDir(t, dir); !slices.Equal(got, []string{"lost+found"}) {
				t.Fatalf("directory holds %v after Abort", got)
			}
		})
	}
}

func TestFreeBytes(t *testing.T) {
	dir := fsxtest.MountSmallFS(t, "8M")
	before, err := FreeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before <= 0 || before > 8<<20 {
		t.Fatalf("FreeBytes of an 8 MiB file system = %d", before)
	}
	f := writeFile(t, dir, "f", randomBytes(31, 2<<20))
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	after, err := FreeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if used := before - after; used < 2<<20 || used > 3<<20 {
		t.Fatalf("writing 2 MiB used %d bytes", used)
	}
	if _, err := FreeBytes(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("FreeBytes(missing) = %v", err)
	}
}
