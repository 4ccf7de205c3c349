package fsx

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

const procIOSample = `rchar: 6976
wchar: 12
syscr: 10
syscw: 1
read_bytes: 4096
write_bytes: 8192
cancelled_write_bytes: 0
`

func TestParseProcIO(t *testing.T) {
	s, err := parseProcIO([]byte(procIOSample))
	if err != nil {
		t.Fatal(err)
	}
	want := IOStats{RChar: 6976, WChar: 12, SyscR: 10, SyscW: 1, ReadBytes: 4096, WriteBytes: 8192}
	if s != want {
		t.Fatalf("parsed %+v, want %+v", s, want)
	}
	if _, err := parseProcIO([]byte(procIOSample + "future_field: 3\n")); err != nil {
		t.Fatalf("an unknown field: %v", err)
	}
	for _, bad := range []string{
		"",
		"rchar: 1\n",
		procIOSample + "rchar: 1\n",
		procIOSample + "no colon\n",
		"rchar: -1\nwchar: 0\nsyscr: 0\nsyscw: 0\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n",
		"rchar: x\nwchar: 0\nsyscr: 0\nsyscw: 0\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n",
	} {
		if _, err := parseProcIO([]byte(bad)); err == nil {
			t.Errorf("parseProcIO(%q) accepted", bad)
		}
	}
}

func FuzzParseProcIO(f *testing.F) {
	f.Add([]byte(procIOSample))
	if b, err := os.ReadFile("/proc/self/io"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseProcIO(data)
		if err == nil && (s.RChar < 0 || s.WChar < 0 || s.ReadBytes < 0 || s.WriteBytes < 0) {
			t.Fatalf("negative counter accepted: %+v", s)
		}
	})
}

// TestProcIO: writing and fsyncing 1 MiB shows in wchar and write_bytes.
func TestProcIO(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/io is Linux's")
	}
	before, err := ProcIO()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "w"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	after, err := ProcIO()
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Sub(before); d.WChar < 1<<20 || d.WriteBytes < 1<<20 || d.SyscW < 1 {
		t.Fatalf("writing 1 MiB: %+v", d)
	}
}
