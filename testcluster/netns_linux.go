//go:build linux

package testcluster

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// netnsPrefix starts the name of every namespace the harness creates; the creating process's
// id follows, so that a later run can remove what a killed one left behind.
const netnsPrefix = "sltc-"

// netnsSeq numbers the clusters (and their bridges) this process creates.
var netnsSeq atomic.Int32

// netns is a cluster's network: a bridge in the root namespace holding the subnet's first
// address, and per node a namespace joined to the bridge by a veth pair. The harness reaches
// the nodes through the bridge; a node's host-side veth going down cuts it off from
// everything, gossip and streaming alike.
type netns struct {
	id     string // <pid>-<seq>
	bridge string
	prefix string // "10.a.b."
	mu     sync.Mutex
	nodes  map[string]*nsNode
	next   int
}

type nsNode struct {
	ns, veth, ip string
}

// run runs an ip(8) command, returning its error with its output.
func run(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// newNetns creates the bridge on a free 10.a.b.0/24 subnet, after removing the namespaces and
// bridges of harness processes that no longer run.
func newNetns() (*netns, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: --net netns puts every node in its own network namespace; run as root or use --net loopback", ErrNeedsRoot)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("--net netns needs ip(8) from iproute2: %w", err)
	}
	sweepNetns()
	seq := netnsSeq.Add(1)
	n := &netns{id: fmt.Sprintf("%d-%d", os.Getpid(), seq), nodes: map[string]*nsNode{}}
	n.bridge = fmt.Sprintf("slb%dx%d", os.Getpid(), seq)
	used := usedSubnets()
	for a := 200; a < 250 && n.prefix == ""; a++ {
		for b := 0; b < 256; b++ {
			p := fmt.Sprintf("10.%d.%d.", a, b)
			if !used[p] {
				n.prefix = p
				break
			}
		}
	}
	if n.prefix == "" {
		return nil, fmt.Errorf("netns: no free 10.x.y.0/24 subnet")
	}
	if err := run("link", "add", n.bridge, "type", "bridge"); err != nil {
		return nil, err
	}
	if err := run("addr", "add", n.prefix+"1/24", "dev", n.bridge); err != nil {
		n.close()
		return nil, err
	}
	if err := run("link", "set", n.bridge, "up"); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

// usedSubnets lists the "a.b.c." prefixes of the IPv4 addresses configured in this namespace.
func usedSubnets() map[string]bool {
	used := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if v4 := ipn.IP.To4(); v4 != nil {
				used[fmt.Sprintf("%d.%d.%d.", v4[0], v4[1], v4[2])] = true
			}
		}
	}
	return used
}

// sweepNetns removes the namespaces and bridges of harness processes that are gone (killed
// before they could clean up, or a detached cluster's `up` after `down` stopped its nodes). A
// namespace that still holds a process (a detached cluster's running node) is kept, and so is
// its bridge.
func sweepNetns() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	kept := map[string]bool{} // "<pid>-<seq>" of namespaces left in place
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, netnsPrefix)
		if !ok {
			continue
		}
		parts := strings.SplitN(rest, "-", 3)
		if len(parts) < 3 {
			continue
		}
		id := parts[0] + "-" + parts[1]
		pid, err := strconv.Atoi(parts[0])
		if err != nil || Alive(pid) {
			kept[id] = true
			continue
		}
		if pids, err := exec.Command("ip", "netns", "pids", name).Output(); err != nil || len(bytes.TrimSpace(pids)) > 0 {
			kept[id] = true
			continue
		}
		run("netns", "del", name)
	}
	links, err := net.Interfaces()
	if err != nil {
		return
	}
	for _, l := range links {
		rest, ok := strings.CutPrefix(l.Name, "slb")
		if !ok {
			continue
		}
		pidStr, seq, _ := strings.Cut(rest, "x")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || Alive(pid) || kept[pidStr+"-"+seq] {
			continue
		}
		run("link", "del", l.Name)
	}
}

// CleanNetworkNamespaces removes what sweepNetns removes: `testcluster down` calls it once
// the nodes of a detached --net netns cluster have stopped.
func CleanNetworkNamespaces() { sweepNetns() }

// addNode creates name's namespace with loopback up and an address on the bridge, and
// returns the address.
func (n *netns) addNode(name string) (string, error) {
	n.mu.Lock()
	n.next++
	i := n.next
	nd := &nsNode{ns: netnsPrefix + n.id + "-" + name, veth: fmt.Sprintf("slv%sv%d", strings.ReplaceAll(n.id, "-", "x"), i),
		ip: fmt.Sprintf("%s%d", n.prefix, i+1)}
	if len(nd.veth) > 15 { // IFNAMSIZ-1
		nd.veth = fmt.Sprintf("slv%dv%d", os.Getpid()%1_000_000, i)
	}
	n.nodes[name] = nd
	n.mu.Unlock()
	steps := [][]string{
		{"netns", "add", nd.ns},
		{"link", "add", nd.veth, "type", "veth", "peer", "name", "eth0", "netns", nd.ns},
		{"link", "set", nd.veth, "master", n.bridge, "up"},
		{"-n", nd.ns, "addr", "add", nd.ip + "/24", "dev", "eth0"},
		{"-n", nd.ns, "link", "set", "eth0", "up"},
		{"-n", nd.ns, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return "", fmt.Errorf("network namespace of %s: %w", name, err)
		}
	}
	return nd.ip, nil
}

// wrap runs cmd inside name's namespace (ip netns exec execs it, so the process's id stays
// the node's and a kill is a kill of the node).
func (n *netns) wrap(name string, cmd *exec.Cmd) *exec.Cmd {
	n.mu.Lock()
	nd := n.nodes[name]
	n.mu.Unlock()
	w := exec.Command("ip", append([]string{"netns", "exec", nd.ns, cmd.Path}, cmd.Args[1:]...)...)
	w.Env, w.Dir = cmd.Env, cmd.Dir
	return w
}

// setLink takes name's veth down (cut: no packet in or out, gossip and streams alike) or up.
func (n *netns) setLink(name string, up bool) error {
	n.mu.Lock()
	nd, ok := n.nodes[name]
	n.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s has no namespace", ErrUnknownNode, name)
	}
	state := "down"
	if up {
		state = "up"
	}
	return run("link", "set", nd.veth, state)
}

// nftAvailable reports whether nft(8) (nftables) is installed: datagram loss in the namespaces
// needs it.
func nftAvailable() bool {
	_, err := exec.LookPath("nft")
	return err == nil
}

// lossTable is the nft table holding a namespace's loss rule.
const lossTable = "sltc_loss"

// setLoss drops the fraction of UDP packets (QUIC streams, gossip probes) that reach name's
// namespace from another node, with nft's numgen random: real packet loss on the node's own
// network stack. The harness's own traffic (from the bridge's address) is spared.
func (n *netns) setLoss(name string, fraction float64) error {
	n.mu.Lock()
	nd, ok := n.nodes[name]
	n.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s has no namespace", ErrUnknownNode, name)
	}
	ppm := int64(fraction * 1e6)
	script := fmt.Sprintf("table inet %s {}\nflush table inet %s\n", lossTable, lossTable)
	if ppm > 0 {
		script += fmt.Sprintf("table inet %s {\n chain input {\n  type filter hook input priority 0; policy accept;\n"+
			"  iifname \"eth0\" meta l4proto udp ip saddr != %s numgen random mod 1000000 < %d drop\n }\n}\n",
			lossTable, n.hostIP(), ppm)
	}
	cmd := exec.Command("ip", "netns", "exec", nd.ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("datagram loss in %s's namespace: nft: %v: %s", name, err, bytes.TrimSpace(out))
	}
	return nil
}

// hostIP is the bridge's address: where proxies listen for nodes in namespaces.
func (n *netns) hostIP() string { return n.prefix + "1" }

// close deletes every namespace (their veth ends go with them) and the bridge.
func (n *netns) close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []string
	for _, nd := range n.nodes {
		if err := run("netns", "del", nd.ns); err != nil {
			errs = append(errs, err.Error())
		}
		run("link", "del", nd.veth) // normally gone with the namespace
	}
	n.nodes = map[string]*nsNode{}
	if err := run("link", "del", n.bridge); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("netns cleanup: %s", strings.Join(errs, "; "))
	}
	return nil
}
