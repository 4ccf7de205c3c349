package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/node"
	"github.com/sluicedb/sluice/sstable/token"
)

// newCassandraCmd is the command group of a sidecar node (the cassandra: section of
// sluice.yaml), run against its admin API like the other admin commands.
func newCassandraCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cassandra",
		Short: "Commands of a sluice node that is the sidecar of a live Cassandra node",
		Long: `Commands of a sluice node whose configuration has a cassandra: section (the sidecar of a
live Cassandra node), through its admin API.`,
	}
	cmd.AddCommand(newCassandraRingCmd(), newCassandraImportCmd(), newCassandraRebuildCmd(), newCassandraLoadCmd(), newCassandraReplaceCmd())
	return cmd
}

func newCassandraRingCmd() *cobra.Command {
	var admin string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ring [--admin HOST:PORT] [--json]",
		Short: "Show the Cassandra ring as the sidecar's node describes it",
		Long: `Show every node of the Cassandra ring as the local Cassandra node describes it (system.local,
system.peers_v2): address, host id, DC, rack, token count, state (UP or DOWN, the driver's
view; the local node is UP when it answered) and its sluice sidecar: up, down, missing (gossip
runs and no member matches it) or unknown (this sidecar runs without gossip). Sidecars are
matched by the host of their announced stream or admin address (interim). Then each
keyspace's replication as sluice reads it. --json prints the whole view, tokens listed.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var v adminapi.CassandraRing
			if err := adminGet(cmd.Context(), admin, "/v1/cassandra/ring", &v); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			return printCassandraRing(cmd.OutOrStdout(), v)
		},
	}
	cmd.Flags().StringVar(&admin, "admin", node.DefaultAdminAddr, "admin API address of the sidecar node")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the ring as JSON, tokens included")
	return cmd
}

func printCassandraRing(w io.Writer, v adminapi.CassandraRing) error {
	if v.Stale != "" {
		fmt.Fprintf(w, "warning: %s\n", v.Stale)
	}
	fmt.Fprintf(w, "Cluster: %s (%s), read %s\n", v.Cluster, strings.TrimPrefix(v.Partitioner, "org.apache.cassandra.dht."), v.ReadAt.Format("2006-01-02 15:04:05"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Address\tHost ID\tDC\tRack\tTokens\tState\tSidecar\t")
	for _, n := range v.Nodes {
		addr := n.Address
		if n.Local {
			addr += " (local)"
		}
		sc := n.Sidecar
		if n.SidecarName != "" {
			sc += " (" + n.SidecarName + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t\n", addr, n.HostID, n.DC, n.Rack, n.TokenCount, n.State, sc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Keyspace\tTables\tReplication\t")
	for _, k := range v.Keyspaces {
		r := k.Strategy
		if r == "" {
			r = "(not placed by sluice: " + k.Unsupported + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t\n", k.Name, k.Tables, r)
	}
	return tw.Flush()
}

func newCassandraImportCmd() *cobra.Command {
	var admin string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import KEYSPACE.TABLE DIR [--admin HOST:PORT] [--json]",
		Short: "Verify a directory of sstables and import them into the live Cassandra node",
		Long: `Verify every sstable in DIR (sluice's strict verify: every chunk CRC, the digest, the layout
Cassandra's sequential readers need) and, only if all are clean, move them into a staging
directory named <keyspace>/<table>-<id> on the data directories' file system and run
nodetool import (Cassandra verifies them again and checks that the node owns their tokens),
then confirm that every sstable is in the table's live directory. DIR is read by the sidecar,
so it must be a path on its machine; its sstables are moved out of it (copied when it is on
another file system), and put back if the import fails. The command waits for the import.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ks, table, ok := strings.Cut(args[0], ".")
			if !ok || ks == "" || table == "" {
				return usagef("cassandra import: %q: want KEYSPACE.TABLE", args[0])
			}
			if err := checkNames("cassandra import", ks, table, true); err != nil {
				return err
			}
			dir, err := filepath.Abs(args[1])
			if err != nil {
				return err
			}
			c, err := newAdminClient(admin)
			if err != nil {
				return err
			}
			// nodetool import takes as long as Cassandra's verification: the command's context
			// bounds the wait, not the admin client's usual 10 s.
			c.ac.HTTP = &http.Client{}
			var res adminapi.CassandraImportResult
			if err := c.call(cmd.Context(), http.MethodPost, "/v1/cassandra/import",
				adminapi.CassandraImportRequest{Keyspace: ks, Table: table, Dir: dir}, &res); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			var bytes int64
			for _, s := range res.SSTables {
				bytes += s.Bytes
				fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s\n", s.Source, s.Live)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d sstable(s), %s of data, into %s.%s on Cassandra node %s in %.1fs (confirmed in the live table directory)\n",
				len(res.SSTables), formatBytes(bytes), res.Keyspace, res.Table, res.Node, res.ElapsedSeconds)
			return nil
		},
	}
	cmd.Flags().StringVar(&admin, "admin", node.DefaultAdminAddr, "admin API address of the sidecar node")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newCassandraRebuildCmd() *cobra.Command {
	var admin, keyspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rebuild [SOURCE_DC] [--keyspace KS] [--admin HOST:PORT] [--json]",
		Short: "Fetch every range the live Cassandra node replicates from other replicas' sidecars",
		Long: `Rebuild the sidecar's Cassandra node, like nodetool rebuild: for every keyspace with
replication to the node's DC (or only --keyspace; never the system keyspaces) every range the
node replicates is fetched from one other replica that is UP and whose sluice sidecar is up (a
proven gossip member), in SOURCE_DC when given, spreading the ranges over the sources. Each
table's sstables arrive zero-copy in a staging directory on the file system of the data
directory Cassandra will keep them in (<staging>/rebuild-<id>/; with several data directories
the ranges are cut at Cassandra's disk boundaries, one share per directory, so that each import
is a rename), are verified strictly and handed to the node with nodetool import
(which verifies them again and checks the node owns their tokens), confirmed in the live table
directory, and the staging directory is removed.

It is for a node that owns ranges without their data: a DC added to a keyspace's replication.
What the node already holds is not looked at: run again, it imports the data again (duplicates
reconcile on read and compaction). Only flushed data is fetched: run nodetool flush on the
sources first. A table that fails is listed by name and the command fails; tables that
were imported stay.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s: want at most one SOURCE_DC, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			req := adminapi.CassandraRebuildRequest{Keyspace: keyspace}
			if len(args) == 1 {
				req.SourceDC = args[0]
			}
			if keyspace != "" {
				if err := checkNames("cassandra rebuild", keyspace, "", false); err != nil {
					return err
				}
			}
			return runCassandraOp(cmd, admin, "rebuild", req, asJSON, "imported", "table(s)")
		},
	}
	cmd.Flags().StringVar(&keyspace, "keyspace", "", "rebuild only this keyspace")
	cmd.Flags().StringVar(&admin, "admin", node.DefaultAdminAddr, "admin API address of the sidecar node")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a summary and the operation's final status as JSON")
	return cmd
}

func newCassandraReplaceCmd() *cobra.Command {
	var admin, into, native, keyspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "replace DEAD_ADDRESS --into DIR [--native HOST:PORT] [--keyspace KS] [--admin HOST:PORT] [--json]",
		Short: "Fill a replacement Cassandra node's data directory with a dead node's ranges, before its first start",
		Long: `Fill DIR, the data directory of a Cassandra node that will replace the dead node DEAD_ADDRESS
(its address or host id; DOWN in the ring) and has not started yet, with every range the dead
node replicated: for every keyspace with replication to its DC (or only --keyspace; never the
system keyspaces) each range comes from one other replica that is UP and whose sluice sidecar
is up, the ranges spread over them, as sluice cassandra rebuild does. The ring (the dead node's
tokens included, from system.peers_v2) is read from the sidecar's own Cassandra node, or with
--native from another live node's CQL port (a replacement's sidecar has no live node yet).

Each table's sstables arrive zero-copy in a scratch directory inside DIR, are verified
strictly, and are moved into DIR/<keyspace>/<table>-<id>/ under fresh generations, Data.db
last: never a half-written sstable Cassandra would open. DIR is a path on the sidecar's host:
run it on the replacement's own sidecar (with --native), whose node is not running; DIR may be
one of a sidecar's data directories only while its node refuses connections. Then start the
replacement with
auto_bootstrap: false, -Dcassandra.replace_address_first_boot=DEAD_ADDRESS and
-Dcassandra.allow_unsafe_replace=true, and repair it (docs/OPERATIONS.md says why).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("%s: want one DEAD_ADDRESS, got %q", cmd.CommandPath(), args)
			}
			if into == "" {
				return usagef("%s: --into DIR is required", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyspace != "" {
				if err := checkNames("cassandra replace", keyspace, "", false); err != nil {
					return err
				}
			}
			abs, err := filepath.Abs(into)
			if err != nil {
				return err
			}
			req := adminapi.CassandraReplaceRequest{Dead: args[0], Into: abs, Native: native, Keyspace: keyspace}
			return runCassandraOp(cmd, admin, "replace", req, asJSON, "installed", "table(s)")
		},
	}
	cmd.Flags().StringVar(&into, "into", "", "the replacement node's data directory (on the sidecar's host)")
	cmd.Flags().StringVar(&native, "native", "", "host:port of a live Cassandra node's CQL port to read the ring from (default: the sidecar's own node)")
	cmd.Flags().StringVar(&keyspace, "keyspace", "", "replace only this keyspace's data")
	cmd.Flags().StringVar(&admin, "admin", node.DefaultAdminAddr, "admin API address of the sidecar node")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a summary and the operation's final status as JSON")
	return cmd
}

// summarizeCassandraRebuild counts a rebuild's ranges ((keyspace, range) pairs, whatever the
// tables), sstables and bytes, and lists its tables imported and failed.
func summarizeCassandraRebuild(st adminapi.OpStatus) adminapi.CassandraRebuildResult {
	out := adminapi.CassandraRebuildResult{State: st.State, Error: st.Error, Imported: []adminapi.CassandraRebuildTable{},
		Failed: []adminapi.CassandraRebuildTable{}, Op: st}
	if !st.Finished.IsZero() {
		out.WallSeconds = st.Finished.Sub(st.Started).Seconds()
	}
	ranges := map[string]bool{}
	for _, t := range st.Transfers {
		if rs, err := token.ParseRanges(token.Murmur3, t.Ranges); err == nil {
			for _, r := range rs {
				ranges[t.Keyspace+" "+r.String()] = true
			}
		}
		out.BytesReceived += t.BytesReceived
		rt := adminapi.CassandraRebuildTable{Keyspace: t.Keyspace, Table: t.Table, From: t.From, To: t.To, SSTables: t.SSTables, BytesReceived: t.BytesReceived}
		switch t.State {
		case adminapi.OpComplete:
			out.SSTables += t.SSTables
			if t.SSTables > 0 {
				out.Imported = append(out.Imported, rt)
			}
		case adminapi.OpFailed:
			rt.Ranges, rt.Error = t.Ranges, t.Error
			out.Failed = append(out.Failed, rt)
		}
	}
	out.Ranges = len(ranges)
	return out
}

// summarizeCassandraLoad adds to a load's summary the bytes its source sent and the sstables
// each replica's node imported.
func summarizeCassandraLoad(sum adminapi.CassandraRebuildResult) adminapi.CassandraLoadResult {
	out := adminapi.CassandraLoadResult{CassandraRebuildResult: sum, BytesSent: sum.BytesReceived, ImportedPerNode: map[string]int{},
		Refused: []adminapi.CassandraLoadRefusal{}}
	for _, t := range sum.Imported {
		out.ImportedPerNode[t.To] += t.SSTables
	}
	for _, t := range sum.Op.Transfers {
		switch {
		case t.To == adminapi.LoadRefused:
			out.Refused = append(out.Refused, adminapi.CassandraLoadRefusal{Keyspace: t.Keyspace, Table: t.Table, SSTable: t.From, Error: t.Error})
		case t.State == adminapi.OpComplete && t.Skipped > 0:
			out.Resumed++
		}
	}
	return out
}

func newCassandraLoadCmd() *cobra.Command {
	var admin, keyspace, table string
	var asJSON, resume bool
	cmd := &cobra.Command{
		Use:   "load DIR... [--keyspace KS --table T] [--admin HOST:PORT] [--json] | load --resume",
		Short: "Send sstables to every replica of their ranges through the sidecars (sstableloader)",
		Long: `Load sstables into the live Cassandra cluster, like sstableloader, zero-copy: every sstable
under each DIR (a <keyspace>/<table>[-<id>] directory, a tree of them, or with --keyspace and
--table a directory of that table's sstables) is cut per replica set of the live ring and sent
to every replica's sidecar (this one included), which imports its part with nodetool import
(strict verification first; Cassandra checks the node owns the tokens). The sidecar stages the
sstables by hard links (copies when DIR is on another file system) and serves them only to
the load's own requests; DIR is left as it was. The DIRs are read by the sidecar, so they must
be paths on its machine. Every source sstable is verified strictly first: a damaged one is
refused by its path and what was wrong, nothing of it is sent, the others are loaded. A
replica whose sidecar is down or whose Cassandra node is DOWN, or a table that fails, is
listed by name and the command fails; the parts imported elsewhere stay.

A load that did not complete (a replica down, the sidecar restarted, a failure) keeps a
journal in the sidecar's staging directory of every transfer whose import a replica
confirmed. Running the same command again resumes it: only the transfers not confirmed are
sent (a transfer is confirmed only once the replica's node is seen to hold its sstables).
--resume without DIR resumes the journaled load; the journal goes when a load completes.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !resume {
				return usagef("%s: want at least one DIR (or --resume)", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if (keyspace == "") != (table == "") {
				return usagef("cassandra load: --keyspace and --table go together")
			}
			if keyspace != "" {
				if err := checkNames("cassandra load", keyspace, table, true); err != nil {
					return err
				}
			}
			req := adminapi.CassandraLoadRequest{Keyspace: keyspace, Table: table, Resume: resume}
			for _, a := range args {
				d, err := filepath.Abs(a)
				if err != nil {
					return err
				}
				req.Dirs = append(req.Dirs, d)
			}
			return runCassandraOp(cmd, admin, "load", req, asJSON, "imported by the replicas", "transfer(s)")
		},
	}
	cmd.Flags().StringVar(&keyspace, "keyspace", "", "keyspace of a flat directory of sstables (with --table)")
	cmd.Flags().StringVar(&table, "table", "", "table of a flat directory of sstables (with --keyspace)")
	cmd.Flags().BoolVar(&resume, "resume", false, "resume the load journaled by an earlier run that did not complete (without DIR: whatever it loaded)")
	cmd.Flags().StringVar(&admin, "admin", node.DefaultAdminAddr, "admin API address of the sidecar node")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a summary and the operation's final status as JSON")
	return cmd
}

// runCassandraOp starts the sidecar operation kind (rebuild, load) with req, follows it to its
// end and prints its summary (JSON with asJSON); it fails when the operation did not complete.
// imported and units word the human summary.
func runCassandraOp(cmd *cobra.Command, admin, kind string, req any, asJSON bool, imported, units string) error {
	st, err := followOp(cmd, admin, "/v1/cassandra/"+kind, req)
	if err != nil {
		return err
	}
	sum := summarizeCassandraRebuild(st)
	if asJSON {
		var out any = sum
		if kind == "load" {
			out = summarizeCassandraLoad(sum)
		}
		if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
			return err
		}
	} else {
		printOp(cmd.OutOrStdout(), st)
		fmt.Fprintf(cmd.OutOrStdout(), "%d range(s), %d sstable(s), %s received and %s in %.1fs; %d %s imported, %d failed\n",
			sum.Ranges, sum.SSTables, formatBytes(sum.BytesReceived), imported, sum.WallSeconds, len(sum.Imported), units, len(sum.Failed))
		if kind == "load" {
			ls := summarizeCassandraLoad(sum)
			for _, r := range ls.Refused {
				fmt.Fprintf(cmd.OutOrStdout(), "refused: %s\n", r.Error)
			}
			if ls.Resumed > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "resumed: %d transfer(s) confirmed by an earlier run, not sent again\n", ls.Resumed)
			}
		}
	}
	if st.State != adminapi.OpComplete {
		return fmt.Errorf("cassandra %s failed: %s", kind, st.Error)
	}
	return nil
}
