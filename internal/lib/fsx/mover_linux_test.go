package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx/fsxtest"
	"golang.org/x/sys/unix"
)

// countClones makes m count its clone attempts.
func countClones(m *Mover) *atomic.Int64 {
	var n atomic.Int64
	m.clone = func(dst *os.File, dstOff int64, src *os.File, srcOff, length int64) error {
		n.Add(1)
		return CloneRange(dst, dstOff, src, srcOff, length)
	}
	return &n
}

func newMover(t testing.TB, cfg Config) *Mover {
	t.Helper()
	m, err := NewMover(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMoverRemembersUnsupported: on ext4 the first Move tries one clone, gets EOPNOTSUPP, marks
// the directory and copies; later Moves into that directory copy without trying.
func TestMoverRemembersUnsupported(t *testing.T) {
	dir := t.TempDir()
	if fsType(t, dir) != unix.EXT4_SUPER_MAGIC {
		t.Skip("the temp directory is not on ext4")
	}
	m := newMover(t, Config{})
	attempts := countClones(m)
	data := randomBytes(6, 256<<10)
	src := writeFile(t, dir, "src", data)
	if got := m.Reflink(dir); got != CapabilityUnknown {
		t.Fatalf("capability before any move: %v", got)
	}
	for i := range 3 {
		dst := writeFile(t, dir, "dst"+string(rune('0'+i)), nil)
		st, err := m.Move(dst, 4096, src, 8192, 128<<10, true)
		if err != nil {
			t.Fatal(err)
		}
		if st.Cloned != 0 || st.Copied != 128<<10 || st.Method == MethodReflink || st.Method != st.CopyMethod {
			t.Fatalf("move %d stats %+v", i, st)
		}
		assertBytes(t, contents(t, dst), overlay(nil, 4096, data[8192:8192+128<<10]))
		if n := attempts.Load(); n != 1 {
			t.Fatalf("after move %d: %d clone attempts, want exactly 1", i, n)
		}
		if got := m.Reflink(dir); got != CapabilityUnsupported {
			t.Fatalf("capability after move %d: %v", i, got)
		}
	}
	// Another directory is still unknown, and allowReflink=false never tries.
	other := t.TempDir()
	dst := writeFile(t, other, "dst", nil)
	if _, err := m.Move(dst, 0, src, 0, 4096, false); err != nil {
		t.Fatal(err)
	}
	if n := attempts.Load(); n != 1 || m.Reflink(other) != CapabilityUnknown {
		t.Fatalf("allowReflink=false tried a clone (%d attempts) or learnt %v", n, m.Reflink(other))
	}
}

// TestMoverAcrossFileSystems: a pair on two file systems is copied without a clone attempt and
// without marking the destination directory.
func TestMoverAcrossFileSystems(t *testing.T) {
	dir := t.TempDir()
	srcDir, err := os.MkdirTemp("/dev/shm", "fsx-test-")
	if err != nil {
		t.Skip("no /dev/shm")
	}
	t.Cleanup(func() { os.RemoveAll(srcDir) })
	m := newMover(t, Config{})
	attempts := countClones(m)
	data := randomBytes(7, 64<<10)
	src := writeFile(t, srcDir, "src", data)
	dst := writeFile(t, dir, "dst", nil)
	st, err := m.Move(dst, 0, src, 0, int64(len(data)), true)
	if err != nil {
		t.Fatal(err)
	}
	if attempts.Load() != 0 || m.Reflink(dir) != CapabilityUnknown || st.Copied != int64(len(data)) {
		t.Fatalf("attempts %d, capability %v, stats %+v", attempts.Load(), m.Reflink(dir), st)
	}
	assertBytes(t, contents(t, dst), data)
}

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []Config{{Alignment: -1}, {Alignment: 3000}, {MinClone: -1}} {
		if _, err := NewMover(cfg); err == nil {
			t.Errorf("NewMover(%+v) accepted", cfg)
		}
	}
	if _, err := NewMover(Config{Alignment: 65536, MinClone: 1 << 20}); err != nil {
		t.Fatal(err)
	}
}

// TestCloneRangeXFS clones on an XFS with reflink and checks that the clone shares extents:
// FIEMAP reports the destination's blocks as shared, and free space did not shrink by the
// cloned size.
func TestCloneRangeXFS(t *testing.T) {
	dir := fsxtest.MountXFS(t, "300M")
	const size = 16 << 20
	data := randomBytes(8, size)
	src := writeFile(t, dir, "src", data)
	dst := writeFile(t, dir, "dst", nil)
	if err := src.Sync(); err != nil {
		t.Fatal(err)
	}
	before, err := FreeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := CloneRange(dst, 0, src, 0, size); err != nil {
		t.Fatal(err)
	}
	if err := dst.Sync(); err != nil {
		t.Fatal(err)
	}
	after, err := FreeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if used := before - after; used > size/4 {
		t.Errorf("cloning %d bytes used %d bytes of free space", size, used)
	}
	if shared := fsxtest.SharedBytes(t, dst.Name()); shared != size {
		t.Errorf("%d bytes shared, want %d", shared, size)
	}
	assertBytes(t, contents(t, dst), data)

	// Unaligned offsets are refused, whole.
	err = CloneRange(dst, 1, src, 1, 8192)
	if !errors.Is(err, ErrCloneUnsupported) || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("unaligned clone: err = %v, want ErrCloneUnsupported wrapping EINVAL", err)
	}
	assertBytes(t, contents(t, dst), data)
}

// TestMoverXFS moves ranges whose head and tail are unaligned, with congruent and with
// non-congruent offsets, at and before the source's EOF, and checks the bytes, the split
// between cloned and copied bytes, and the shared extents.
func TestMoverXFS(t *testing.T) {
	dir := fsxtest.MountXFS(t, "300M")
	const size = 4<<20 + 1234
	data := randomBytes(9, size)
	src := writeFile(t, dir, "src", data)
	m := newMover(t, Config{})
	attempts := countClones(m)
	const K = 4096
	tests := []struct {
		name           string
		srcOff, dstOff int64
		n              int64
		cloned         int64
	}{
		{"aligned", 8 * K, 0, 64 * K, 64 * K},
		{"congruent, unaligned head and tail", 8*K + 100, 100, 64*K + 50, 63 * K},
		{"congruent, different blocks", 3*K + 7, 11*K + 7, 100 * K, 99 * K},
		{"not congruent", 8*K + 100, 200, 64 * K, 0},
		{"shorter than a block after the head", 100, 100, K + 50, 0},
		{"to the source's EOF, partial last block cloned", size - 100*K - 1234 - 5, 3*K - 5, 100*K + 1234 + 5, 100*K + 1234},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := writeFile(t, dir, "dst"+string(rune('a'+i)), nil)
			st, err := m.Move(dst, tt.dstOff, src, tt.srcOff, tt.n, true)
			if err != nil {
				t.Fatal(err)
			}
			if st.Cloned != tt.cloned || st.Copied != tt.n-tt.cloned {
				t.Fatalf("stats %+v, want %d cloned and %d copied", st, tt.cloned, tt.n-tt.cloned)
			}
			if (st.Cloned > 0) != (st.Method == MethodReflink) {
				t.Fatalf("stats %+v: Method disagrees with Cloned", st)
			}
			if st.Copied > 0 && st.CopyMethod == MethodNone {
				t.Fatalf("stats %+v: no copy method for copied bytes", st)
			}
			assertBytes(t, contents(t, dst), overlay(nil, int(tt.dstOff), data[tt.srcOff:tt.srcOff+tt.n]))
			// Edges are copied by copy_file_range, which XFS may itself turn into a clone when
			// a whole block is involved, so shared is at least the cloned count.
			if shared := fsxtest.SharedBytes(t, dst.Name()); shared < roundDown(tt.cloned, K) {
				t.Fatalf("%d bytes shared, want at least %d", shared, roundDown(tt.cloned, K))
			}
		})
	}
	if m.Reflink(dir) != CapabilitySupported {
		t.Fatalf("capability %v after clones", m.Reflink(dir))
	}
	if attempts.Load() == 0 {
		t.Fatal("no clone attempted")
	}
}

// TestMoverCallerAlignment: with a 64 KiB alignment the middle is 64 KiB-aligned even though
// XFS would clone 4 KiB blocks.
func TestMoverCallerAlignment(t *testing.T) {
	dir := fsxtest.MountXFS(t, "300M")
	data := randomBytes(10, 1<<20)
	src := writeFile(t, dir, "src", data)
	dst := writeFile(t, dir, "dst", nil)
	m := newMover(t, Config{Alignment: 64 << 10})
	st, err := m.Move(dst, 4096, src, 4096, 300<<10, true)
	if err != nil {
		t.Fatal(err)
	}
	// head 60 KiB, middle 192 KiB, tail 48 KiB.
	if st.Cloned != 192<<10 || st.Copied != 108<<10 {
		t.Fatalf("stats %+v", st)
	}
	assertBytes(t, contents(t, dst), overlay(nil, 4096, data[4096:4096+300<<10]))
}

// TestMoverMinClone: a middle below MinClone is copied.
func TestMoverMinClone(t *testing.T) {
	dir := fsxtest.MountXFS(t, "300M")
	data := randomBytes(11, 1<<20)
	src := writeFile(t, dir, "src", data)
	dst := writeFile(t, dir, "dst", nil)
	m := newMover(t, Config{MinClone: 1 << 20})
	attempts := countClones(m)
	st, err := m.Move(dst, 0, src, 0, 512<<10, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Cloned != 0 || attempts.Load() != 0 {
		t.Fatalf("stats %+v, %d attempts", st, attempts.Load())
	}
	assertBytes(t, contents(t, dst), data[:512<<10])
}

func roundDown(v, a int64) int64 { return v - v%a }

// TestMoverXFSEdgeCases: a source-EOF partial block cloned over a destination that ends exactly
// where the range does, and an alignment smaller than the file system block, which XFS refuses
// with EINVAL: the Mover copies instead and remembers the directory as unsupported.
func TestMoverXFSEdgeCases(t *testing.T) {
	dir := fsxtest.MountXFS(t, "300M")
	const K = 4096
	data := randomBytes(12, 10*K+123)
	src := writeFile(t, dir, "src", data)

	m := newMover(t, Config{})
	base := randomBytes(13, 2*K+10*K+123)
	dst := writeFile(t, dir, "dst-eof", base)
	st, err := m.Move(dst, 2*K, src, 0, int64(len(data)), true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Cloned != int64(len(data)) {
		t.Fatalf("stats %+v: want the whole range cloned", st)
	}
	assertBytes(t, contents(t, dst), overlay(base, 2*K, data))

	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	small := newMover(t, Config{Alignment: 512})
	attempts := countClones(small)
	for i := range 2 {
		dst := writeFile(t, sub, "dst-small-align"+string(rune('0'+i)), nil)
		st, err := small.Move(dst, 512, src, 1024, 8*K, true)
		if err != nil {
			t.Fatal(err)
		}
		if st.Cloned != 0 || st.Copied != 8*K {
			t.Fatalf("stats %+v", st)
		}
		assertBytes(t, contents(t, dst), overlay(nil, 512, data[1024:1024+8*K]))
	}
	if attempts.Load() != 1 || small.Reflink(sub) != CapabilityUnsupported {
		t.Fatalf("%d attempts, capability %v; want 1 and unsupported", attempts.Load(), small.Reflink(sub))
	}
}
