//go:build linux

package testcluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// leftoverNetns lists the namespaces and bridges this process created that still exist.
func leftoverNetns(t *testing.T) []string {
	t.Helper()
	var out []string
	b, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, fmt.Sprintf("%s%d-", netnsPrefix, os.Getpid())) {
			out = append(out, line)
		}
	}
	links, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.HasPrefix(l.Name, fmt.Sprintf("slb%dx", os.Getpid())) {
			out = append(out, l.Name)
		}
	}
	return out
}

// A cluster that fails to start in namespaces (here: a node that cannot run) still removes
// its namespaces and bridge when closed.
func TestNetnsCleanedUpAfterAFailedStart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	c, err := Start(t.Context(), Options{Nodes: 2, Net: NetNamespaces, Dir: t.TempDir(),
		Exec: func(args []string) *exec.Cmd { return exec.Command("/bin/false") }})
	if err == nil {
		t.Fatal("a cluster of /bin/false nodes started")
	}
	if c == nil {
		t.Fatalf("no cluster to close: %v", err)
	}
	if left := leftoverNetns(t); len(left) == 0 {
		t.Fatal("no namespace was created before the failure")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leftoverNetns(t); len(left) > 0 {
		t.Fatalf("left behind after Close: %v", left)
	}
}
