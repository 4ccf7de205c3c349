package testcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/testkit/loopfs"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/stream"
)

// Operations a drill exercises, and the faults it can run them under.
const (
	FaultNone      = ""
	FaultKill      = "kill"      // kill -9 the receiving node mid-stream, restart it, resume
	FaultLoss      = "loss"      // 5% of datagrams dropped between every pair of nodes
	FaultPartition = "partition" // the data plane cut for 3s mid-stream, then healed
	FaultDiskFull  = "diskfull"  // the receiver's disk fills; space is freed and it retries
)

// Drills lists every drill `drill all` runs: the operations plain, then under faults.
func Drills() []string {
	return []string{
		"bootstrap", "decommission", "move", "cleanup", "repair",
		"bootstrap-multidc", "rebuild", "replace", "repair-overlapping",
		"bootstrap-kill", "decommission-kill", "cleanup-kill",
		"bootstrap-loss", "move-loss",
		"bootstrap-partition", "decommission-partition",
		"bootstrap-diskfull",
	}
}

// DrillOptions shape a drill's cluster. Zero values take Options' defaults.
type DrillOptions struct {
	Nodes       int   // default RF+1 (4)
	RF          int   // default 3
	DataPerNode int64 // default 4 MiB
	NumTokens   int   // default 16 (move uses 1)
	DCs, Racks  int   // default 1 and 1 (bootstrap-multidc: 2 DCs; rebuild: a second DC)
	SSTables    int   // flushes per node, default 4
	Net         string
	Processes   bool
	// Dir is where each drill's cluster lives (Dir/NAME); required.
	Dir  string
	Exec func(args []string) *exec.Cmd
	Logf func(format string, args ...any)
}

// DrillResult is one drill's outcome, the object `drill --json` prints. OK needs the
// invariant (Check) and every bound in BoundsFailed to hold.
type DrillResult struct {
	Name              string `json:"name"`
	OK                bool   `json:"ok"`
	PartitionsChecked int    `json:"partitions_checked"`
	Lost              int    `json:"lost"`
	Misplaced         int    `json:"misplaced"` // misplaced, duplicated or unknown partitions
	Diverged          int    `json:"diverged"`  // replicas whose reconciled content is not the reference's
	BytesStreamed     int64  `json:"bytes_streamed"`
	// BytesIdeal is the on-disk bytes of every partition some replica had to receive (it is
	// a replica after the operation and did not hold the partition's full content before),
	// in all the sstables an up-to-date replica held it in: what a perfect sstable-level
	// operation streams.
	BytesIdeal int64 `json:"bytes_ideal"`
	// DeadBytes is what shipping whole compressed chunks adds: the parts of the chunks at the
	// edges of each streamed run of partitions that hold partitions outside the streamed
	// ranges (the "dead" of sluice sstable split), from the sources' sstables as they were.
	DeadBytes int64 `json:"dead_bytes"`
	// ShadowedBytes is the part of BytesIdeal that a compacted copy would not hold:
	// overwritten rows and rows under newer deletions, which sstable-level streaming moves
	// along (no compaction on the way).
	ShadowedBytes   int64                    `json:"shadowed_bytes"`
	SSTablesPerNode map[string]SSTableCounts `json:"sstables_per_node"`
	// BoundsFailed says which operator expectation failed: cleanup raised a node's sstable
	// count; a node ended with more than nodes x S sstables; more than 1.1 x (bytes_ideal +
	// dead_bytes) streamed.
	BoundsFailed    []string `json:"bounds_failed,omitempty"`
	DurationSeconds float64  `json:"duration_seconds"`
	Fault           string   `json:"fault"`
	Net             string   `json:"net"`
	Retries         int      `json:"retries"`
	// LossBy says how the loss fault dropped datagrams: "nft" (packet loss in every node's
	// network namespace, --net netns) or "proxy" (UDP proxies in front of the stream ports).
	LossBy  string       `json:"loss_by,omitempty"`
	Error   string       `json:"error,omitempty"`
	Skipped string       `json:"skipped,omitempty"`
	Check   *CheckReport `json:"check,omitempty"`
}

// SSTableCounts is a node's sstables of the table before and after the drill's operation
// (cleanup included).
type SSTableCounts struct {
	Before int `json:"before"`
	After  int `json:"after"`
}

// streamSlack is how much more than the ideal plus the dead bytes a drill may stream: chunks
// at range edges, rebuilt components.
const streamSlack = 1.1

// drill is one run: its cluster, options and what it measured.
type drill struct {
	name, op, fault string
	o               DrillOptions
	c               *Cluster
	res             *DrillResult
	before          *Census
	shipped         map[string]shipment // what was streamed, by from|ranges
}

// shipment is ranges streamed from a node.
type shipment struct {
	from   string
	ranges token.RangeSet
}

// ship records that from streamed ranges (the string form of a token.RangeSet).
func (d *drill) ship(from, ranges string) {
	if d.shipped == nil {
		d.shipped = map[string]shipment{}
	}
	rs, err := token.ParseRanges(token.Murmur3, ranges)
	if err != nil || ranges == "" {
		return
	}
	d.shipped[from+"|"+ranges] = shipment{from: from, ranges: rs}
}

// RunDrill runs the named drill ("bootstrap", "move-loss", ...) on a fresh cluster under
// o.Dir/NAME, checks the invariant and stops the cluster. A fault the machine cannot inject
// is reported in Skipped, with OK true.
func RunDrill(ctx context.Context, name string, o DrillOptions) DrillResult {
	op, fault, _ := strings.Cut(name, "-")
	if fault == "multidc" || fault == "overlapping" { // variants, not faults
		op, fault = name, FaultNone
	}
	res := DrillResult{Name: name, Fault: fault, Net: cmp.Or(o.Net, NetLoopback)}
	if o.Nodes == 0 {
		// One more node than replicas, so that every operation moves data.
		o.Nodes = cmp.Or(o.RF, 3) + 1
	}
	if o.DataPerNode == 0 {
		o.DataPerNode = 4 << 20
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	start := time.Now()
	d := &drill{name: name, op: op, fault: fault, o: o, res: &res}
	err := d.run(ctx)
	if d.c != nil {
		if cerr := d.c.Close(); cerr != nil && err == nil && !errors.Is(cerr, context.Canceled) {
			o.Logf("%s: stopping the cluster: %v", name, cerr)
		}
	}
	res.DurationSeconds = time.Since(start).Seconds()
	switch {
	case errors.Is(err, ErrFaultUnavailable):
		res.Skipped, res.OK = err.Error(), true
	case err != nil:
		res.Error = err.Error()
	default:
		res.OK = res.Check != nil && res.Check.OK && len(res.BoundsFailed) == 0
	}
	return res
}

func (d *drill) run(ctx context.Context) error {
	switch d.op {
	case "bootstrap", "decommission", "move", "cleanup", "repair",
		"bootstrap-multidc", "rebuild", "replace", "repair-overlapping":
	default:
		return fmt.Errorf("%w: %q (want one of %s)", ErrUnknownDrill, d.name, strings.Join(Drills(), ", "))
	}
	switch d.fault {
	case FaultNone, FaultKill, FaultLoss, FaultPartition, FaultDiskFull:
	default:
		return fmt.Errorf("%w: fault %q", ErrUnknownDrill, d.fault)
	}
	if d.fault != FaultNone && !slices.Contains([]string{"bootstrap", "decommission", "move", "cleanup"}, d.op) {
		return fmt.Errorf("%w: %s takes no fault", ErrUnknownDrill, d.op)
	}
	if d.fault == FaultDiskFull && d.op != "bootstrap" {
		return fmt.Errorf("%w: diskfull applies to bootstrap only", ErrUnknownDrill)
	}
	dir := filepath.Join(d.o.Dir, d.name)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	var mount *diskMount
	if d.fault == FaultDiskFull {
		m, err := newDiskMount(filepath.Join(d.o.Dir, d.name, "loop"), d.o.DataPerNode)
		if err != nil {
			return err
		}
		mount = m
		defer func() {
			// The receiver must stop before its file system goes.
			if d.c != nil {
				d.c.Close()
			}
			mount.close()
		}()
	}
	opts := Options{Nodes: d.o.Nodes, RF: d.o.RF, Processes: d.o.Processes, DataPerNode: d.o.DataPerNode,
		NumTokens: d.o.NumTokens, DCs: d.o.DCs, Racks: d.o.Racks, SSTables: d.o.SSTables, Net: d.o.Net,
		Dir: dir, Exec: d.o.Exec, Logf: d.o.Logf,
		// Under netns a partition takes the node's link down and datagram loss is dropped by
		// nft in the namespaces (when installed); proxies do both otherwise.
		Proxies:        (d.fault == FaultLoss && !LossByNft(d.o.Net)) || (d.fault == FaultPartition && d.o.Net != NetNamespaces),
		SeedEverywhere: d.op == "cleanup"}
	switch d.op {
	case "repair":
		opts.SeedMissing, opts.AllowDuplicates = "n1", true
	case "repair-overlapping":
		opts.SeedStale, opts.AllowDuplicates = "n1", true
	case "move":
		opts.NumTokens = 1
	case "bootstrap-multidc":
		// Two DCs of two racks with RF nodes each, so that each DC places its replicas by
		// rack and ring.
		opts.DCs, opts.Racks = max(opts.DCs, 2), max(opts.Racks, 2)
		opts.Nodes = max(opts.Nodes, 2*cmp.Or(opts.RF, 3))
	case "rebuild":
		// The keyspace replicates to a second DC that has no nodes yet.
		opts.DCs, opts.ReplicaDCs = 1, 2
	case "replace":
		// One node more than RF, so that the dead node's ranges are not everyone's.
		opts.Nodes = max(opts.Nodes, cmp.Or(opts.RF, 3)+1)
	}
	c, err := Start(ctx, opts)
	d.c = c
	if err != nil {
		return err
	}
	if d.before, err = c.Census(ctx, c.Names(), nil); err != nil {
		return err
	}
	if d.fault == FaultLoss {
		d.res.LossBy = "proxy"
		if LossByNft(d.o.Net) {
			d.res.LossBy = "nft"
		} else if d.o.Net == NetNamespaces {
			d.o.Logf("%s: nft(8) not installed (apt install nftables): datagrams dropped in UDP proxies instead", d.name)
		}
		if err := c.SetLoss(0.05); err != nil {
			return err
		}
	}
	switch d.op {
	case "bootstrap", "bootstrap-multidc":
		err = d.bootstrap(ctx, mount)
	case "decommission":
		err = d.decommission(ctx)
	case "move":
		err = d.move(ctx)
	case "cleanup":
		err = d.cleanup(ctx, c.Names()...)
	case "repair", "repair-overlapping":
		err = d.repair(ctx)
	case "rebuild":
		err = d.rebuild(ctx)
	case "replace":
		err = d.replace(ctx)
	}
	if err != nil {
		return err
	}
	rep, err := c.Check(ctx)
	if err != nil {
		return err
	}
	d.res.Check = rep
	d.res.PartitionsChecked, d.res.Lost, d.res.Diverged = rep.PartitionsChecked, rep.Lost, rep.Diverged
	d.res.Misplaced = rep.Misplaced + rep.Unknown
	if !c.opts.AllowDuplicates {
		d.res.Misplaced += rep.Duplicated
	}
	return d.measure(ctx, rep)
}

// measure fills the sstable counts, the ideal and dead bytes, and checks the bounds.
func (d *drill) measure(ctx context.Context, rep *CheckReport) error {
	c := d.c
	r, err := c.settledRing(ctx, 30*time.Second)
	if err != nil {
		return err
	}
	after := rep.census
	d.res.SSTablesPerNode = map[string]SSTableCounts{}
	for name, n := range d.before.SSTables {
		d.res.SSTablesPerNode[name] = SSTableCounts{Before: n}
	}
	// Every node that took part (joined, left or replaced) may have sent a node its S.
	nodes := len(c.Names())
	limit := nodes * c.opts.SSTables
	for name, n := range after.SSTables {
		sc := d.res.SSTablesPerNode[name]
		sc.After = n
		d.res.SSTablesPerNode[name] = sc
		if n > limit {
			d.bound("%s ends with %d sstables, more than nodes x S = %d x %d", name, n, nodes, c.opts.SSTables)
		}
	}
	// The bytes of an up-to-date copy of each partition before the operation: all its
	// sstables' copies as some replica held them.
	full := map[string]int64{}
	for _, held := range d.before.Held {
		for k, h := range held {
			if h.Hash == c.Data.Ref[k].Hash {
				full[k] = max(full[k], h.Bytes)
			}
		}
	}
	for _, k := range c.Data.Keys {
		ref := c.Data.Ref[string(k)]
		for _, rn := range c.strategy.Replicas(r, token.Murmur3.Token(k)) {
			if h, ok := d.before.Held[rn.Name][string(k)]; ok && h.Hash == ref.Hash {
				continue
			}
			d.res.BytesIdeal += full[string(k)]
			d.res.ShadowedBytes += max(full[string(k)]-ref.Bytes, 0)
		}
	}
	for _, sh := range d.shipped {
		for _, l := range d.before.Layouts[sh.from] {
			_, dead := l.Ship(sh.ranges)
			d.res.DeadBytes += dead
		}
	}
	if want := int64(streamSlack * float64(d.res.BytesIdeal+d.res.DeadBytes)); d.res.BytesStreamed > want {
		d.bound("streamed %d bytes, more than %.1f x (ideal %d + dead %d) = %d", d.res.BytesStreamed, streamSlack,
			d.res.BytesIdeal, d.res.DeadBytes, want)
	}
	return nil
}

// bound records a failed operator expectation.
func (d *drill) bound(format string, args ...any) {
	d.res.BoundsFailed = append(d.res.BoundsFailed, fmt.Sprintf(format, args...))
}

// throttle is the inbound rate that makes a receiver's streaming last a few seconds, so a
// fault lands while it is in flight.
func (d *drill) throttle() int64 {
	if d.fault != FaultKill && d.fault != FaultPartition {
		return 0
	}
	return max(d.o.DataPerNode/4, 256<<10)
}

const opTimeout = 3 * time.Minute

func (d *drill) bootstrap(ctx context.Context, mount *diskMount) error {
	c := d.c
	old := c.Names()
	name := fmt.Sprintf("n%d", len(old)+1)
	spec := NodeSpec{Name: name, Bootstrap: true, InboundBytesPerSecond: d.throttle()}
	if mount != nil {
		spec.DataDir = filepath.Join(mount.dir, "data")
		if err := mount.fill(d.o.DataPerNode / 4); err != nil {
			return err
		}
	}
	n, err := c.AddNode(ctx, spec)
	if err != nil {
		return err
	}
	first, err := d.waitOpStarted(ctx, n, adminapi.OpBootstrap)
	if err != nil {
		return err
	}
	switch d.fault {
	case FaultKill:
		if err := d.killMidStream(ctx, n, first.ID); err != nil {
			return err
		}
	case FaultPartition:
		if err := d.partitionMidStream(ctx, n, old, opDone(ctx, n, first.ID)); err != nil {
			return err
		}
	case FaultDiskFull:
		if _, err := n.WaitOp(ctx, first.ID, opTimeout); err == nil {
			return fmt.Errorf("bootstrap succeeded on a full disk (%s)", mount.dir)
		} else if !errors.Is(err, ErrOpFailed) {
			return err
		}
		d.o.Logf("%s: bootstrap failed on the full disk as it should; freeing space", name)
		if err := mount.free(); err != nil {
			return err
		}
	}
	if err := d.finish(ctx, n, adminapi.OpBootstrap, nil); err != nil {
		return err
	}
	if err := c.WaitNormal(ctx, time.Minute, append(old, name)...); err != nil {
		return err
	}
	return d.cleanup(ctx, old...)
}

func (d *drill) decommission(ctx context.Context) error {
	c := d.c
	names := c.Names()
	leaving := c.MustNode(names[len(names)-1])
	rest := names[:len(names)-1]
	if t := d.throttle(); t > 0 {
		for _, name := range rest {
			if err := c.MustNode(name).call(ctx, "POST", "/v1/throughput", adminapi.ThroughputRequest{InboundBytesPerSecond: &t}, nil); err != nil {
				return err
			}
		}
	}
	dec, err := leaving.StartOp(ctx, adminapi.OpDecommission, nil)
	if err != nil {
		return err
	}
	done := opDone(ctx, leaving, dec.ID)
	switch d.fault {
	case FaultKill:
		// The receiver of the first transfer that streams is killed and restarted.
		var victim *Node
		err := waitFor(ctx, time.Minute, "a receiver to stream", func() (bool, error) {
			if done() {
				return true, nil
			}
			for _, name := range rest {
				n := c.MustNode(name)
				if ok, _ := streaming(ctx, n); ok {
					victim = n
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return err
		}
		if victim == nil {
			d.o.Logf("%s: the operation finished before the fault", d.name)
		} else if err := d.kill(ctx, victim); err != nil {
			return err
		}
	case FaultPartition:
		if err := d.partitionMidStream(ctx, nil, []string{leaving.Name}, done); err != nil {
			return err
		}
	}
	if err := d.finish(ctx, leaving, adminapi.OpDecommission, nil); err != nil {
		return err
	}
	return c.WaitNormal(ctx, time.Minute, rest...)
}

func (d *drill) move(ctx context.Context) error {
	c := d.c
	names := c.Names()
	mover := c.MustNode(names[0])
	v, err := mover.Ring(ctx)
	if err != nil {
		return err
	}
	// Halfway between the second and the third node's tokens: n1 takes over part of n3's
	// primary range.
	var t2, t3 int64
	for _, t := range v.Tokens {
		switch t.Node {
		case names[1]:
			t2 = t.Token
		case names[min(2, len(names)-1)]:
			t3 = t.Token
		}
	}
	target := t2/2 + t3/2
	body := adminapi.MoveRequest{Token: fmt.Sprint(target)}
	if _, err := mover.StartOp(ctx, adminapi.OpMove, body); err != nil {
		return err
	}
	if err := d.finish(ctx, mover, adminapi.OpMove, body); err != nil {
		return err
	}
	err = waitFor(ctx, time.Minute, "every node to see the new token", func() (bool, error) {
		for _, name := range names {
			v, err := c.MustNode(name).Ring(ctx)
			if err != nil {
				return false, err
			}
			for _, t := range v.Tokens {
				if t.Node == mover.Name && t.Token != target {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if err := c.WaitNormal(ctx, time.Minute, names...); err != nil {
		return err
	}
	return d.cleanup(ctx, names...)
}

// repair repairs the table on n1, which was seeded with nothing (repair) or without the
// last flush (repair-overlapping) in half of its ranges; after it every replica holds every
// partition again, with the newest writes and deletions.
func (d *drill) repair(ctx context.Context) error {
	n := d.c.MustNode("n1")
	if rep, err := d.c.Check(ctx); err != nil {
		return err
	} else if rep.Misplaced+rep.Diverged == 0 {
		return fmt.Errorf("n1 was seeded damaged, yet nothing is missing or stale")
	}
	body := adminapi.RepairRequest{Keyspace: d.c.opts.Keyspace, Table: d.c.opts.Table}
	if _, err := n.StartOp(ctx, adminapi.OpRepair, body); err != nil {
		return err
	}
	s, err := d.waitOpStarted(ctx, n, adminapi.OpRepair)
	if err != nil {
		return err
	}
	s, err = n.WaitOp(ctx, s.ID, opTimeout)
	// Each direction of each peer's repair is a transfer of the runs of the sender's
	// partitions that had to move.
	for _, t := range s.Transfers {
		d.res.BytesStreamed += t.BytesReceived
		d.ship(t.From, t.Ranges)
	}
	return err
}

// cleanup runs cleanup on the named nodes, one after the other; under FaultKill the first is
// killed while its cleanup runs, restarted, and cleans up again.
func (d *drill) cleanup(ctx context.Context, names ...string) error {
	for i, name := range names {
		n := d.c.MustNode(name)
		before, err := d.c.countSSTables(n)
		if err != nil {
			return err
		}
		s, err := n.StartOp(ctx, adminapi.OpCleanup, adminapi.CleanupRequest{Keyspace: d.c.opts.Keyspace})
		if err != nil {
			return err
		}
		if d.op == "cleanup" && d.fault == FaultKill && i == 0 {
			if err := d.kill(ctx, n); err != nil {
				return err
			}
			if err := d.c.WaitNormal(ctx, time.Minute, d.c.Names()...); err != nil {
				return err
			}
			if s, err = n.StartOp(ctx, adminapi.OpCleanup, adminapi.CleanupRequest{Keyspace: d.c.opts.Keyspace}); err != nil {
				return err
			}
			d.res.Retries++
		}
		if _, err := n.WaitOp(ctx, s.ID, opTimeout); err != nil {
			return err
		}
		after, err := d.c.countSSTables(n)
		if err != nil {
			return err
		}
		if after > before {
			d.bound("cleanup raised %s's sstables from %d to %d", name, before, after)
		}
	}
	return nil
}

// countSSTables counts n's sstables (Data.db files) of the keyspace.
func (c *Cluster) countSSTables(n *Node) (int, error) {
	m, err := filepath.Glob(filepath.Join(n.DataDir(), c.opts.Keyspace, "*", "*-Data.db"))
	return len(m), err
}

// waitOpStarted waits until n reports an operation of kind. A node just restarted after a kill
// rejoins gossip and resumes first: under a loaded machine (the race detector, two cores, the
// whole suite beside it) that has taken over a minute.
func (d *drill) waitOpStarted(ctx context.Context, n *Node, kind string) (adminapi.OpStatus, error) {
	var s adminapi.OpStatus
	err := waitFor(ctx, 3*time.Minute, kind+" to start on "+n.Name, func() (bool, error) {
		o, ok, err := n.LastOp(ctx, kind)
		s = o
		return ok, err
	})
	return s, err
}

// finish waits for n's newest operation of kind; a failed one is retried (POST again with
// body) up to three times, after 1, 2 and 4 s, as an operator would after a fault. The bytes every attempt
// received are added up.
func (d *drill) finish(ctx context.Context, n *Node, kind string, body any) error {
	for attempt := 0; ; attempt++ {
		s, err := d.waitOpStarted(ctx, n, kind)
		if err != nil {
			return err
		}
		s, err = n.WaitOp(ctx, s.ID, opTimeout)
		for _, t := range s.Transfers {
			d.res.BytesStreamed += t.BytesReceived
			d.ship(t.From, t.Ranges)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrOpFailed) || attempt == 3 || d.fault == FaultNone {
			return err
		}
		d.o.Logf("%s: %v; retrying", d.name, err)
		d.res.Retries++
		// As an operator would: not at once, but after the cluster has had a moment to see a
		// restarted node again (its peers prove it anew before serving it).
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(1<<attempt) * time.Second):
		}
		if _, err := n.StartOp(ctx, kind, body); err != nil {
			return err
		}
	}
}

// streaming reports whether n is receiving with bytes already through.
func streaming(ctx context.Context, n *Node) (bool, error) {
	ss, err := n.Streams(ctx)
	if err != nil {
		return false, err
	}
	for _, s := range ss {
		if s.Direction == stream.Receiving && s.State == "streaming" && s.BytesDone > 0 {
			return true, nil
		}
	}
	return false, nil
}

// opDone reports whether operation id on n has finished (or n cannot say).
func opDone(ctx context.Context, n *Node, id int) func() bool {
	return func() bool {
		ops, err := n.Ops(ctx)
		if err != nil {
			return false
		}
		for _, o := range ops {
			if o.ID == id {
				return o.State != adminapi.OpRunning
			}
		}
		return false
	}
}

// killMidStream waits until n receives, then kills and restarts it; when operation id ends
// first, the fault is missed and said so.
func (d *drill) killMidStream(ctx context.Context, n *Node, id int) error {
	done := opDone(ctx, n, id)
	var missed bool
	err := waitFor(ctx, time.Minute, n.Name+" to stream", func() (bool, error) {
		if done() {
			missed = true
			return true, nil
		}
		return streaming(ctx, n)
	})
	if err != nil {
		return err
	}
	if missed {
		d.o.Logf("%s: the operation finished before the fault", d.name)
		return nil
	}
	return d.kill(ctx, n)
}

func (d *drill) kill(ctx context.Context, n *Node) error {
	d.o.Logf("%s: kill -9 %s (pid %d)", d.name, n.Name, n.PID())
	if err := n.Kill(); err != nil {
		return err
	}
	d.res.Retries++
	return n.Restart(ctx)
}

// partitionMidStream waits until receiver (or any node when nil) streams, then cuts the named
// nodes' proxies for 3s and heals them.
func (d *drill) partitionMidStream(ctx context.Context, receiver *Node, cut []string, done func() bool) error {
	missed := false
	err := waitFor(ctx, time.Minute, "a node to stream", func() (bool, error) {
		if done() {
			missed = true
			return true, nil
		}
		for _, name := range d.c.Names() {
			n := d.c.MustNode(name)
			if receiver != nil && n != receiver {
				continue
			}
			if ok, _ := streaming(ctx, n); ok {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if missed {
		d.o.Logf("%s: the operation finished before the fault", d.name)
		return nil
	}
	for _, name := range cut {
		if err := d.c.Cut(name); err != nil {
			return err
		}
	}
	d.o.Logf("%s: %v cut off (%s)", d.name, cut, d.c.opts.Net)
	// The fault's length, not a wait for an event: the partition lasts 3s.
	select {
	case <-ctx.Done():
	case <-time.After(3 * time.Second):
	}
	for _, name := range cut {
		if err := d.c.Heal(name); err != nil {
			return err
		}
	}
	d.o.Logf("%s: healed", d.name)
	return ctx.Err()
}

// diskMount is a small loop-mounted ext4 for the receiver's data, with a ballast file that
// leaves too little space for what it must receive.
type diskMount struct {
	dir     string
	unmount func() error
	ballast string
}

func newDiskMount(base string, dataPerNode int64) (*diskMount, error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	mnt, unmount, err := loopfs.Mount(base, 2*dataPerNode+32<<20, "mkfs.ext4", "e2fsprogs", "-q", "-F")
	if errors.Is(err, loopfs.ErrUnavailable) {
		return nil, fmt.Errorf("%w: %v", ErrFaultUnavailable, err)
	}
	if err != nil {
		return nil, err
	}
	return &diskMount{dir: mnt, unmount: unmount, ballast: filepath.Join(mnt, "ballast")}, nil
}

// fill allocates a ballast that leaves only free bytes.
func (m *diskMount) fill(free int64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(m.dir, &st); err != nil {
		return err
	}
	avail := int64(st.Bavail) * st.Bsize
	f, err := os.Create(m.ballast)
	if err != nil {
		return err
	}
	defer f.Close()
	if n := avail - free; n > 0 {
		if err := unix.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
			return fmt.Errorf("ballast: %w", err)
		}
	}
	return f.Sync()
}

func (m *diskMount) free() error { return os.Remove(m.ballast) }

func (m *diskMount) close() error { return m.unmount() }
