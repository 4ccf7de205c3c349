package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// components is a small sstable-shaped set with its TOC as the marker.
var components = []string{"nb-1-big-TOC.txt", "nb-1-big-Data.db", "nb-1-big-Index.db", "nb-1-big-Statistics.db"}

const marker = "nb-1-big-TOC.txt"

// fill creates every component in in, each holding its own name.
func fill(t testing.TB, in *Install) {
	t.Helper()
	for _, name := range components {
		f, err := in.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(name); err != nil {
			t.Fatal(err)
		}
	}
}

// listDir returns the sorted names in dir.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

func TestInstallCommit(t *testing.T) {
	dir := t.TempDir()
	in, err := NewInstall(dir, marker)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Abort()
	fill(t, in)
	for _, name := range listDir(t, dir) {
		if !strings.HasPrefix(name, TempPrefix) {
			t.Fatalf("%s visible before Commit", name)
		}
	}
	var renamed []string
	in.beforeRename = func(name string) error {
		renamed = append(renamed, name)
		return nil
	}
	if err := in.Commit(); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(components))
	if got := listDir(t, dir); !slices.Equal(got, want) {
		t.Fatalf("directory holds %v, want %v", got, want)
	}
	if renamed[len(renamed)-1] != marker {
		t.Fatalf("rename order %v: the marker is not last", renamed)
	}
	if !slices.Equal(renamed[:len(renamed)-1], components[1:]) {
		t.Fatalf("rename order %v: creation order not kept", renamed)
	}
	for _, name := range components {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != name {
			t.Fatalf("%s holds %q, %v", name, b, err)
		}
	}
	if err := in.Abort(); err != nil {
		t.Fatalf("Abort after Commit: %v", err)
	}
	if got := listDir(t, dir); len(got) != len(components) {
		t.Fatalf("Abort after Commit changed the directory: %v", got)
	}
	if _, err := in.Create("x"); !errors.Is(err, ErrInstallDone) {
		t.Fatalf("Create after Commit: %v", err)
	}
	if err := in.Commit(); !errors.Is(err, ErrInstallDone) {
		t.Fatalf("second Commit: %v", err)
	}
}

func TestInstallAbort(t *testing.T) {
	dir := t.TempDir()
	in, err := NewInstall(dir, marker)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, in)
	if err := in.Abort(); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Fatalf("Abort left %v", got)
	}
}

func TestInstallRejects(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "existing"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := NewInstall(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Abort()
	for _, name := range []string{"", ".", "..", "a/b", "a\nb", TempPrefix + "x", "a\x00"} {
		if _, err := in.Create(name); !errors.Is(err, ErrBadName) {
			t.Errorf("Create(%q) err = %v, want ErrBadName", name, err)
		}
	}
	if _, err := in.Create("existing"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create(existing) err = %v, want fs.ErrExist", err)
	}
	if _, err := in.Create("once"); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Create("once"); !errors.Is(err, ErrBadName) {
		t.Errorf("second Create(once) err = %v", err)
	}
	if _, err := NewInstall(dir, "a/b"); !errors.Is(err, ErrBadName) {
		t.Errorf("NewInstall with a bad marker: %v", err)
	}
	noMarker, err := NewInstall(dir, "TOC.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noMarker.Create("Data.db"); err != nil {
		t.Fatal(err)
	}
	if err := noMarker.Commit(); err == nil {
		t.Fatal("Commit without the marker succeeded")
	}
	// The install still in flight holds its temporary and its owner lock; the failed one left nothing.
	if got := listDir(t, dir); !slices.Equal(got, []string{TempPrefix + in.id + "-once", TempPrefix + in.id + lockSuffix, "existing"}) {
		t.Fatalf("directory holds %v", got)
	}
}

// TestInstallReplaceRefused: a final name that appears between Create and Commit is not
// replaced; Commit fails and rolls back what it had renamed.
func TestInstallReplaceRefused(t *testing.T) {
	dir := t.TempDir()
	in, err := NewInstall(dir, marker)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, in)
	intruder := filepath.Join(dir, "nb-1-big-Index.db")
	if err := os.WriteFile(intruder, []byte("someone else's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := in.Commit(); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Commit err = %v, want fs.ErrExist", err)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"nb-1-big-Index.db"}) {
		t.Fatalf("directory holds %v, want only the intruder", got)
	}
	if b, _ := os.ReadFile(intruder); string(b) != "someone else's" {
		t.Fatalf("intruder overwritten: %q", b)
	}
}

// TestInstallFailureBetweenRenames injects a failure before each rename in turn: Commit
// returns it and no final name, temporary or intent record remains.
func TestInstallFailureBetweenRenames(t *testing.T) {
	for fail := range components {
		t.Run(fmt.Sprint("before rename ", fail), func(t *testing.T) {
			dir := t.TempDir()
			in, err := NewInstall(dir, marker)
			if err != nil {
				t.Fatal(err)
			}
			fill(t, in)
			injected := errors.New("injected")
			calls := 0
			in.beforeRename = func(string) error {
				if calls == fail {
					return injected
				}
				calls++
				return nil
			}
			if err := in.Commit(); !errors.Is(err, injected) {
				t.Fatalf("Commit err = %v", err)
			}
			if got := listDir(t, dir); len(got) != 0 {
				t.Fatalf("rollback left %v", got)
			}
		})
	}
}

// The crash test re-runs this test binary as a child that dies (os.Exit, no deferred calls, no
// rollback) inside Commit, before rename number crashBefore.
const crashEnv = "FSX_TEST_CRASH_INSTALL"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashEnv); spec != "" {
		crashChild(spec)
	}
	os.Exit(m.Run())
}

func crashChild(spec string) {
	var dir string
	var crashBefore int
	if _, err := fmt.Sscanf(spec, "%d %s", &crashBefore, &dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	in, err := NewInstall(dir, marker)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, name := range components {
		f, err := in.Create(name)
		if err == nil {
			_, err = f.WriteString(name)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	renames := 0
	in.beforeRename = func(string) error {
		if renames == crashBefore {
			os.Exit(3)
		}
		renames++
		return nil
	}
	if err := in.Commit(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// TestInstallCrashLeftovers kills an installing process before each rename in turn (and lets
// one finish), then runs CleanLeftovers as start-up would: either the complete set remains or
// nothing does, and never a TempPrefix file. Files that were there before stay.
func TestInstallCrashLeftovers(t *testing.T) {
	for crashBefore := 0; crashBefore <= len(components); crashBefore++ {
		t.Run(fmt.Sprint("crash before rename ", crashBefore), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "nb-0-big-Data.db"), []byte("older"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %s", crashEnv, crashBefore, dir))
			out, err := cmd.CombinedOutput()
			wantCode := 3
			if crashBefore == len(components) {
				wantCode = 0 // no crash: Commit completes
			}
			if code := cmd.ProcessState.ExitCode(); code != wantCode {
				t.Fatalf("child exit %d (%v), want %d\n%s", code, err, wantCode, out)
			}
			if crashBefore > 0 && crashBefore < len(components) {
				finals := 0
				for _, name := range listDir(t, dir) {
					if slices.Contains(components, name) {
						finals++
					}
				}
				if finals != crashBefore {
					t.Fatalf("the crash left %d final names, want %d (a partial set)", finals, crashBefore)
				}
			}
			removed, err := CleanLeftovers(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := listDir(t, dir)
			want := []string{"nb-0-big-Data.db"}
			if crashBefore == len(components) {
				want = append(want, components...)
				slices.Sort(want)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after CleanLeftovers (removed %v) the directory holds %v, want %v", removed, got, want)
			}
			if again, err := CleanLeftovers(dir); err != nil || len(again) != 0 {
				t.Fatalf("second CleanLeftovers removed %v, %v", again, err)
			}
		})
	}
}

// TestCleanLeftoversAfterMarker: a crash after the marker rename but before the intent record
// was removed leaves a complete set, which CleanLeftovers keeps.
func TestCleanLeftoversAfterMarker(t *testing.T) {
	dir := t.TempDir()
	in, err := NewInstall(dir, marker)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, in)
	if err := in.Commit(); err != nil {
		t.Fatal(err)
	}
	order := []string{components[1], components[2], components[3], marker}
	record := intentHeader + "\n" + strings.Join(order, "\n") + "\n" + intentTrailer + "\n"
	if err := os.WriteFile(in.intentPath(), []byte(record), 0o644); err != nil {
		t.Fatal(err)
	}
	removed, err := CleanLeftovers(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{filepath.Base(in.intentPath())}) {
		t.Fatalf("removed %v", removed)
	}
	if got := listDir(t, dir); !slices.Equal(got, slices.Sorted(slices.Values(components))) {
		t.Fatalf("directory holds %v", got)
	}
}

// TestCleanLeftoversTornIntent: a record cut short was written before any rename, so nothing
// but TempPrefix files is removed, even if a listed final name exists (it is not ours).
func TestCleanLeftoversTornIntent(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"Data.db", TempPrefix + "abc-Data.db", TempPrefix + "abc-TOC.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	torn := intentHeader + "\nIndex.db\nData.db\n"
	if err := os.WriteFile(filepath.Join(dir, TempPrefix+"abc"+intentSuffix), []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CleanLeftovers(dir); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"Data.db"}) {
		t.Fatalf("directory holds %v", got)
	}
}

func TestParseIntent(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{intentHeader + "\na\nb\n" + intentTrailer + "\n", []string{"a", "b"}},
		{intentHeader + "\n" + intentTrailer + "\n", nil},
		{intentHeader + "\na\nb\n", nil},                        // torn: no trailer
		{intentHeader + "\na\n" + intentTrailer, nil},           // torn inside the trailer's newline
		{intentHeader + "\na\n" + intentTrailer + "\nb\n", nil}, // data after the trailer
		{"sluice-install 2\na\n" + intentTrailer + "\n", nil},   // unknown version
		{intentHeader + "\n../x\n" + intentTrailer + "\n", nil}, // not a base name
		{intentHeader + "\n" + TempPrefix + "x\n" + intentTrailer + "\n", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := parseIntent([]byte(tt.in)); !slices.Equal(got, tt.want) {
			t.Errorf("parseIntent(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzParseIntent(f *testing.F) {
	f.Add([]byte(intentHeader + "\nnb-1-big-Data.db\nnb-1-big-TOC.txt\n" + intentTrailer + "\n"))
	f.Add([]byte(intentHeader + "\na\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range parseIntent(data) {
			if checkName(name) != nil {
				t.Fatalf("accepted bad name %q", name)
			}
		}
	})
}

func TestIntentID(t *testing.T) {
	for name, want := range map[string]string{
		TempPrefix + "0123abcd" + intentSuffix: "0123abcd",
		TempPrefix + "0123abcd-Data.db":        "",
		TempPrefix + intentSuffix:              "",
		TempPrefix + "a-b" + intentSuffix:      "",
		"Data.db":                              "",
	} {
		got, ok := intentID(name)
		if got != want || ok != (want != "") {
			t.Errorf("intentID(%q) = %q, %v", name, got, ok)
		}
	}
}
