package fsx

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// WriteFileAtomic replaces the file whole, with the permissions asked for, and leaves no
// temporary behind.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	for _, body := range []string{"first", "second, longer than the first"} {
		if err := WriteFileAtomic(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != body {
			t.Fatalf("read %q, %v; want %q", b, err, body)
		}
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries, want only the file", len(ents))
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "x"), nil, 0o644); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

// CopyNew copies every byte to a new file and never overwrites one that exists.
func TestCopyNewCopiesAndNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	want := bytes.Repeat([]byte("sluice"), 100_000)
	if err := os.WriteFile(src, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CopyNew(src, dst); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("copy differs (%d bytes, %v)", len(got), err)
	}
	if err := CopyNew(src, dst); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second copy onto an existing file: %v", err)
	}
}
