//go:build linux

package testcluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// inNetns runs f with the calling thread in namespace ns: sockets f opens belong to it.
func inNetns(t *testing.T, ns string, f func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	target, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			panic(err) // a thread left in another namespace must not run anything else
		}
	}()
	f()
}

// The loss fault under --net netns is real packet loss: nft drops about the fraction of the
// datagrams one node's namespace receives from another, and none once it is set to 0.
func TestNetnsLossDropsDatagramsBetweenNodes(t *testing.T) {
	if os.Geteuid() != 0 || !nftAvailable() {
		t.Skip("needs root and nft(8)")
	}
	n, err := newNetns()
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	ipA, err := n.addNode("a")
	if err != nil {
		t.Fatal(err)
	}
	ipB, err := n.addNode("b")
	if err != nil {
		t.Fatal(err)
	}
	var rx, tx net.PacketConn
	inNetns(t, n.nodes["b"].ns, func() { rx, err = net.ListenPacket("udp", ipB+":0") })
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	inNetns(t, n.nodes["a"].ns, func() { tx, err = net.ListenPacket("udp", ipA+":0") })
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	received := func(sent int) int {
		got := 0
		buf := make([]byte, 16)
		// Batches small enough for the receive buffer; a batch ends when nothing more
		// arrives for 100ms.
		for done := 0; done < sent; done += 50 {
			for i := 0; i < 50; i++ {
				if _, err := tx.WriteTo([]byte("x"), rx.LocalAddr()); err != nil {
					t.Fatal(err)
				}
			}
			for {
				rx.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				if _, _, err := rx.ReadFrom(buf); err != nil {
					break
				}
				got++
			}
		}
		return got
	}
	if err := n.setLoss("b", 0.3); err != nil {
		t.Fatal(err)
	}
	if got := received(400); got < 200 || got > 340 { // 280 expected
		t.Fatalf("%d of 400 datagrams arrived with 30%% loss", got)
	}
	if err := n.setLoss("b", 0); err != nil {
		t.Fatal(err)
	}
	if got := received(100); got != 100 {
		t.Fatalf("%d of 100 datagrams arrived with the loss removed", got)
	}
}
