package testcluster

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/node"
	"github.com/sluicedb/sluice/stream"
)

// DemoOptions shape Demo: the cluster's options (Processes is forced on; Nodes default 3,
// DataPerNode default 128 MiB) and where the report goes.
type DemoOptions struct {
	Cluster Options
	Out     io.Writer
}

// Demo is `make run`'s cluster job: node processes seeded with overlapping flushes of the
// ranges they replicate; a new node bootstraps with a progress line per second; the old
// nodes clean up; one node decommissions; the invariant is checked; a summary explains what
// moved; the last line is the verdict. Everything is stopped. It returns an error naming
// every check that failed.
func Demo(ctx context.Context, o DemoOptions) error {
	co := o.Cluster
	if co.Nodes == 0 {
		co.Nodes = 3
	}
	if co.DataPerNode == 0 {
		co.DataPerNode = 128 << 20
	}
	co.Processes = true
	w := o.Out
	say := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	t0 := time.Now()
	co.Logf = func(f string, a ...any) { say("   "+f, a...) }
	c, err := Start(ctx, co)
	if c == nil {
		return err
	}
	defer c.Close()
	co = c.Options()
	say("== %d node processes (%s network), RF %d, %d tokens each, %d DC(s) x %d rack(s); each node holds %d sstables",
		co.Nodes, co.Net, co.RF, co.NumTokens, co.DCs, co.Racks, co.SSTables)
	say("   that overlap: later flushes overwrite and delete rows of earlier ones, as a real node's do")
	if err != nil {
		return err
	}
	say("   cluster ready in %v", time.Since(t0).Round(time.Millisecond))
	counts := map[string]*SSTableCounts{}
	for _, name := range c.Names() {
		n, err := c.countSSTables(c.MustNode(name))
		if err != nil {
			return err
		}
		counts[name] = &SSTableCounts{Before: n}
	}
	var failed []string
	var rows []summaryRow

	old := c.Names()
	newName := fmt.Sprintf("n%d", len(old)+1)
	say("\n== bootstrap %s: it allocates tokens and streams its ranges from their replicas", newName)
	n, err := c.AddNode(ctx, NodeSpec{Name: newName, Bootstrap: true})
	if err != nil {
		return err
	}
	counts[newName] = &SSTableCounts{}
	op, err := waitWithProgress(ctx, w, c, n, adminapi.OpBootstrap, []*Node{n})
	if err != nil {
		return err
	}
	if err := c.WaitNormal(ctx, time.Minute, c.Names()...); err != nil {
		return err
	}
	rows = append(rows, summaryRow{"bootstrap " + newName, op.Finished.Sub(op.Started), received(op)})
	t := time.Now()
	say("\n== cleanup on %s: drop what they no longer replicate", strings.Join(old, ", "))
	for _, name := range old {
		m := c.MustNode(name)
		before, err := c.countSSTables(m)
		if err != nil {
			return err
		}
		s, err := m.StartOp(ctx, adminapi.OpCleanup, adminapi.CleanupRequest{})
		if err != nil {
			return err
		}
		if _, err := m.WaitOp(ctx, s.ID, opTimeout); err != nil {
			return err
		}
		after, err := c.countSSTables(m)
		if err != nil {
			return err
		}
		say("   %s: %d sstables before, %d after", name, before, after)
		if after > before {
			failed = append(failed, fmt.Sprintf("cleanup raised %s's sstables from %d to %d", name, before, after))
		}
	}
	rows = append(rows, summaryRow{"cleanup", time.Since(t), 0})

	leaving := c.MustNode(old[1])
	var rest []string
	var receivers []*Node
	for _, name := range c.Names() {
		if name != leaving.Name {
			rest = append(rest, name)
			receivers = append(receivers, c.MustNode(name))
		}
	}
	say("\n== decommission %s: its ranges stream to the nodes that take them over", leaving.Name)
	if _, err := leaving.StartOp(ctx, adminapi.OpDecommission, nil); err != nil {
		return err
	}
	op, err = waitWithProgress(ctx, w, c, leaving, adminapi.OpDecommission, receivers)
	if err != nil {
		return err
	}
	if err := c.WaitNormal(ctx, time.Minute, rest...); err != nil {
		return err
	}
	rows = append(rows, summaryRow{"decommission " + leaving.Name, op.Finished.Sub(op.Started), received(op)})

	say("\n== check: on every replica the reconciled content of each partition (last write wins, deletions")
	say("   applied) equals a compacted reference; nothing outside owned ranges; no temporary files; every")
	say("   sstable verifies, reading every row")
	t = time.Now()
	rep, err := c.Check(ctx)
	if err != nil {
		return err
	}
	rows = append(rows, summaryRow{"invariant check", time.Since(t), 0})
	kinds := map[string]float64{}
	for _, name := range rest {
		if err := bytesByKind(ctx, c.MustNode(name), kinds); err != nil {
			return err
		}
	}

	say("\n== summary")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\ttime\tstreamed\tthroughput\t")
	for _, r := range rows {
		tp := "-"
		if r.bytes > 0 {
			tp = fmt.Sprintf("%.1f MiB/s", float64(r.bytes)/(1<<20)/r.d.Seconds())
		}
		fmt.Fprintf(tw, "%s\t%.2fs\t%.1f MiB\t%s\t\n", r.step, r.d.Seconds(), float64(r.bytes)/(1<<20), tp)
	}
	tw.Flush()
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		say("received as %-8s %8.1f MiB", k+":", kinds[k]/(1<<20))
	}
	say("   (entire: an sstable all of whose partitions were wanted, sent as it is; partial: a cut of an")
	say("   sstable made of whole compressed chunks, rebuilt index on arrival; rows: partitions re-serialised)")
	// Every node that took part may have sent a node its S sstables.
	nodes := len(c.Names())
	limit := nodes * co.SSTables
	var line []string
	for _, name := range rest {
		cnt := counts[name]
		if cnt.After, err = c.countSSTables(c.MustNode(name)); err != nil {
			return err
		}
		line = append(line, fmt.Sprintf("%s %d->%d", name, cnt.Before, cnt.After))
		if cnt.After > limit {
			failed = append(failed, fmt.Sprintf("%s ends with %d sstables, more than nodes x sstables = %d x %d", name, cnt.After, nodes, co.SSTables))
		}
	}
	say("sstables per node, start -> end: %s (an operator expects at most nodes x sstables = %d x %d = %d)", strings.Join(line, ", "), nodes, co.SSTables, limit)
	say("partitions checked: %d on %d members (%d sstables); lost %d, misplaced %d, diverged %d, duplicated %d, temp files %d, bad sstables %d",
		rep.PartitionsChecked, len(rep.Members), rep.SSTables, rep.Lost, rep.Misplaced, rep.Diverged, rep.Duplicated, rep.TempFiles, rep.BadSSTables)
	say("total %v", time.Since(t0).Round(time.Millisecond))
	if !rep.OK {
		for _, p := range rep.Problems {
			say("   %s", p)
		}
		failed = append([]string{fmt.Sprintf("invariant violated (lost %d, misplaced %d, diverged %d, duplicated %d, temp files %d, bad sstables %d)",
			rep.Lost, rep.Misplaced, rep.Diverged, rep.Duplicated, rep.TempFiles, rep.BadSSTables)}, failed...)
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

type summaryRow struct {
	step  string
	d     time.Duration
	bytes int64
}

func received(op adminapi.OpStatus) int64 {
	var b int64
	for _, t := range op.Transfers {
		b += t.BytesReceived
	}
	return b
}

// waitWithProgress waits for n's newest operation of kind, printing once a second a
// netstats-style line per receiving session of the watched nodes.
func waitWithProgress(ctx context.Context, w io.Writer, c *Cluster, n *Node, kind string, watch []*Node) (adminapi.OpStatus, error) {
	names := map[string]string{}
	for _, name := range c.Names() {
		names[c.MustNode(name).StreamAddr()] = name
	}
	tick := time.NewTicker(time.Second)
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	defer tick.Stop()
	start := time.Now()
	for {
		op, ok, err := n.LastOp(ctx, kind)
		if err == nil && ok && op.State != adminapi.OpRunning {
			if op.State != adminapi.OpComplete {
				return op, fmt.Errorf("%w: %s on %s: %s", ErrOpFailed, kind, n.Name, op.Error)
			}
			fmt.Fprintf(w, "   %s complete in %.2fs: %d transfers, %.1f MiB\n", kind, op.Finished.Sub(op.Started).Seconds(), len(op.Transfers), float64(received(op))/(1<<20))
			return op, nil
		}
		select {
		case <-ctx.Done():
			return op, ctx.Err()
		case <-poll.C:
			continue
		case <-tick.C:
		}
		for _, m := range watch {
			ss, err := m.Streams(ctx)
			if err != nil {
				continue
			}
			for _, s := range ss {
				if s.Direction != stream.Receiving || s.State == "complete" || s.State == "failed" {
					continue
				}
				fmt.Fprintf(w, "   %5.1fs %s <- %s %s.%s %s files %d/%d %7.1f/%7.1f MiB %6.1f MiB/s\n",
					time.Since(start).Seconds(), m.Name, cmp.Or(names[s.Peer], s.Peer), s.Keyspace, s.Table, s.State, s.FilesDone, s.FilesTotal,
					float64(s.BytesDone)/(1<<20), float64(s.BytesTotal)/(1<<20), s.RateBytes/(1<<20))
			}
		}
	}
}

// bytesByKind adds a node's received stream bytes by kind (sluice_stream_bytes_total with
// direction "in") into kinds.
func bytesByKind(ctx context.Context, n *Node, kinds map[string]float64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.AdminAddr()+"/metrics", nil)
	if err != nil {
		return err
	}
	tok, err := adminapi.Token(n.AdminAddr(), "")
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := adminClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "sluice_stream_bytes_total{") || !strings.Contains(line, `direction="`+node.DirIn+`"`) {
			continue
		}
		labels, val, ok := strings.Cut(strings.TrimPrefix(line, "sluice_stream_bytes_total{"), "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(labels, ",") {
			if k, ok := strings.CutPrefix(l, `kind="`); ok {
				kinds[strings.TrimSuffix(k, `"`)] += v
			}
		}
	}
	return sc.Err()
}
