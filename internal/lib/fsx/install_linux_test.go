package fsx

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluicedb/sluice/internal/lib/fsx/fsxtest"
)

// XFS makes renames durable in the order they were made, so CommitAll there renames the
// markers right after the other files, without a directory sync between; other file systems
// keep the sync. Either way the set is published whole.
func TestRenamesDurableInOrderOnlyOnXFS(t *testing.T) {
	xfs := fsxtest.MountXFS(t, "300M")
	if !renamesDurableInOrder(xfs) {
		t.Fatalf("%s: XFS not recognised", xfs)
	}
	tmp := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(tmp, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.XFS_SUPER_MAGIC && renamesDurableInOrder(tmp) {
		t.Fatalf("%s (file system magic %#x) taken for one whose renames are durable in order", tmp, st.Type)
	}
	for _, dir := range []string{xfs, tmp} {
		in, err := NewInstall(dir, marker)
		if err != nil {
			t.Fatal(err)
		}
		fill(t, in)
		if err := CommitAll(in); err != nil {
			t.Fatal(err)
		}
		if got, want := listDir(t, dir), slices.Sorted(slices.Values(components)); !slices.Equal(got, want) {
			t.Fatalf("%s holds %v, want %v", dir, got, want)
		}
	}
}

// xfsGoingDown is XFS_IOC_GOINGDOWN, _IOR('X', 125, __u32); with xfsNoLogFlush the file
// system stops at once, dropping what its log has not written: the state a power cut leaves.
const (
	xfsGoingDown  = 0x8004587d
	xfsNoLogFlush = 2
)

// A power cut during CommitAll on XFS, simulated by shutting the file system down without
// flushing its log before each rename in turn (and once after the commit), then remounting it
// (log recovery) and running CleanLeftovers: each of the two installs is there whole or not
// at all with the bytes written, nothing temporary is left, and a commit that returned
// survives. This is the state
// the device kept, not the process's: it checks that the one sync CommitAll keeps before the
// markers on XFS (renamesDurableInOrder) is enough.
func TestCommitAllPowerCutOnXFS(t *testing.T) {
	const installs = 2
	renames := installs * len(components)
	for cut := 0; cut <= renames; cut++ {
		t.Run(fmt.Sprint("cut before rename ", cut), func(t *testing.T) {
			mnt := fsxtest.MountXFS(t, "300M")
			dir := filepath.Join(mnt, "d")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			var ins []*Install
			for i := 0; i < installs; i++ {
				in, err := NewInstall(dir, fmt.Sprintf("nb-%d-big-TOC.txt", i+1))
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range components {
					f, err := in.Create(strings.Replace(name, "nb-1-", fmt.Sprintf("nb-%d-", i+1), 1))
					if err == nil {
						_, err = f.WriteString(strings.Repeat(name, 1000))
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				ins = append(ins, in)
			}
			goingDown := func() {
				f, err := os.Open(mnt)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				flags := uint32(xfsNoLogFlush)
				if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), xfsGoingDown, uintptr(unsafe.Pointer(&flags))); errno != 0 {
					t.Fatalf("XFS_IOC_GOINGDOWN: %v", errno)
				}
			}
			n := 0
			cutErr := errors.New("power cut")
			for _, in := range ins {
				in.beforeRename = func(string) error {
					if n == cut {
						goingDown()
						return cutErr
					}
					n++
					return nil
				}
			}
			err := CommitAll(ins...)
			if cut < renames && !errors.Is(err, cutErr) {
				t.Fatalf("CommitAll: %v, want the cut", err)
			}
			if cut == renames {
				if err != nil {
					t.Fatal(err)
				}
				goingDown()
			}
			img := filepath.Join(filepath.Dir(mnt), "fs.img")
			for _, args := range [][]string{{"umount", mnt}, {"mount", "-o", "loop", img, mnt}} {
				if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%v: %v\n%s", args, err, out)
				}
			}
			if _, err := CleanLeftovers(dir); err != nil {
				t.Fatal(err)
			}
			got := listDir(t, dir)
			for i := 0; i < installs; i++ {
				prefix := fmt.Sprintf("nb-%d-", i+1)
				held := 0
				for _, name := range got {
					if strings.HasPrefix(name, prefix) {
						held++
					}
				}
				if held != 0 && held != len(components) {
					t.Fatalf("install %d left %d of its %d files after the cut: %v", i+1, held, len(components), got)
				}
				if cut == renames && held == 0 {
					t.Fatalf("install %d lost after a commit that returned: %v", i+1, got)
				}
			}
			for _, name := range got {
				if strings.HasPrefix(name, TempPrefix) {
					t.Fatalf("%s left: %v", name, got)
				}
				// Every file that is there holds what was written: data before names.
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				orig := "nb-1-" + name[len("nb-1-"):]
				if string(b) != strings.Repeat(orig, 1000) {
					t.Fatalf("%s holds %d bytes, not what was written", name, len(b))
				}
			}
		})
	}
}

// The leftovers of an install whose owner is gone (its lock file no longer held: the kernel
// released it when the process died) are removed by any CleanLeftovers, at any time; the files
// of an install in flight, whoever runs it, stay.
func TestCleanLeftoversSparesInstallsInFlight(t *testing.T) {
	dir := t.TempDir()
	live, err := NewInstall(dir, "TOC.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	if _, err := live.Create("Data.db"); err != nil {
		t.Fatal(err)
	}
	// A dead install: its temporary and its lock file, which nobody holds.
	dead := []string{TempPrefix + "0123456789abcdef-Data.db", TempPrefix + "0123456789abcdef" + lockSuffix}
	for _, n := range dead {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := CleanLeftovers(dir)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(removed)
	sort.Strings(dead)
	if strings.Join(removed, " ") != strings.Join(dead, " ") {
		t.Errorf("removed %v, want exactly the dead install's %v", removed, dead)
	}
	if _, err := os.Stat(filepath.Join(dir, TempPrefix+live.id+"-Data.db")); err != nil {
		t.Errorf("the live install's temporary is gone: %v", err)
	}
	if _, err := live.Create("TOC.txt"); err != nil {
		t.Fatal(err)
	}
	if err := live.Commit(); err != nil {
		t.Fatalf("the live install cannot commit after the cleaner ran: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			t.Errorf("%s left after the commit", e.Name())
		}
	}
}

// Installs start while another fetch into the same directory cleans it, over and over: no
// install loses its lock file to the cleaner (an owner lock is named only once locked).
func TestCleanLeftoversRacingInstallsThatStart(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	cleaned := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				cleaned <- nil
				return
			default:
			}
			if _, err := CleanLeftovers(dir); err != nil {
				cleaned <- err
				return
			}
		}
	}()
	for i := 0; i < 300; i++ {
		in, err := NewInstall(dir, "TOC.txt")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.Create("TOC.txt"); err != nil {
			close(stop)
			t.Fatalf("install %d lost to the cleaner: %v", i, err)
		}
		in.Abort()
	}
	close(stop)
	if err := <-cleaned; err != nil {
		t.Fatal(err)
	}
}
