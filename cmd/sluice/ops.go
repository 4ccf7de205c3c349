package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/internal/node"
)

// opPollInterval is how long one GET /v1/ops?wait= may wait for the operation to end before
// the command asks again; a node too old to wait answers at once, and is asked this often.
const opPollInterval = 200 * time.Millisecond

// followOp starts an operation with POST path, then follows it through GET /v1/ops until it has
// finished: each request waits on the node until the operation ends or opPollInterval passes,
// so the command returns as soon as the operation has ended, not at the next poll.
func followOp(cmd *cobra.Command, admin, path string, body any) (adminapi.OpStatus, error) {
	c, err := newAdminClient(admin)
	if err != nil {
		return adminapi.OpStatus{}, err
	}
	var st adminapi.OpStatus
	if err := c.call(cmd.Context(), http.MethodPost, path, body, &st); err != nil {
		return st, err
	}
	for st.State == adminapi.OpRunning {
		asked := time.Now()
		var ops adminapi.OpsResponse
		q := fmt.Sprintf("/v1/ops?wait=%d&wait_ms=%d", st.ID, opPollInterval.Milliseconds())
		if err := c.call(cmd.Context(), http.MethodGet, q, nil, &ops); err != nil {
			return st, err
		}
		for _, o := range ops.Ops {
			if o.ID == st.ID {
				st = o
			}
		}
		if st.State != adminapi.OpRunning {
			break
		}
		// A node that does not wait answered at once: ask again only after the interval.
		select {
		case <-cmd.Context().Done():
			return st, fmt.Errorf("%s %d still running on %s: %w", st.Kind, st.ID, admin, cmd.Context().Err())
		case <-time.After(opPollInterval - time.Since(asked)):
		}
	}
	return st, nil
}

// runOp starts an operation through the admin API, follows it until it has finished
// (followOp), and prints its outcome (or, with asJSON, its final OpStatus). A failed operation
// is a failed command.
func runOp(cmd *cobra.Command, admin, kind string, body any, asJSON bool) error {
	st, err := followOp(cmd, admin, "/v1/ops/"+kind, body)
	if err != nil {
		return err
	}
	if asJSON {
		if err := writeJSON(cmd.OutOrStdout(), st); err != nil {
			return err
		}
	} else {
		printOp(cmd.OutOrStdout(), st)
	}
	if st.State != adminapi.OpComplete {
		return fmt.Errorf("%s failed: %s", kind, st.Error)
	}
	return nil
}

// printOp prints an operation's transfers, cleanup or import results and its outcome.
func printOp(w io.Writer, st adminapi.OpStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(st.Transfers) > 0 {
		fmt.Fprintln(tw, "FROM\tTO\tTABLE\tSTATE\tSSTABLES\tSKIPPED\tBYTES\tRANGES")
		for _, t := range st.Transfers {
			fmt.Fprintf(tw, "%s\t%s\t%s.%s\t%s\t%d\t%d\t%s\t%s\n", t.From, t.To, t.Keyspace, t.Table, t.State,
				t.SSTables, t.Skipped, formatBytes(t.BytesReceived), t.Ranges)
		}
	}
	if len(st.Cleanup) > 0 {
		fmt.Fprintln(tw, "SSTABLE\tACTION\tPARTITIONS\tKEPT\tCHILDREN")
		for _, c := range st.Cleanup {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", filepath.Base(c.SSTable), c.Action, c.Partitions, c.Kept, len(c.Children))
		}
	}
	if len(st.CleanupChecks) > 0 {
		fmt.Fprintln(tw, "TABLE\tCONFIRMED BY THE OWNERS (DROPPED)")
		for _, c := range st.CleanupChecks {
			fmt.Fprintf(tw, "%s.%s\t%s\n", c.Keyspace, c.Table, cmp.Or(c.Confirmed, "-"))
		}
		if refusedRanges(st.CleanupChecks) > 0 {
			fmt.Fprintln(tw, "TABLE\tNOT CONFIRMED (KEPT)\tOWNER\tREASON")
			for _, c := range st.CleanupChecks {
				for _, f := range c.Refused {
					fmt.Fprintf(tw, "%s.%s\t%s\t%s\t%s\n", c.Keyspace, c.Table, f.Range, cmp.Or(f.Owner, "-"), f.Reason)
				}
			}
		}
	}
	if len(st.Imported) > 0 {
		fmt.Fprintln(tw, "SOURCE\tINSTALLED\tPARTITIONS")
		for _, i := range st.Imported {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", i.Source, i.SSTable, i.Partitions)
		}
	}
	tw.Flush()
	took := st.Finished.Sub(st.Started).Round(time.Millisecond)
	if st.Error != "" {
		fmt.Fprintf(w, "%s %s after %v: %s\n", st.Kind, st.State, took, st.Error)
		return
	}
	fmt.Fprintf(w, "%s %s in %v\n", st.Kind, st.State, took)
}

// refusedRanges counts the refusals of a cleanup's checks.
func refusedRanges(checks []adminapi.CleanupCheck) int {
	n := 0
	for _, c := range checks {
		n += len(c.Refused)
	}
	return n
}

func opFlags(cmd *cobra.Command, admin *string, asJSON *bool) {
	cmd.Flags().StringVar(admin, "admin", node.DefaultAdminAddr, "admin API address of the node")
	cmd.Flags().BoolVar(asJSON, "json", false, "print the operation's final status as JSON")
}

func newDecommissionCmd() *cobra.Command {
	var admin string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "decommission [--admin HOST:PORT]",
		Short: "Stream a node's ranges to the nodes that take them over, then leave the ring",
		Long: `Decommission the node, like nodetool decommission: it becomes LEAVING, asks every node
that gains one of its ranges to fetch it from it, and when all are done becomes LEFT and leaves
gossip. The process keeps serving its admin API (state LEFT) until it is stopped; it refuses to
start again with the same data directory. A failed decommission leaves the node LEAVING; run it
again to resume (fetches resume where they stopped).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOp(cmd, admin, adminapi.OpDecommission, struct{}{}, asJSON)
		},
	}
	opFlags(cmd, &admin, &asJSON)
	return cmd
}

func newMoveCmd() *cobra.Command {
	var admin string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "move TOKEN [--admin HOST:PORT]",
		Short: "Move a single-token node to a new token",
		Long: `Move the node to TOKEN, like nodetool move (single-token nodes only): it becomes MOVING, the
ranges it gains are fetched from their current replicas (and other nodes fetch what they gain),
then it publishes the new token and is NORMAL again. The ranges it gave up stay on its disk
until sluice cleanup.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := strconv.ParseInt(args[0], 10, 64); err != nil {
				return usagef("move: token %q: want a signed 64-bit integer", args[0])
			}
			return runOp(cmd, admin, adminapi.OpMove, adminapi.MoveRequest{Token: args[0]}, asJSON)
		},
	}
	opFlags(cmd, &admin, &asJSON)
	return cmd
}

func newCleanupCmd() *cobra.Command {
	var admin string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cleanup [KEYSPACE[.TABLE]] [--admin HOST:PORT]",
		Short: "Drop the partitions a node no longer replicates",
		Long: `Remove from the node's tables every partition outside the ranges it replicates (now or once
in-flight bootstraps and decommissions settle), like nodetool cleanup: an sstable with foreign
partitions is split into the kept ranges and then removed. Without an argument every table of
every configured keyspace is cleaned.

Nothing is dropped on the ring's word alone. A cleanup with something to drop waits until the
ring has been unchanged for a gossip round (and refuses a ring with members that have not
proven their identity); then every node owning a range to drop must confirm it holds each of
the node's partitions there with the same content (Merkle trees, then digests). A range an
owner does not confirm (down, lacking partitions, holding other content) is kept: the command
lists it with the owner and the reason and fails.`,
		Args: atMostArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req adminapi.CleanupRequest
			if len(args) == 1 {
				req.Keyspace, req.Table, _ = strings.Cut(args[0], ".")
				if req.Keyspace == "" {
					return usagef("cleanup: %q: want KEYSPACE or KEYSPACE.TABLE", args[0])
				}
				if err := checkNames("cleanup", req.Keyspace, req.Table, strings.Contains(args[0], ".")); err != nil {
					return err
				}
			}
			return runOp(cmd, admin, adminapi.OpCleanup, req, asJSON)
		},
	}
	opFlags(cmd, &admin, &asJSON)
	return cmd
}

func newImportCmd() *cobra.Command {
	var admin string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import KEYSPACE.TABLE DIR [--admin HOST:PORT]",
		Short: "Verify a directory of sstables and install copies into a node's table",
		Long: `Verify every sstable in DIR (a full, extended verify) and, only if all are clean, install
copies of them into the node's KEYSPACE.TABLE directory under fresh generations, like nodetool
import. DIR is read by the node, so it must be a path on the node's machine; it is left as is.
When the node does not have the table yet, DIR must be named <table>-<32 hex table id>.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ks, table, ok := strings.Cut(args[0], ".")
			if !ok || ks == "" || table == "" {
				return usagef("import: %q: want KEYSPACE.TABLE", args[0])
			}
			if err := checkNames("import", ks, table, true); err != nil {
				return err
			}
			dir, err := filepath.Abs(args[1])
			if err != nil {
				return err
			}
			return runOp(cmd, admin, adminapi.OpImport, adminapi.ImportRequest{Keyspace: ks, Table: table, Dir: dir}, asJSON)
		},
	}
	opFlags(cmd, &admin, &asJSON)
	return cmd
}

// adminGet is a GET through the admin client with the command's context.
func adminGet(ctx context.Context, admin, path string, out any) error {
	c, err := newAdminClient(admin)
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodGet, path, nil, out)
}

// checkNames makes a keyspace (and, when withTable, table) name outside Cassandra's rule a
// usage error, before anything is sent or created.
func checkNames(cmd, keyspace, table string, withTable bool) error {
	err := cqlname.Check("keyspace", keyspace)
	if err == nil && withTable {
		err = cqlname.Check("table", table)
	}
	if err != nil {
		return usagef("%s: %v", cmd, err)
	}
	return nil
}
