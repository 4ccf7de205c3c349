package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/sstable/token"
)

func newRepairCmd() *cobra.Command {
	var admin, ranges string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "repair KEYSPACE.TABLE [--ranges SPEC] [--admin HOST:PORT]",
		Short: "Compare a table with its other replicas by Merkle trees and stream the partitions that differ where they are needed",
		Long: `Repair KEYSPACE.TABLE on the node, like nodetool repair: for every other replica of the ranges
(default: every range the node replicates; --ranges "(l,r],(l,r]" narrows them), both nodes
build Merkle trees over the reconciled content of their partitions; for the leaves that differ
they compare per-partition digests, and each partition that differs is streamed only to the
replica whose copies do not already include the other's (a replica that missed a write receives
it; the one that had it receives nothing), as partial sstables copied without re-serialising
rows. Afterwards both replicas hold the union; duplicates reconcile on read and compaction.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ks, table, ok := strings.Cut(args[0], ".")
			if !ok || ks == "" || table == "" {
				return usagef("repair: %q: want KEYSPACE.TABLE", args[0])
			}
			if err := checkNames("repair", ks, table, true); err != nil {
				return err
			}
			if ranges != "" {
				if _, err := token.ParseRanges(token.Murmur3, ranges); err != nil {
					return usagef("repair: --ranges: %v", err)
				}
			}
			// runOp prints the final status as JSON into buf; the repair table is printed from it.
			out := cmd.OutOrStdout()
			var buf bytes.Buffer
			cmd.SetOut(&buf)
			err := runOp(cmd, admin, adminapi.OpRepair, adminapi.RepairRequest{Keyspace: ks, Table: table, Ranges: ranges}, true)
			cmd.SetOut(out)
			var st adminapi.OpStatus
			if buf.Len() == 0 || json.Unmarshal(buf.Bytes(), &st) != nil || asJSON {
				_, _ = out.Write(buf.Bytes())
				return err
			}
			printRepair(out, st)
			printOp(out, st)
			return err
		},
	}
	cmd.Flags().StringVar(&ranges, "ranges", "", `token ranges to repair, "(l,r],(l,r]" (default: every range the node replicates)`)
	opFlags(cmd, &admin, &asJSON)
	return cmd
}

// printRepair prints each peer's comparison.
func printRepair(w io.Writer, st adminapi.OpStatus) {
	if len(st.Repair) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PEER\tTABLE\tSTATE\tTREES\tPARTITIONS\tFETCHED\tSENT\tMISMATCHED LEAVES")
	for _, r := range st.Repair {
		mis := r.Mismatched
		if mis == "" {
			mis = "-"
		}
		fmt.Fprintf(tw, "%s\t%s.%s\t%s\t%d\t%d\t%s (%d partitions)\t%s (%d partitions)\t%s\n", r.Peer, r.Keyspace, r.Table,
			r.State, r.Trees, r.Partitions, formatBytes(r.BytesFetched), r.PartitionsFetched, formatBytes(r.BytesSent), r.PartitionsSent, mis)
	}
	tw.Flush()
}
