package fsx

import (
	"errors"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopyRangeForcedMethods copies odd ranges at odd offsets on the temp directory's file
// system (ext4 here: no reflink) with each mechanism forced first, and checks the exact bytes,
// the untouched bytes around the range, the reported mechanism and the file positions.
func TestCopyRangeForcedMethods(t *testing.T) {
	srcData := randomBytes(1, 3<<20+12345)
	dstBase := randomBytes(2, 1<<20)
	ranges := []struct {
		name           string
		srcOff, dstOff int64
		n              int64
	}{
		{"one byte", 4097, 3, 1},
		{"odd offsets and length", 12345, 777, 999_999},
		{"past the destination's end", 3, 1<<20 - 5, 2<<20 + 17},
		{"larger than the copy buffer", 1, 1<<20 + 9, 3 << 20},
		{"to the source's end", 4096, 0, int64(len(srcData)) - 4096},
		{"zero bytes", 5, 5, 0},
	}
	methods := []Method{MethodCopyFileRange, MethodSendfile, MethodBuffered}
	for _, first := range methods {
		for _, r := range ranges {
			t.Run(first.String()+"/"+r.name, func(t *testing.T) {
				dir := t.TempDir()
				src := writeFile(t, dir, "src", srcData)
				dst := writeFile(t, dir, "dst", dstBase)
				if _, err := src.Seek(11, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				if _, err := dst.Seek(13, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				got, err := copyRange(dst, r.dstOff, src, r.srcOff, r.n, first)
				if err != nil {
					t.Fatal(err)
				}
				want := first
				if r.n == 0 {
					want = MethodNone
				}
				if got != want {
					t.Fatalf("method %v, want %v", got, want)
				}
				assertBytes(t, contents(t, dst), overlay(dstBase, int(r.dstOff), srcData[r.srcOff:r.srcOff+r.n]))
				if p := position(t, src); p != 11 {
					t.Fatalf("source position moved to %d", p)
				}
				// Only sendfile writes at, and moves, the destination position.
				wantPos := int64(13)
				if got == MethodSendfile {
					wantPos = r.dstOff + r.n
				}
				if p := position(t, dst); p != wantPos {
					t.Fatalf("destination position %d, want %d", p, wantPos)
				}
			})
		}
	}
}

// TestCopyRangeShortSource runs the whole chain into a source that ends early: copy_file_range
// and sendfile return 0 (each falls back), the buffered copy hits EOF, and the error says so
// after the available bytes were written.
func TestCopyRangeShortSource(t *testing.T) {
	dir := t.TempDir()
	data := randomBytes(3, 10000)
	src := writeFile(t, dir, "src", data)
	dst := writeFile(t, dir, "dst", nil)
	m, err := CopyRange(dst, 100, src, 5000, 6000)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	if m != MethodBuffered {
		t.Fatalf("failing method %v, want buffered (the end of the chain)", m)
	}
	var re *RangeError
	if !errors.As(err, &re) || re.Src != src.Name() || re.Dst != dst.Name() || re.N != 6000 {
		t.Fatalf("error %v does not name the files and range", err)
	}
	assertBytes(t, contents(t, dst), overlay(nil, 100, data[5000:]))
}

// TestCopyRangeAcrossFileSystems copies from tmpfs to the temp directory: copy_file_range
// refuses the pair (EXDEV) and sendfile takes over without being forced.
func TestCopyRangeAcrossFileSystems(t *testing.T) {
	shm := t.TempDir()
	var a, b unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &a); err != nil || a.Type != unix.TMPFS_MAGIC {
		t.Skip("no tmpfs at /dev/shm")
	}
	if err := unix.Statfs(shm, &b); err != nil || b.Type == unix.TMPFS_MAGIC {
		t.Skip("the temp directory is itself on tmpfs")
	}
	srcDir, err := os.MkdirTemp("/dev/shm", "fsx-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(srcDir) })
	data := randomBytes(4, 1<<20+3)
	src := writeFile(t, srcDir, "src", data)
	dst := writeFile(t, shm, "dst", nil)
	m, err := CopyRange(dst, 7, src, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if m != MethodSendfile {
		t.Fatalf("method %v, want sendfile", m)
	}
	assertBytes(t, contents(t, dst), overlay(nil, 7, data[3:3+1<<20]))
}

func TestCopyRangeInvalid(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "src", []byte("abc"))
	dst := writeFile(t, dir, "dst", nil)
	for _, r := range [][3]int64{{-1, 0, 1}, {0, -1, 1}, {0, 0, -1}, {1 << 62, 0, 1 << 62}} {
		if _, err := CopyRange(dst, r[0], src, r[1], r[2]); !errors.Is(err, ErrInvalidRange) {
			t.Errorf("CopyRange(%v) err = %v, want ErrInvalidRange", r, err)
		}
		if err := CloneRange(dst, r[0], src, r[1], r[2]); !errors.Is(err, ErrInvalidRange) {
			t.Errorf("CloneRange(%v) err = %v, want ErrInvalidRange", r, err)
		}
	}
}

// TestCloneRangeUnsupported: ext4 has no reflink, and the error says so in both vocabularies.
func TestCloneRangeUnsupported(t *testing.T) {
	dir := t.TempDir()
	if fsType(t, dir) != unix.EXT4_SUPER_MAGIC {
		t.Skip("the temp directory is not on ext4")
	}
	src := writeFile(t, dir, "src", randomBytes(5, 8192))
	dst := writeFile(t, dir, "dst", nil)
	err := CloneRange(dst, 0, src, 0, 8192)
	if !errors.Is(err, ErrCloneUnsupported) || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("err = %v, want ErrCloneUnsupported wrapping EOPNOTSUPP", err)
	}
	if err := CloneRange(dst, 0, src, 0, 0); err != nil {
		t.Fatalf("zero-length clone: %v", err)
	}
}

func fsType(t testing.TB, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Type
}
