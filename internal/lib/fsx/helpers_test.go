package fsx

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// randomBytes returns n deterministic pseudo-random bytes.
func randomBytes(seed byte, n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// writeFile creates dir/name holding data and returns it open for reading and writing.
func writeFile(t testing.TB, dir, name string, data []byte) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return f
}

// contents reads all of f without moving its position.
func contents(t testing.TB, f *os.File) []byte {
	t.Helper()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

// position returns f's file offset.
func position(t testing.TB, f *os.File) int64 {
	t.Helper()
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// overlay returns base with src copied over it at off, extended as needed.
func overlay(base []byte, off int, src []byte) []byte {
	out := bytes.Clone(base)
	if need := off + len(src); need > len(out) {
		out = append(out, make([]byte, need-len(out))...)
	}
	copy(out[off:], src)
	return out
}

// assertBytes fails with the first differing offset.
func assertBytes(t testing.TB, got, want []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("first difference at byte %d: %#x, want %#x", i, got[i], want[i])
		}
	}
}
