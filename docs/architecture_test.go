// Package docs holds the project's documents; its one test keeps ARCHITECTURE.md's package
// list true.
package docs

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/sluicedb/sluice/"

// listedPackages reads the package tables of ARCHITECTURE.md, top to bottom.
func listedPackages(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([a-z0-9/]+)` \\|")
	var out []string
	inPackages := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inPackages = line == "## Packages"
		}
		if m := row.FindStringSubmatch(line); inPackages && m != nil {
			out = append(out, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDependenciesPointDownTheList: every import between the module's packages (non-test files)
// goes from a package to one listed below it, and every package of the module is listed once.
func TestDependenciesPointDownTheList(t *testing.T) {
	listed := listedPackages(t)
	pos := map[string]int{}
	for i, p := range listed {
		if _, dup := pos[p]; dup {
			t.Errorf("ARCHITECTURE.md lists %s twice", p)
		}
		pos[p] = i
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if pkg == "docs" {
			continue
		}
		from, ok := pos[pkg]
		if !ok {
			t.Errorf("%s is not listed in ARCHITECTURE.md's package tables", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			to, ok := pos[dep]
			switch {
			case !ok:
				// reported when dep itself is visited
			case to <= from:
				t.Errorf("%s imports %s, which ARCHITECTURE.md lists above it", pkg, dep)
			}
		}
	}
}
