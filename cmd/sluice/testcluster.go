package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/testcluster"
)

// clusterFlags are the shape flags shared by up, drill and demo.
type clusterFlags struct {
	dir          string
	nodes, rf    int
	numTokens    int
	dcs, racks   int
	sstables     int
	net          string
	data         string
	dataPerNode  int64
	defaultBytes int64
}

func (f *clusterFlags) add(cmd *cobra.Command, data string, nodes int) {
	cmd.Flags().StringVar(&f.dir, "dir", "", "cluster directory (certificates, data, logs, state file)")
	cmd.Flags().IntVar(&f.nodes, "nodes", nodes, "initial nodes")
	cmd.Flags().IntVar(&f.rf, "rf", 3, "replication factor (per DC with NetworkTopologyStrategy)")
	cmd.Flags().IntVar(&f.numTokens, "num-tokens", 16, "tokens per node (vnodes); move drills use 1")
	cmd.Flags().IntVar(&f.dcs, "dcs", 1, "data centres the nodes are spread over (more than 1: NetworkTopologyStrategy)")
	cmd.Flags().IntVar(&f.racks, "racks", 1, "racks per DC (more than 1: rack-aware NetworkTopologyStrategy)")
	cmd.Flags().IntVar(&f.sstables, "sstables", 4, "flush-like sstables per node, overlapping, later ones overwriting and deleting rows of earlier ones")
	cmd.Flags().StringVar(&f.net, "net", testcluster.NetLoopback, "loopback, or netns: every node in its own network namespace on a bridge (root)")
	cmd.Flags().StringVar(&f.data, "data", data, "sstable bytes per node, e.g. 256MiB")
}

func (f *clusterFlags) parse(needDir bool) error {
	if needDir && f.dir == "" {
		return usagef("--dir is required")
	}
	if f.nodes < 1 || f.rf < 1 || f.numTokens < 1 || f.dcs < 1 || f.racks < 1 || f.sstables < 1 {
		return usagef("--nodes, --rf, --num-tokens, --dcs, --racks and --sstables must be at least 1")
	}
	if f.net != testcluster.NetLoopback && f.net != testcluster.NetNamespaces {
		return usagef("--net %q: want %s or %s", f.net, testcluster.NetLoopback, testcluster.NetNamespaces)
	}
	n, err := parseSize(f.data)
	if err != nil {
		return usagef("--data %q: %v", f.data, err)
	}
	f.dataPerNode = n
	if f.dir != "" {
		abs, err := filepath.Abs(f.dir)
		if err != nil {
			return err
		}
		f.dir = abs
	}
	return nil
}

// options are the cluster options the flags set.
func (f *clusterFlags) options() testcluster.Options {
	return testcluster.Options{Nodes: f.nodes, RF: f.rf, NumTokens: f.numTokens, DCs: f.dcs, Racks: f.racks,
		SSTables: f.sstables, Net: f.net, DataPerNode: f.dataPerNode, Dir: f.dir}
}

func newTestclusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "testcluster",
		Short: "Start local test clusters and run topology drills with fault injection",
		Long: `Start a cluster of sluice node processes on loopback (up, status, down), or run drills: a
fresh cluster per drill, seeded by ownership, an operation (bootstrap, decommission, move,
cleanup, repair, rebuild, replace) optionally under a fault (kill, loss, partition, diskfull),
then the invariant check: every partition on exactly its replicas with the reference's
reconciled content, no temporary files, every sstable verifies.`,
	}
	cmd.AddCommand(newTCUpCmd(), newTCDownCmd(), newTCStatusCmd(), newTCDrillCmd(), newTCDemoCmd(), newTCNodeCmd())
	return cmd
}

func newTCUpCmd() *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "up --dir D [--nodes 3] [--rf 3] [--num-tokens 16] [--dcs 1] [--racks 1] [--sstables 4] [--net loopback|netns] [--data 64MiB]",
		Short: "Start seeded node processes that keep running; the state file names them",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.parse(true); err != nil {
				return err
			}
			if st, err := testcluster.LoadState(f.dir); err == nil && len(st.Nodes) > 0 && testcluster.Alive(st.Nodes[0].PID) {
				return usagef("a cluster is already up in %s (sluice testcluster down --dir %s)", f.dir, f.dir)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o := f.options()
			o.Processes, o.Detach = true, true
			o.Logf = func(format string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", a...) }
			c, err := testcluster.Start(ctx, o)
			if err != nil {
				if c != nil {
					c.Close()
				}
				return err
			}
			if err := c.SaveState(); err != nil {
				c.Close()
				return err
			}
			return printState(cmd, c.State())
		},
	}
	f.add(cmd, "64MiB", 3)
	return cmd
}

func newTCDownCmd() *cobra.Command {
	return stateCmd("down --dir D", "Stop the node processes of a cluster started with up",
		func(cmd *cobra.Command, st testcluster.State) error {
			if err := testcluster.StopState(cmd.Context(), st); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped %d nodes\n", len(st.Nodes))
			return nil
		})
}

func newTCStatusCmd() *cobra.Command {
	return stateCmd("status --dir D", "Show the nodes of a cluster started with up: process, ring state, load",
		func(cmd *cobra.Command, st testcluster.State) error { return printState(cmd, st) })
}

// stateCmd is a command acting on the cluster that `up` recorded in --dir.
func stateCmd(use, short string, run func(*cobra.Command, testcluster.State) error) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usagef("--dir is required")
			}
			st, err := testcluster.LoadState(dir)
			if err != nil {
				return err
			}
			return run(cmd, st)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "cluster directory")
	return cmd
}

// printState prints one line per node, asking each running node for its status.
func printState(cmd *cobra.Command, st testcluster.State) error {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPID\tPROCESS\tSTATE\tLOAD\tADMIN\tSTREAM\tGOSSIP\tLOG")
	for _, n := range st.Nodes {
		proc, state, load := "dead", "-", "-"
		if testcluster.Alive(n.PID) {
			proc = "running"
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
			var s adminapi.Status
			if err := adminGet(ctx, n.AdminAddr, "/v1/status", &s); err == nil {
				var b int64
				for _, t := range s.Tables {
					b += t.Bytes
				}
				load = fmt.Sprintf("%.1fMiB", float64(b)/(1<<20))
				if s.Ring != nil {
					state = s.Ring.State
				}
			}
			cancel()
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.PID, proc, state, load, n.AdminAddr, n.StreamAddr, n.GossipAddr, n.Log)
	}
	return tw.Flush()
}

func newTCDrillCmd() *cobra.Command {
	var f clusterFlags
	var asJSON, inProcess bool
	cmd := &cobra.Command{
		Use:   "drill NAME|all [--nodes 4] [--rf 3] [--num-tokens 16] [--dcs 1] [--racks 1] [--sstables 4] [--net loopback|netns] [--data 256MiB] [--json] [--dir D]",
		Short: "Run topology drills on fresh clusters and check the invariant after each",
		Long: "Drills: " + fmt.Sprint(testcluster.Drills()) + `
Each runs on a fresh cluster of node processes (--in-process: in this process) under
--dir/NAME (a temporary directory, removed afterwards, without --dir), every node seeded
with --sstables overlapping flushes of the ranges it replicates. After the operation the
check compares each partition's reconciled content (last write wins, deletions applied) on
every replica with a compacted reference: lost, misplaced and diverged must be 0. A drill is
ok when that holds and the bounds do: cleanup never raises a node's sstable count; no node
ends with more than nodes x sstables; bytes streamed at most 1.1 x (ideal + dead), where
ideal is the on-disk bytes (all their sstables' copies) of the partitions some replica had to
receive, and dead the parts of the whole compressed chunks at each streamed run's edges that
hold other partitions. Under --net netns the loss fault drops 5% of the datagrams between
nodes with nft in their namespaces (UDP proxies without nft, and on loopback). --json prints
one object per drill. The exit status is 0 only if every drill is ok.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.parse(false); err != nil {
				return err
			}
			names := []string{args[0]}
			if args[0] == "all" {
				names = testcluster.Drills()
			}
			dir := f.dir
			if dir == "" {
				d, err := os.MkdirTemp("", "sluice-drill-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dir = d
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			failed := 0
			for _, name := range names {
				logf := func(format string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), name+": "+format+"\n", a...) }
				if asJSON {
					logf = func(string, ...any) {}
				}
				res := testcluster.RunDrill(ctx, name, testcluster.DrillOptions{Nodes: f.nodes, RF: f.rf, DataPerNode: f.dataPerNode,
					NumTokens: f.numTokens, DCs: f.dcs, Racks: f.racks, SSTables: f.sstables, Net: f.net,
					Processes: !inProcess, Dir: dir, Logf: logf})
				if !res.OK {
					failed++
				}
				if asJSON {
					res.Check = nil
					if err := enc.Encode(res); err != nil {
						return err
					}
					continue
				}
				verdict := "ok"
				switch {
				case res.Skipped != "":
					verdict = "skipped: " + res.Skipped
				case !res.OK:
					verdict = "FAILED"
				}
				fmt.Fprintf(out, "%-24s %s  partitions %d lost %d misplaced %d diverged %d  streamed %.1f MiB (ideal %.1f + dead %.1f)  sstables %s  %.1fs  retries %d\n",
					name, verdict, res.PartitionsChecked, res.Lost, res.Misplaced, res.Diverged, float64(res.BytesStreamed)/(1<<20),
					float64(res.BytesIdeal)/(1<<20), float64(res.DeadBytes)/(1<<20), sstableCounts(res.SSTablesPerNode), res.DurationSeconds, res.Retries)
				for _, b := range res.BoundsFailed {
					fmt.Fprintf(out, "    bound: %s\n", b)
				}
				if res.Error != "" {
					fmt.Fprintf(out, "    error: %s\n", res.Error)
				}
				if res.Check != nil {
					for _, p := range res.Check.Problems {
						fmt.Fprintf(out, "    %s\n", p)
					}
				}
				if ctx.Err() != nil {
					break
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d drills failed", failed, len(names))
			}
			return nil
		},
	}
	f.add(cmd, "256MiB", 4)
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per drill")
	cmd.Flags().BoolVar(&inProcess, "in-process", false, "run the nodes in this process instead of as processes")
	return cmd
}

// sstableCounts is "n1 4->4 n2 4->12 ...".
func sstableCounts(m map[string]testcluster.SSTableCounts) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s %d->%d", n, m[n].Before, m[n].After)
	}
	return b.String()
}

func newTCDemoCmd() *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "demo [--nodes 3] [--rf 3] [--num-tokens 16] [--sstables 4] [--net loopback|netns] [--data 128MiB] [--dir D]",
		Short: "The make run cluster demo: seed, bootstrap with progress, decommission, check, summary",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.parse(false); err != nil {
				return err
			}
			dir := f.dir
			if dir == "" {
				d, err := os.MkdirTemp("", "sluice-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dir = d
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o := f.options()
			o.Dir = dir
			// The last line is the verdict, on standard output.
			if err := testcluster.Demo(ctx, testcluster.DemoOptions{Cluster: o, Out: cmd.OutOrStdout()}); err != nil {
				if f.dir != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "\n(node logs kept in %s/nodes/*/node.log)", dir)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "\n(the cluster's directory is removed; run sluice testcluster demo --dir D to keep the node logs)")
				}
				fmt.Fprintf(cmd.OutOrStdout(), "\nFAILED: %v\n", err)
				return failedError{}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "\nall checks passed")
			return nil
		},
	}
	f.add(cmd, "128MiB", 3)
	return cmd
}

// newTCNodeCmd is the node process the harness starts: `sluice run` plus an advertised
// stream address (a proxy in front of it) and fast gossip failure detection.
func newTCNodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "node --config F [--advertise-stream H:P]",
		Short:              "Run one node of a test cluster (started by the harness)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := testcluster.NodeMain(args); code != 0 {
				return errors.New("node exited with an error (see its log)")
			}
			return nil
		},
	}
}
